"""The Features tab: what each layer holds — PCA feature maps, patch correspondence,
probes by depth, class token vs average pooling, layer-wise learning-rate decay.

Every number, panel and figure comes from :mod:`vitviz.views.features`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from ..assets import default_example
from ..views import features as v
from ..views.common import trained_default
from ..views.urlstate import from_request
from . import helptext, urlstate
from .binder import Binder
from .common import fit_slider, handler, in_page, memo_view, picture, section, shown_if
from .native_controls import native_controls, on_native
from ..models.costs import Cost, cost
from ..views.native import native_cost
from .shared_image import image_box

TAB_ID, LABEL = "features", "Features"


@dataclass(frozen=True)
class Pca:
    """Endpoint ``feature_pca``'s answer: the PCA maps (uint8 RGB) and their caption."""

    pca: np.ndarray
    pca_text: str


@dataclass(frozen=True)
class Similarity:
    """Endpoint ``patch_similarity``'s answer: the maps in this image and in the second one, and words."""

    left: np.ndarray
    right: np.ndarray
    sim_text: str


@dataclass(frozen=True)
class Probes:
    """Endpoint ``layer_probes``'s answer: probe R^2 by layer (chart), as a Markdown table, and a caption."""

    probe_plot: go.Figure
    probe_table: str
    probe_text: str


@dataclass(frozen=True)
class LayerViews(Pca, Similarity):
    """The views that depend on the layer."""


@dataclass(frozen=True)
class FeatureViews(LayerViews, Probes):
    """Every view of the tab for the controls (the pooling views only where the model has a class token)."""

    cos_plot: Any
    cls_top: Any
    gap_top: Any
    cls_att: Any
    pool_text: str


@dataclass(frozen=True)
class ModelControls:
    """A model's note and its layer slider (0 = embedding .. depth)."""

    note: str
    layer: Any


@dataclass(frozen=True)
class Picked:
    row: int
    col: int


@dataclass(frozen=True)
class Llrd:
    llrd_plot: go.Figure
    llrd_text: str


@handler(native_cost(1, 4, 5))
def feature_pca(image: str | None, model: str, layer: float, foreground: bool, native: bool = False,
                side: str | None = None) -> Pca:
    """Endpoint ``feature_pca``: the patch tokens of one layer as colours (first three PCA components).

    Args:
        image: the photo (a file path or URL).
        model: a ViT, DeiT, DINO, MAE or Swin model name (``name:random`` for random weights).
        layer: 0 = patch + position embedding, 1..depth = after that block.
        foreground: colour only the foreground (split on the first component).
        native: the photo at its own shape, uncropped (DINOv2, ViT, DeiT, DINO, MAE); PCA fitted on it alone.
        side: its longer side in pixels (224, 336, 448, 518 or 644; a public host allows less).

    Returns:
        The PCA maps of this image and three example photos (or of the photo at its own shape), uint8 RGB,
        and a Markdown caption with the variance each component holds.
    """
    return Pca(*v.pca_view(image, model, layer, bool(foreground), bool(native), side))


@handler(native_cost(1, 7, 8))
def patch_similarity(image: str | None, model: str, layer: float, row: float, col: float, other: str,
                     other_image: str | None = None, native: bool = False, side: str | None = None) -> Similarity:
    """Endpoint ``patch_similarity``: cosine maps of patch (row, col) in this image and in a second image:
    an example photo by name (``other``), or your own (``other_image``, which wins when given); with
    ``native``, both photos at their own shape, ``side`` px on the longer side."""
    return Similarity(*v.similarity_view(image, model, layer, row, col, other, other_image, bool(native), side))


@handler(Cost.HEAVY)
def layer_probes(image: str | None, model: str) -> Probes:
    """Endpoint ``layer_probes``: probe R^2 by layer for row, column, mean colour and edge energy
    -> (chart, Markdown table, caption stating the probe data and split)."""
    fig, rows, text = v.probe_view(image, model)
    return Probes(fig, v.probe_markdown(rows), text)


@handler(Cost.HEAVY)
@memo_view()
def update_all(image: str | None, model: str, layer: float, foreground: bool, row: float, col: float,
               other: str, other_image: str | None = None, native: bool = False,
               side: str | None = None) -> FeatureViews:
    """Every view of the tab for the current controls."""
    cos_fig, cls_top, gap_top, att, pool_text = v.pooling_view(image, model)
    return FeatureViews(**vars(layer_views(image, model, layer, foreground, row, col, other, other_image, native,
                                           side)),
                        **vars(layer_probes(image, model)), cos_plot=shown_if(cos_fig), cls_top=shown_if(cls_top),
                        gap_top=shown_if(gap_top), cls_att=shown_if(att), pool_text=pool_text)


@handler(native_cost(1, 8, 9))
def layer_views(image: str | None, model: str, layer: float, foreground: bool, row: float, col: float,
                other: str, other_image: str | None = None, native: bool = False,
                side: str | None = None) -> LayerViews:
    """The views that depend on the layer: PCA maps and correspondence."""
    return LayerViews(**vars(feature_pca(image, model, layer, foreground, native, side)),
                      **vars(patch_similarity(image, model, layer, row, col, other, other_image, native, side)))


@handler(Cost.VIEW)
def on_model(model: str, layer: float | None) -> ModelControls:
    """New model -> its note and the layer slider's range (0 = embedding .. depth); keeps the layer if it fits."""
    depth = v.depth_of(model)
    return ModelControls(v.model_note(model),
                         fit_slider(layer, 0, depth, depth, label=f"Layer (0 = {v.layer0_label_of(model)})"))


@cost(Cost.VIEW)
def on_load(model: str, layer: float, request: gr.Request) -> ModelControls:
    """Page load: like :func:`on_model`, starting at the layer the URL names (``?layer=``), if any."""
    return on_model(model, from_request(request).layer)


@handler(native_cost(1, 4, 5))
def pick_patch(evt: gr.SelectData, image: str | None, model: str, layer: float, native: bool = False,
               side: str | None = None) -> Picked:
    """A click on the left similarity map -> the clicked patch's grid (row, col) at this layer."""
    return Picked(*v.pick_patch(image, model, layer, evt.index[0], evt.index[1], native, side))


@cost(Cost.VIEW)
def llrd_chart() -> Llrd:
    """The layer-wise learning-rate decay chart and its explanation (private; no model)."""
    return Llrd(*v.llrd_view())


def build(demo: gr.Blocks) -> Binder:
    """Create the Features tab's components inside the caller's ``gr.Tab`` context."""
    ui = Binder()
    choices = v.model_choices()
    default = trained_default(choices, v.DEFAULT_MODEL)
    others = v.example_choices()
    second = next((name for name, path in others if path != default_example()), None)
    gr.Markdown(helptext.read(TAB_ID, "intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            image_box(ui, TAB_ID, "feat", height=220, image_mode=None)
            ui.model = gr.Dropdown(choices=choices, value=default, label="Model", elem_id="feat-model")
            ui.note = gr.Markdown(v.model_note(default), elem_id="feat-model-note")
            ui.native, ui.side = native_controls("feat")
            ui.native_cost = gr.Markdown(elem_id="feat-native-cost")
        with gr.Column(scale=3):
            ui.layer = gr.Slider(0, 8, value=8, step=1, label="Layer (0 = patch + position embedding)",
                                 elem_id="feat-layer")
            ui.foreground = gr.Checkbox(False, label="Foreground only (split on the first component, recolour)",
                                        elem_id="feat-foreground")
            # the maps first, their reading after them: on the first screen at 1280x720
            ui.pca = picture("PCA feature maps", "feat-pca", show_label=False)
            ui.pca_text = gr.Markdown(elem_id="feat-pca-info")
            gr.Markdown("### Reading the PCA feature maps\n" + v.HELP_PCA)
            section("### Patch correspondence", v.HELP_SIMILARITY)
            with gr.Row(equal_height=True):
                ui.other = gr.Dropdown(choices=[name for name, _ in others], value=second,
                                       label="Second image (an example)", elem_id="feat-other", scale=3)
                ui.other_image = gr.Image(None, type="filepath", sources=["upload", "clipboard"], height=110,
                                          label="…or your own second photo", elem_id="feat-other-upload", scale=3)
                ui.row = gr.Number(value=7, precision=0, minimum=0, label="row", elem_id="feat-row", min_width=70,
                                   scale=1)
                ui.col = gr.Number(value=7, precision=0, minimum=0, label="col", elem_id="feat-col", min_width=70,
                                   scale=1)
            with gr.Row(equal_height=True):
                with gr.Column(scale=1, min_width=280):
                    gr.Markdown("**Click a patch**: its cosine similarity in this image")
                    ui.left = picture("similarity in this image", "feat-sim-same", height=v.VIEW_PX,
                                      show_label=False)
                with gr.Column(scale=1, min_width=280):
                    gr.Markdown("**The same token against the second image** (red box: best match)")
                    ui.right = picture("similarity in the second image", "feat-sim-other", height=v.VIEW_PX,
                                       show_label=False)
            ui.sim_text = gr.Markdown(elem_id="feat-sim-info")
            section("### Probes by depth", v.HELP_PROBES)
            ui.probe_plot = gr.Plot(label="Probe R² by layer", elem_id="feat-probes")
            ui.probe_table = gr.Markdown(elem_id="feat-probe-table")
            ui.probe_text = gr.Markdown(elem_id="feat-probe-info")
            section("### Class token vs average pooling", v.HELP_POOLING)
            ui.cos_plot = gr.Plot(label="class token vs patch average", elem_id="feat-cls-gap")
            with gr.Row():
                ui.cls_top = gr.Label(num_top_classes=5, label="Top-5 from the class token",
                                      elem_id="feat-cls-top5")
                ui.gap_top = gr.Label(num_top_classes=5, label="Top-5 from the patch average (same head)",
                                      elem_id="feat-gap-top5")
            ui.cls_att = picture("class token attention vs uniform", "feat-cls-attention", show_label=False)
            ui.pool_text = gr.Markdown(elem_id="feat-pool-info")
            gr.Markdown("### Layer-wise learning-rate decay")
            ui.llrd_plot = gr.Plot(label="learning-rate multipliers", elem_id="feat-llrd")
            ui.llrd_text = gr.Markdown(elem_id="feat-llrd-info")

    ui.endpoint(feature_pca, api_name="feature_pca")
    ui.endpoint(patch_similarity, api_name="patch_similarity")
    ui.endpoint(layer_probes, api_name="layer_probes")

    similarity, everything = ui.bind(patch_similarity), ui.bind(update_all)
    demo.load(**ui.bind(on_load, quick=False)).then(**ui.bind(update_all, quick=False)).then(
        **ui.bind(llrd_chart, quick=False))
    ui.model.change(**ui.bind(on_model)).then(**everything)
    ui.layer.change(**ui.bind(layer_views))
    in_page(ui.layer.change, [ui.layer], urlstate.LAYER_JS)
    ui.foreground.change(**ui.bind(feature_pca))
    # One chain for a new photo and a new shape: both views run as one always-last event, so a slow square view
    # of a new photo can never land after (and over) the own-shape view asked for while it ran.
    gr.on([ui.new_image.change, ui.native.change, ui.side.change], **ui.bind(on_native)).then(**everything)
    ui.model.change(**ui.bind(on_native))
    gr.on([ui.other.change, ui.other_image.change, ui.row.submit, ui.col.submit], **similarity)
    ui.left.select(**ui.bind(pick_patch, quick=False)).then(**similarity)
    return ui
