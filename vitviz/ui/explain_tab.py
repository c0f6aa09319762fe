"""The Explain tab: four explanation maps of a classifier's decision side by side, and
deletion / insertion curves that say which of them is faithful for this image.

Wiring only: every number, panel and figure comes from :mod:`vitviz.views.explain`.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from ..explain.faithfulness import DEFAULT_STEPS
from ..views import explain as v
from .common import endpoint, example_images, memo_view, user_errors
from .js import read as read_js
from .shared_image import ImageInput, default_image
from .serve.costs import Cost, cost, model_cost
from .serve.pageconfig import choices_later

TAB_ID, LABEL = "explain", "Explain"
TOUR_TITLE = "Explain"
TOUR_TEXT = ("Four explanations of one decision side by side, and deletion and insertion curves that test which "
             "one the model actually relies on.")

INTRO = (
    "*Which patches made the classifier say this?* Four methods answer, from attention alone to gradients. "
    "They often disagree, so the tab also **tests** them: remove the patches each map calls important and "
    "watch the class probability. Pick a class (default: the predicted one), a method, and how a patch is "
    "removed."
)


# --------------------------------------------------------------------------------------
# Endpoints and handlers
# --------------------------------------------------------------------------------------


@cost(Cost.HEAVY)
@user_errors
def explain(image: str | None, model: str, target: str | None, method: str, removal: str, steps: float
            ) -> tuple[np.ndarray, go.Figure, list[list[Any]], str]:
    """Endpoint ``explain``: (image, model, class, method, removal, steps) -> (maps, curves, AUC table, caption).

    ``target``: ``predicted`` (top-1), a class name of the model (ImageNet's for vit-base and deit-small-distilled,
    ``bird``, ``mammal``... for dinov2-small-lab8) or an index; ``method``: ``all`` or one of
    ``attention``, ``rollout``, ``grad_rollout``, ``gradcam``; ``removal``: ``drop`` or ``grey``.
    """
    return v.explain_view(image, model, target, method, removal, steps)


@cost(model_cost(1))
@user_errors
@memo_view()
def update_maps(image: str | None, model: str, target: str | None, method: str) -> tuple:
    """The maps row, its caption and the class picker (this image's top-5 first, then every class of the model).

    A target that names no class of the model (only the API could send one: the picker takes only its
    choices) explains the predicted class and puts the picker back on it, so no output is left in error.
    """
    target = v.page_class(target, model)
    panels, text = v.maps_view(image, model, target, method)
    _, e = v.explanation_for(image, model, target)
    return panels, text, gr.update(choices=v.class_choices(e), value=target, label=v.class_label(e))


@cost(Cost.HEAVY)
@user_errors
@memo_view()
def update_curves(image: str | None, model: str, target: str | None, method: str, removal: str,
                  steps: float) -> tuple:
    """The curves, the AUC table and its caption."""
    return v.curves_view(image, model, v.page_class(target, model), method, removal, steps)




def on_model(choice: str) -> tuple:
    """New model -> its note; the class goes back to the predicted one."""
    return v.model_note(choice), gr.update(value=v.PREDICTED)


def build(demo: gr.Blocks) -> ImageInput:
    """Create the Explain tab's components inside the caller's ``gr.Tab`` context.

    Args:
        demo: the enclosing app; its page load (the tab's first showing) fills the views.

    Returns:
        The tab's image box and examples, which the app links to the shared image.
    """
    examples = example_images()
    choices = v.model_choices()
    default = v.default_model(choices)
    examples_box = None
    gr.Markdown(INTRO)
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            image = gr.Image(value=default_image(), type="filepath", image_mode=None,
                             sources=["upload", "webcam", "clipboard"], label="Your image (drop, paste or webcam)",
                             height=220, elem_id="explain-input")
            if examples:
                examples_box = gr.Examples(examples=examples, inputs=image, label="Example photos")
            model = gr.Dropdown(choices=choices, value=default, label="Classifier", elem_id="explain-model")
        with gr.Column(scale=3):
            with gr.Row(equal_height=True):
                target = gr.Dropdown(choices=v.class_choices(), value=v.PREDICTED, filterable=True,
                                     allow_custom_value=False,
                                     label=v.class_label(choice=default),
                                     elem_id="explain-class", scale=2)
                choices_later("explain-class")  # 27 KB of class names arrive with update_maps' first answer
                method = gr.Radio(v.METHOD_CHOICES, value=v.ALL, label="Method", elem_id="explain-method",
                                  scale=3)
            # the model note (a random-weights warning) and the maps on the first screen at 1280x720 (issue 34)
            note = gr.Markdown(v.model_note(default), elem_id="explain-model-note")
            kw: dict[str, Any] = dict(type="numpy", format="png", interactive=False, buttons=["download"],
                                      show_label=False)
            maps = gr.Image(label="explanation maps", elem_id="explain-maps", **kw)
            maps_text = gr.Markdown(elem_id="explain-maps-info")
            gr.Markdown(v.HELP_METHODS)
            gr.Markdown("### Deletion and insertion")
            gr.Markdown(v.HELP_CURVES)
            with gr.Row(equal_height=True):
                removal = gr.Radio(v.REMOVAL_CHOICES, value="drop", label="Remove a patch by",
                                   elem_id="explain-removal", scale=3)
                steps = gr.Slider(2, v.MAX_STEPS, value=DEFAULT_STEPS, step=1, label="Steps per curve",
                                  elem_id="explain-steps", scale=1)
            curves = gr.Plot(label="deletion and insertion curves", elem_id="explain-curves")
            auc = gr.Dataframe(headers=v.TABLE_HEADERS, datatype=["str", "number", "number", "number"],
                               interactive=False, label="Area under each curve", elem_id="explain-auc")
            curves_text = gr.Markdown(elem_id="explain-curves-info")

    maps_in, maps_out = [image, model, target, method], [maps, maps_text, target]
    curves_in, curves_out = [image, model, target, method, removal, steps], [curves, auc, curves_text]
    quick: dict[str, Any] = dict(api_visibility="private", trigger_mode="always_last", show_progress="minimal")

    endpoint(explain, curves_in, [maps, curves, auc, curves_text], api_name="explain")

    demo.load(update_maps, maps_in, maps_out, api_visibility="private").then(
        update_curves, curves_in, curves_out, api_visibility="private")
    model.input(on_model, [model], [note, target], api_visibility="private", queue=False).then(
        update_maps, maps_in, maps_out, **quick).then(update_curves, curves_in, curves_out, **quick)
    gr.on([image.change, target.input, method.input], update_maps, maps_in, maps_out, **quick).then(
        update_curves, curves_in, curves_out, **quick)
    gr.on([removal.input, steps.release], update_curves, curves_in, curves_out, **quick)
    # what a person types in the class box replaces the label shown, so it searches the classes
    target.focus(None, None, None, js=read_js("select_on_focus", elem_id="explain-class"), queue=False,
                 api_visibility="private")
    return ImageInput(image, examples_box)
