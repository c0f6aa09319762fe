"""The Features tab: what each layer holds — PCA feature maps, patch correspondence,
probes by depth, class token vs average pooling, layer-wise learning-rate decay.

Wiring only: every number, panel and figure comes from :mod:`vitviz.views.features`.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from ..views import features as v
from . import urlstate
from .common import endpoint, example_images, memo_view, user_errors
from .shared_image import ImageInput, default_image
from ..views.common import trained_default
from .serve.costs import Cost, cost, model_cost

TAB_ID, LABEL = "features", "Features"
TOUR_TITLE = "Features"
TOUR_TEXT = ("Each layer's tokens, coloured by their main directions and jointly over four photos; click a patch to "
             "find its look-alikes; linear probes measure, layer by layer, how much position, colour and texture "
             "the tokens hold (the caption says where each peaks for this model and photo).")

INTRO = (
    "Attention says where a token *looks*; the tokens themselves say what each layer *holds*. Pick a layer: "
    "the **PCA maps** colour every patch token by its main directions, jointly over four photos; **click a "
    "patch** to find the tokens most like it here and in another photo; the **probes** measure, layer by "
    "layer, how well position, colour and texture can be read back from the tokens."
)


# --------------------------------------------------------------------------------------
# Endpoints and handlers
# --------------------------------------------------------------------------------------


@cost(model_cost(1))
@user_errors
def feature_pca(image: str | None, model: str, layer: float, foreground: bool) -> tuple[np.ndarray, str]:
    """Endpoint ``feature_pca``: the patch tokens of one layer as colours (first three PCA components).

    Args:
        image: the photo (a file path or URL).
        model: a ViT, DeiT, DINO, MAE or Swin model name (``name:random`` for random weights).
        layer: 0 = patch + position embedding, 1..depth = after that block.
        foreground: colour only the foreground (split on the first component).

    Returns:
        The PCA maps of this image and three example photos (uint8 RGB) and a Markdown caption with the
        variance each component holds.
    """
    return v.pca_view(image, model, layer, bool(foreground))


@cost(model_cost(1))
@user_errors
def patch_similarity(image: str | None, model: str, layer: float, row: float, col: float, other: str,
                     other_image: str | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """Endpoint ``patch_similarity``: cosine maps of patch (row, col) in this image and in a second image:
    an example photo by name (``other``), or your own (``other_image``, which wins when given)."""
    return v.similarity_view(image, model, layer, row, col, other, other_image)


@cost(Cost.HEAVY)
@user_errors
def layer_probes(image: str | None, model: str) -> tuple[go.Figure, str, str]:
    """Endpoint ``layer_probes``: probe R^2 by layer for row, column, mean colour and edge energy
    -> (chart, Markdown table, caption stating the probe data and split)."""
    fig, rows, text = v.probe_view(image, model)
    return fig, v.probe_markdown(rows), text


@cost(Cost.HEAVY)
@user_errors
@memo_view()
def update_all(image: str | None, model: str, layer: float, foreground: bool, row: float, col: float,
               other: str, other_image: str | None = None) -> tuple:
    """Every view of the tab for the current controls."""
    pca, pca_text = v.pca_view(image, model, layer, bool(foreground))
    left, right, sim_text = v.similarity_view(image, model, layer, row, col, other, other_image)
    fig, rows, probe_text = v.probe_view(image, model)
    cos_fig, cls_top, gap_top, att, pool_text = v.pooling_view(image, model)
    shown = lambda value: gr.update(value=value, visible=value is not None)  # noqa: E731
    return (pca, pca_text, left, right, sim_text, fig, v.probe_markdown(rows), probe_text, shown(cos_fig),
            shown(cls_top), shown(gap_top), shown(att), pool_text)


@cost(model_cost(1))
@user_errors
def layer_views(image: str | None, model: str, layer: float, foreground: bool, row: float, col: float,
                other: str, other_image: str | None = None) -> tuple:
    """The views that depend on the layer: PCA maps and correspondence."""
    pca, pca_text = v.pca_view(image, model, layer, bool(foreground))
    left, right, sim_text = v.similarity_view(image, model, layer, row, col, other, other_image)
    return pca, pca_text, left, right, sim_text


@cost(Cost.VIEW)
@user_errors
def on_model(choice: str, layer: float | None) -> tuple:
    """New model -> its note and the layer slider's range (0 = embedding .. depth); keeps the layer if it fits."""
    depth = v.depth_of(choice)
    value = depth if layer is None else min(max(0, int(round(float(layer)))), depth)
    return v.model_note(choice), gr.update(maximum=depth, value=value, label=f"Layer (0 = {v.layer0_label_of(choice)})")


@cost(Cost.VIEW)
def on_load(choice: str, layer: float, request: gr.Request) -> tuple:
    """Page load: like :func:`on_model`, starting at the layer the URL names (``?layer=``), if any."""
    state = urlstate.parse_query(dict(request.query_params) if request is not None else {})
    return on_model(choice, state.layer if state.layer is not None else None)


@cost(model_cost(1))
@user_errors
def pick_patch(evt: gr.SelectData, image: str | None, model: str, layer: float) -> tuple[int, int]:
    """A click on the left similarity map -> the clicked patch's grid (row, col) at this layer."""
    return v.pick_patch(image, model, layer, evt.index[0], evt.index[1])


@cost(Cost.VIEW)
def llrd_chart() -> tuple[go.Figure, str]:
    """The layer-wise learning-rate decay chart and its explanation (private; no model)."""
    return v.llrd_view()


def build(demo: gr.Blocks) -> ImageInput:
    """Create the Features tab's components inside the caller's ``gr.Tab`` context.

    Args:
        demo: the enclosing app; its page load fills the views for the first example.

    Returns:
        The tab's image box and examples, which the app links to the shared image.
    """
    examples = example_images()
    choices = v.model_choices()
    default = trained_default(choices, v.DEFAULT_MODEL)
    others = v.example_choices()
    first = default_image()
    second = next((name for name, path in others if path != first), None)
    examples_box = None
    gr.Markdown(INTRO)
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            image = gr.Image(value=first, type="filepath", image_mode=None,
                             sources=["upload", "webcam", "clipboard"], label="Your image (drop, paste or webcam)",
                             height=220, elem_id="feat-input")
            if examples:
                examples_box = gr.Examples(examples=examples, inputs=image, label="Example photos")
            model = gr.Dropdown(choices=choices, value=default, label="Model", elem_id="feat-model")
            note = gr.Markdown(v.model_note(default), elem_id="feat-model-note")
        with gr.Column(scale=3):
            layer = gr.Slider(0, 8, value=8, step=1, label="Layer (0 = patch + position embedding)",
                              elem_id="feat-layer")
            foreground = gr.Checkbox(False, label="Foreground only (split on the first component, recolour)",
                                     elem_id="feat-foreground")
            kw: dict[str, Any] = dict(type="numpy", format="png", interactive=False, buttons=["download"],
                                      show_label=False)
            # the maps first, their reading after them: on the first screen at 1280x720 (issue 34)
            pca = gr.Image(label="PCA feature maps", elem_id="feat-pca", **kw)
            pca_text = gr.Markdown(elem_id="feat-pca-info")
            gr.Markdown("### Reading the PCA feature maps\n" + v.HELP_PCA)
            gr.Markdown("### Patch correspondence")
            gr.Markdown(v.HELP_SIMILARITY)
            with gr.Row(equal_height=True):
                other = gr.Dropdown(choices=[name for name, _ in others], value=second,
                                    label="Second image (an example)", elem_id="feat-other", scale=3)
                other_image = gr.Image(None, type="filepath", sources=["upload", "clipboard"], height=110,
                                       label="…or your own second photo", elem_id="feat-other-upload", scale=3)
                row = gr.Number(value=7, precision=0, minimum=0, label="row", elem_id="feat-row", min_width=70,
                                scale=1)
                col = gr.Number(value=7, precision=0, minimum=0, label="col", elem_id="feat-col", min_width=70,
                                scale=1)
            with gr.Row(equal_height=True):
                with gr.Column(scale=1, min_width=280):
                    gr.Markdown("**Click a patch**: its cosine similarity in this image")
                    left = gr.Image(label="similarity in this image", elem_id="feat-sim-same", height=v.VIEW_PX, **kw)
                with gr.Column(scale=1, min_width=280):
                    gr.Markdown("**The same token against the second image** (red box: best match)")
                    right = gr.Image(label="similarity in the second image", elem_id="feat-sim-other",
                                     height=v.VIEW_PX, **kw)
            sim_text = gr.Markdown(elem_id="feat-sim-info")
            gr.Markdown("### Probes by depth")
            gr.Markdown(v.HELP_PROBES)
            probe_plot = gr.Plot(label="Probe R² by layer", elem_id="feat-probes")
            probe_table = gr.Markdown(elem_id="feat-probe-table")
            probe_text = gr.Markdown(elem_id="feat-probe-info")
            gr.Markdown("### Class token vs average pooling")
            gr.Markdown(v.HELP_POOLING)
            cos_plot = gr.Plot(label="class token vs patch average", elem_id="feat-cls-gap")
            with gr.Row():
                cls_top = gr.Label(num_top_classes=5, label="Top-5 from the class token", elem_id="feat-cls-top5")
                gap_top = gr.Label(num_top_classes=5, label="Top-5 from the patch average (same head)",
                                   elem_id="feat-gap-top5")
            cls_att = gr.Image(label="class token attention vs uniform", elem_id="feat-cls-attention", **kw)
            pool_text = gr.Markdown(elem_id="feat-pool-info")
            gr.Markdown("### Layer-wise learning-rate decay")
            llrd_plot = gr.Plot(label="learning-rate multipliers", elem_id="feat-llrd")
            llrd_text = gr.Markdown(elem_id="feat-llrd-info")

    all_in = [image, model, layer, foreground, row, col, other, other_image]
    all_out = [pca, pca_text, left, right, sim_text, probe_plot, probe_table, probe_text, cos_plot, cls_top, gap_top,
               cls_att, pool_text]
    sim_in = [image, model, layer, row, col, other, other_image]
    sim_out = [left, right, sim_text]
    quick: dict[str, Any] = dict(api_visibility="private", trigger_mode="always_last", show_progress="minimal")

    endpoint(feature_pca, [image, model, layer, foreground], [pca, pca_text], api_name="feature_pca")
    endpoint(patch_similarity, sim_in, sim_out, api_name="patch_similarity")
    endpoint(layer_probes, [image, model], [probe_plot, probe_table, probe_text], api_name="layer_probes")

    demo.load(on_load, [model, layer], [note, layer], api_visibility="private").then(
        update_all, all_in, all_out, api_visibility="private").then(
        llrd_chart, None, [llrd_plot, llrd_text], api_visibility="private")
    model.change(on_model, [model, layer], [note, layer], **quick).then(update_all, all_in, all_out, **quick)
    image.change(update_all, all_in, all_out, **quick)
    layer.change(layer_views, all_in, [pca, pca_text, left, right, sim_text], **quick)
    layer.change(None, [layer], None, js=urlstate.LAYER_JS, queue=False, api_visibility="private")
    foreground.change(feature_pca, [image, model, layer, foreground], [pca, pca_text], **quick)
    other.change(patch_similarity, sim_in, sim_out, **quick)
    other_image.change(patch_similarity, sim_in, sim_out, **quick)
    gr.on([row.submit, col.submit], patch_similarity, sim_in, sim_out, **quick)
    left.select(pick_patch, [image, model, layer], [row, col], api_visibility="private").then(
        patch_similarity, sim_in, sim_out, **quick)
    return ImageInput(image, examples_box)
