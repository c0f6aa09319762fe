"""The MAE tab's *Check a checkpoint* section: the checkpoint doctor on the picked model, or on a path.

Wiring only: the report, panels and data come from :mod:`vitviz.views.doctor`. The path box exists only
where the host allows paths (not on a public host); the named endpoint ``/doctor`` takes a model name and,
where allowed, a path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from .. import settings
from ..views import doctor as dv
from .binder import Binder
from .common import handler, help_text, picture
from ..models.costs import Cost

INTRO = ("Is this MAE healthy? Its file, its reconstructions against simple baselines and mae-tiny, and what "
         "training left in its attention, each finding with its evidence and what to do (about half a minute).")


@dataclass(frozen=True)
class Report:
    """What a check fills (endpoint ``doctor``): the report, the panels of the same mask, the data."""

    doctor_report: Any
    doctor_panel: Any
    doctor_json: Any


@handler(Cost.HEAVY)
def check_checkpoint(model_name: str, doctor_path: str | None = None) -> Report:
    """Endpoint ``doctor``: (registry model name, optional checkpoint path where the host allows) -> report
    (Markdown), panels (image), report (JSON)."""
    v = dv.doctor_view(model_name, doctor_path)
    return Report(v.report, v.panel, v.data)


def build(ui: Binder) -> None:
    """The section's components, inside the MAE tab's main column (a closed accordion)."""
    with gr.Accordion("Check a checkpoint", open=False, elem_id="mae-doctor"):
        help_text(INTRO)
        with gr.Row():
            ui.doctor_path = gr.Textbox(label="Checkpoint path on this machine (empty: the picked model)",
                                        placeholder="/path/to/checkpoint-399.pth", elem_id="mae-doctor-path",
                                        visible=not settings.public(), scale=4)
            ui.doctor_button = gr.Button("Check the checkpoint", variant="primary", elem_id="mae-doctor-run", scale=1)
        # the picture carries its own titles (a label would cover the first one)
        ui.doctor_panel = picture("Same mask, four panels", "mae-doctor-panel", show_label=False, buttons=None)
        ui.doctor_report = gr.Markdown(elem_id="mae-doctor-report")
        with gr.Accordion("Report data (JSON)", open=False):
            ui.doctor_json = gr.JSON(elem_id="mae-doctor-json")


def wire(ui: Binder) -> None:
    """The button and the named endpoint ``/doctor`` (inside the tab's Blocks context)."""
    ui.doctor_button.click(**ui.bind(check_checkpoint, inputs=["model_name", "doctor_path"], quick=False,
                                     show_progress="full"))
    ui.endpoint(check_checkpoint, api_name="doctor", inputs=["model_name", "doctor_path"], api_visibility="public")
