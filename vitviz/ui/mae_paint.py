"""Painting the MAE tab's mask: a click or drag on the Original panel hides or shows patches.

Handlers only (the tab wires them, :mod:`vitviz.ui.mae_tab`); the stroke geometry is
:func:`vitviz.views.mae.paint_stroke`. While painting, the slider, seed and pattern are off
and the reconstruction follows the painted mask exactly.
"""

from __future__ import annotations

import json

import gradio as gr
import numpy as np

from ..core.masking import make_mask
from ..mae.sweep import stop_of
from ..models.loading import load_model
from ..views import mae as mae_view
from .common import as_seed, require_image, user_errors
from .serve.costs import cost, model_cost

HELP_PAINT = (
    "**Paint the mask**: click or drag across the *Original* panel to hide patches (starting on a hidden "
    "patch shows them again); the reconstruction follows your mask exactly, the slider is off while you "
    "paint, and the page's address keeps the mask so a shared link shows the same picture."
)


def _stop_mask(model_name: str, ratio: float, seed: float, pattern: str) -> np.ndarray:
    """The mask of the slider stop on screen (the page may have shown it without a server call)."""
    model = load_model(model_name)
    return make_mask(model.module.config.grid, stop_of(ratio), as_seed(seed), pattern).numpy()


@cost(model_cost(3))
@user_errors
def paint_stroke(stroke: str | None, mask: list | None, image: str | None, model_name: str, ratio: float,
                 seed: float, pattern: str, paint: bool) -> tuple:
    """One click or drag on the Original panel (points sent by :data:`vitviz.ui.urlstate.PAINT_JS`) -> the
    painted mask; paint mode on.

    Outside paint mode the mask on screen is the slider stop's (the page may have shown it
    without a server call, see :mod:`vitviz.ui.scrub`), so painting starts from that mask.
    """
    require_image(image)
    try:
        points = json.loads(stroke or "{}").get("points", [])
    except (ValueError, AttributeError):
        points = []
    if not paint or mask is None:
        mask = _stop_mask(model_name, ratio, seed, pattern)
    return mae_view.paint_stroke(np.asarray(mask, dtype=bool), points).tolist(), True


@cost(model_cost(3))
@user_errors
def start_paint(paint: bool, mask: list | None, image: str | None, model_name: str, ratio: float, seed: float,
                pattern: str) -> list | None:
    """The user ticked "Paint the mask": painting starts from the slider stop on screen."""
    if not paint or image is None:
        return mask
    return _stop_mask(model_name, ratio, seed, pattern).tolist()


def paint_controls(paint: bool, mask: list | None) -> tuple:
    """Slider, seed and pattern while painting: off, and the slider says what is painted."""
    if paint and mask is not None:
        return (gr.update(interactive=False, label=mae_view.painted_label(np.asarray(mask, dtype=bool))),
                gr.update(interactive=False), gr.update(interactive=False))
    return gr.update(interactive=True, label="Masking ratio"), gr.update(interactive=True), gr.update(interactive=True)


def painted_controls(paint: bool, mask: list | None) -> tuple:
    """:func:`paint_controls` after a new mask, only while painting (otherwise nothing changes)."""
    if not paint:
        return gr.skip(), gr.skip(), gr.skip()
    return paint_controls(paint, mask)

