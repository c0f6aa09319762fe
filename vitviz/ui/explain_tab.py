"""The Explain tab: four explanation maps of a classifier's decision side by side, and
deletion / insertion curves that say which of them is faithful for this image.

Every number, panel and figure comes from :mod:`vitviz.views.explain`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from ..explain.faithfulness import DEFAULT_STEPS
from ..models.costs import Cost, model_cost
from ..views import explain as v
from . import helptext
from .binder import Binder
from .common import handler, in_page, memo_view, picture, section
from .js import read as read_js
from .serve.pageconfig import choices_later
from .shared_image import image_box

TAB_ID, LABEL = "explain", "Explain"


@dataclass(frozen=True)
class Curves:
    """Deletion and insertion curves (Plotly), the area under each (rows), and their caption."""

    curves: go.Figure
    auc: list[list[Any]]
    curves_text: str


@dataclass(frozen=True)
class Explanation:
    """Endpoint ``explain``'s answer: the maps row, the curves, the AUC table, the caption."""

    maps: np.ndarray
    curves: go.Figure
    auc: list[list[Any]]
    curves_text: str


@dataclass(frozen=True)
class Maps:
    """The maps row, its caption, and the class picker (this image's top-5 first, then every class)."""

    maps: np.ndarray
    maps_text: str
    target: Any


@dataclass(frozen=True)
class ModelPicked:
    """A new classifier: its note, and the class back on the predicted one."""

    note: str
    target: Any


@handler(Cost.HEAVY)
def explain(image: str | None, model: str, target: str | None, method: str, removal: str, steps: float
            ) -> Explanation:
    """Endpoint ``explain``: (image, model, class, method, removal, steps) -> (maps, curves, AUC table, caption).

    ``target``: ``predicted`` (top-1), a class name of the model (ImageNet's for vit-base and deit-small-distilled,
    ``bird``, ``mammal``... for dinov2-small-lab8) or an index; ``method``: ``all`` or one of
    ``attention``, ``rollout``, ``grad_rollout``, ``gradcam``; ``removal``: ``drop`` or ``grey``.
    """
    return Explanation(*v.explain_view(image, model, target, method, removal, steps))


@handler(model_cost(1))
@memo_view()
def update_maps(image: str | None, model: str, target: str | None, method: str) -> Maps:
    """The maps row, its caption and the class picker (this image's top-5 first, then every class of the model).

    A target that names no class of the model (only the API could send one: the picker takes only its
    choices) explains the predicted class and puts the picker back on it, so no output is left in error.
    """
    target = v.page_class(target, model)
    panels, text = v.maps_view(image, model, target, method)
    _, e = v.explanation_for(image, model, target)
    return Maps(panels, text, gr.update(choices=v.class_choices(e), value=target, label=v.class_label(e)))


@handler(Cost.HEAVY)
@memo_view()
def update_curves(image: str | None, model: str, target: str | None, method: str, removal: str,
                  steps: float) -> Curves:
    """The curves, the AUC table and its caption."""
    return _curves(image, model, target, method, removal, steps)


@handler(Cost.HEAVY)
def first_curves(image: str | None, model: str, target: str | None, method: str, removal: str,
                 steps: float) -> Curves:
    """The page's quick first drawing of the curves: every other point (half the forward passes), or the full
    curves where they are cached already; :func:`update_curves` follows with the rest. Not memoised: the cached
    full curves are what a later visitor gets here."""
    return _curves(image, model, target, method, removal, steps, first_pass=True)


def _curves(image: str | None, model: str, target: str | None, method: str, removal: str, steps: float,
            first_pass: bool = False) -> Curves:
    curves, auc, text = v.curves_view(image, model, v.page_class(target, model), method, removal, steps, first_pass)
    return Curves(curves, auc, text)


def on_model(model: str) -> ModelPicked:
    """New model -> its note; the class goes back to the predicted one."""
    return ModelPicked(v.model_note(model), gr.update(value=v.PREDICTED))


def build(demo: gr.Blocks) -> Binder:
    """Create the Explain tab's components inside the caller's ``gr.Tab`` context."""
    ui = Binder()
    choices = v.model_choices()
    default = v.default_model(choices)
    gr.Markdown(helptext.read(TAB_ID, "intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            image_box(ui, TAB_ID, "explain", height=220, image_mode=None)
            ui.model = gr.Dropdown(choices=choices, value=default, label="Classifier", elem_id="explain-model")
        with gr.Column(scale=3):
            with gr.Row(equal_height=True):
                ui.target = gr.Dropdown(choices=v.class_choices(), value=v.PREDICTED, filterable=True,
                                        allow_custom_value=False, label=v.class_label(choice=default),
                                        elem_id="explain-class", scale=2)
                choices_later("explain-class")  # 27 KB of class names arrive with update_maps' first answer
                ui.method = gr.Radio(v.METHOD_CHOICES, value=v.ALL, label="Method", elem_id="explain-method",
                                     scale=3)
            # the model note (a random-weights warning) and the maps on the first screen at 1280x720
            ui.note = gr.Markdown(v.model_note(default), elem_id="explain-model-note")
            ui.maps = picture("explanation maps", "explain-maps", show_label=False)
            ui.maps_text = gr.Markdown(elem_id="explain-maps-info")
            gr.Markdown(v.HELP_METHODS)
            section("### Deletion and insertion", v.HELP_CURVES)
            with gr.Row(equal_height=True):
                ui.removal = gr.Radio(v.REMOVAL_CHOICES, value="drop", label="Remove a patch by",
                                      elem_id="explain-removal", scale=3)
                ui.steps = gr.Slider(2, v.MAX_STEPS, value=DEFAULT_STEPS, step=1, label="Steps per curve",
                                     elem_id="explain-steps", scale=1)
            ui.curves = gr.Plot(label="deletion and insertion curves", elem_id="explain-curves")
            ui.auc = gr.Dataframe(headers=v.TABLE_HEADERS, datatype=["str", "number", "number", "number"],
                                  interactive=False, label="Area under each curve", elem_id="explain-auc")
            ui.curves_text = gr.Markdown(elem_id="explain-curves-info")

    ui.endpoint(explain, api_name="explain")
    maps, first, curves = ui.bind(update_maps), ui.bind(first_curves), ui.bind(update_curves)
    # the curves in two events, a first pass on every other point and then the rest (so the tab's
    # first view comes within 3 s); between the two, other visitors' events run
    # the rest of the curves with a small progress mark, so the first pass stays in view (a full one would cover it)
    demo.load(**ui.bind(update_maps, quick=False)).then(**ui.bind(first_curves, quick=False)).then(
        **ui.bind(update_curves, quick=False, show_progress="minimal"))
    ui.model.input(**ui.bind(on_model, quick=False, queue=False)).then(**maps).then(**first).then(**curves)
    gr.on([ui.new_image.change, ui.target.input, ui.method.input], **maps).then(**first).then(**curves)
    gr.on([ui.removal.input, ui.steps.release], **first).then(**curves)
    # what a person types in the class box replaces the label shown, so it searches the classes
    in_page(ui.target.focus, None, read_js("select_on_focus", elem_id="explain-class"))
    return ui
