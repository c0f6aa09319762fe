"""The Heads tab: every head at once (the head atlas) and one head's query-key space.

Its views come from :mod:`vitviz.views.heads` and :mod:`vitviz.views.norms`. Clicks on the Plotly charts are
read in the page (:data:`CLICK_JS`): a head opens the Attention tab's query view at that layer and head
(:data:`vitviz.ui.attention_tab.GOTO_JS`), or, with *A click on a head* set so (:data:`CLICK_DOES`), the
Ablate tab with that head switched off (:data:`vitviz.ui.intervene_tab.GOTO_JS`); a query or key sends its
token here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gradio as gr

from ..views import heads as hv
from ..views import norms as nv
from ..views.common import trained_default
from ..views.heads import AtlasView, HeadsViews, QKView, QKViews, TokenView
from ..views.norms import NormsView
from . import helptext, js
from .binder import QUICK, Binder
from .common import fit_slider, handler, help_text, memo_view, picture, section, signal
from ..models.costs import Cost, model_cost
from ..views.native import native_cost
from .native_controls import native_controls
from .shared_image import image_box

TAB_ID, LABEL = "heads", "Heads"


@dataclass(frozen=True)
class Sliders:
    """The layer and head sliders of a model (values kept when they fit)."""

    layer: Any
    head: Any


@handler(model_cost(1))
def head_atlas(image: str | None, model: str, source: str) -> AtlasView:
    """Endpoint ``head_atlas``: every attention head of every layer, measured and typed.

    Args:
        image: the photo (a file path or URL).
        model: a ViT, DeiT, DINO or MAE model name (``name:random`` for random weights).
        source: ``image`` (this image) or ``examples`` (the mean over the example photos).

    Returns:
        The layer x head grid coloured by head type (Plotly), the mean-distance vs entropy scatter
        (Plotly), and a Markdown summary.
    """
    return hv.atlas_view(image, model, source)


@handler(model_cost(1))
def qk_space(image: str | None, model: str, layer: float, head: float) -> QKView:
    """Endpoint ``qk_space``: the queries and keys of one head (layer and head 1-based), PCA to 2-D, and a sentence."""
    return hv.qk_view(image, model, layer, head)


@handler(model_cost(1))
def qk_token(image: str | None, model: str, layer: float, head: float, clicks: str | None) -> TokenView:
    """A click on a query or key (``{"token", "kind"}`` from the page) -> its patch on the photo."""
    try:
        data = json.loads(clicks or "{}")
    except ValueError:
        data = {}
    return hv.token_view(image, model, layer, head, data.get("token"), data.get("kind", 0))


@handler(model_cost(1))
@memo_view()
def update_all(image: str | None, model: str, source: str, layer: float, head: float) -> HeadsViews:
    """Every view of the tab: atlas (grid, scatter, text), query-key space (figure, text), centre patch's query."""
    return HeadsViews(**vars(hv.atlas_view(image, model, source)), **vars(qk_views(image, model, layer, head)))


@handler(model_cost(1))
def qk_views(image: str | None, model: str, layer: float, head: float) -> QKViews:
    """The query-key views for a new layer or head."""
    return QKViews(**vars(hv.qk_view(image, model, layer, head)), **vars(hv.token_view(image, model, layer, head)))


@handler(Cost.VIEW)
def on_model(model: str, layer: float, head: float) -> Sliders:
    """New model -> the layer and head sliders' ranges (values kept when they fit)."""
    depth, heads = hv.head_range(model)
    return Sliders(fit_slider(layer, 1, depth), fit_slider(head, 1, heads))


@handler(native_cost(1, 3, 4))
def token_norms(image: str | None, model: str, layer: float, native: bool = False,
                side: str | None = None) -> NormsView:
    """Endpoint ``token_norms``: one layer's token-norm map (outliers outlined), histogram, per-layer chart, text
    (``layer``: the token-norm slider's, 0 = the embedding; ``native``: the photo at its own shape, ``side`` px
    on its longer side: 224, 336, 448, 518 or 644)."""
    return nv.norms_view(image, model, layer, native, side)


@handler(Cost.VIEW)
def on_model_norms(model: str, norm_layer: float) -> Any:
    """New model -> the token-norm layer slider runs 0 (embedding) .. depth."""
    return fit_slider(norm_layer, 0, hv.head_range(model)[0])


#: What a click on a head of the atlas does, (label, value): the page reads the value checked.
CLICK_DOES = [("shows its attention", "attention"), ("switches it off (Ablate tab)", "ablate")]
#: Clicks on the tab's Plotly charts, read in the page (``vitviz.heads.clicks`` in ``vitviz/ui/js/page.js``).
#: A head (grid cell or scatter point) opens the Attention tab on it (or switches it off in the Ablate tab:
#: :data:`CLICK_DOES`); a query or key sends
#: ``{"token", "kind"}`` in this component's value.
CLICK_JS = js.read("heads_clicks")


def build(demo: gr.Blocks) -> Binder:
    """Create the Heads tab's components inside the caller's ``gr.Tab`` context."""
    ui = Binder()
    choices = hv.model_choices()
    default = trained_default(choices, hv.DEFAULT_MODEL)
    help_text(helptext.read(TAB_ID, "intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            image_box(ui, TAB_ID, "heads", height=220, image_mode=None, examples_id="heads-examples")
            ui.model = gr.Dropdown(choices=choices, value=default, label="Model", elem_id="heads-model")
            ui.note = gr.Markdown(hv.model_note(default), elem_id="heads-model-note")
            ui.source = gr.Radio(hv.SOURCES, value="image", label="Statistics of", elem_id="heads-source",
                                 info="one photo, or the mean over the example photos (the model's own head types)")
            # read in the page only (vitviz.heads in vitviz/ui/js/page.js): no server event
            gr.Radio(CLICK_DOES, value="attention", label="A click on a head", elem_id="heads-click-does",
                     interactive=True)
        with gr.Column(scale=3):
            # the atlas first, its reading after it: on the first screen at 1280x720
            ui.info = gr.Markdown(elem_id="heads-info")
            with gr.Row(equal_height=True):
                ui.grid = gr.Plot(label="heads by type", elem_id="heads-grid", show_label=False)
                ui.scatter = gr.Plot(label="heads: distance and entropy", elem_id="heads-scatter", show_label=False)
            gr.Markdown("### Reading the head atlas\n" + hv.HELP_ATLAS)
            gr.Markdown(hv.SOURCES_TEXT)
            section("### Query–key space of one head", hv.HELP_QK)
            with gr.Row(equal_height=True):
                ui.layer = gr.Slider(1, 8, value=1, step=1, label="Layer", elem_id="heads-layer")
                ui.head = gr.Slider(1, 3, value=1, step=1, label="Head", elem_id="heads-head")
            with gr.Row(equal_height=True):
                with gr.Column(scale=3):
                    ui.qk = gr.Plot(label="queries and keys", elem_id="heads-qk", show_label=False)
                with gr.Column(scale=2, min_width=280):
                    ui.token = picture("the clicked token", "heads-token", show_label=False, height=hv.VIEW_PX)
                    ui.token_text = gr.Markdown(elem_id="heads-token-info")
            ui.qk_text = gr.Markdown(elem_id="heads-qk-info")
            section("### Token norms: registers and high-norm tokens", nv.HELP)
            with gr.Row(equal_height=True):
                ui.norm_layer = gr.Slider(0, 12, value=11, step=1, label="Layer (0 = embedding)",
                                          elem_id="heads-norm-layer", scale=3)
                with gr.Column(scale=2, min_width=260):
                    ui.norm_native, ui.norm_side = native_controls("heads-norm")
            with gr.Row(equal_height=True):
                ui.norm_map = picture("token norms", "heads-norm-map", show_label=False, height=nv.VIEW_PX)
                with gr.Column():
                    ui.norm_hist = gr.Plot(label="norm histogram", elem_id="heads-norm-hist", show_label=False)
                    ui.norm_depth = gr.Plot(label="outliers by depth", elem_id="heads-norm-depth", show_label=False)
            ui.norm_text = gr.Markdown(elem_id="heads-norm-info")
    ui.clicks = signal(CLICK_JS, "heads-click")

    ui.endpoint(head_atlas, api_name="head_atlas")
    ui.endpoint(qk_space, api_name="qk_space")
    norm_inputs = ["image", "model", "norm_layer", "norm_native", "norm_side"]
    norms = ui.wiring(token_norms, inputs=norm_inputs)
    ui.endpoint(token_norms, api_name="token_norms", inputs=norm_inputs)

    demo.load(**ui.bind(on_model, quick=False)).then(**ui.bind(update_all, quick=False))
    ui.model.change(**ui.bind(hv.model_note, inputs=["model"], outputs="note", quick=False, queue=False,
                              trigger_mode="always_last"))
    ui.model.change(**ui.bind(on_model)).then(**ui.bind(update_all))
    ui.new_image.change(**ui.bind(update_all))
    demo.load(**ui.bind(on_model_norms, outputs="norm_layer", quick=False)).then(**norms, api_visibility="private")
    ui.model.change(**ui.bind(on_model_norms, outputs="norm_layer")).then(**norms, **QUICK)
    gr.on([ui.new_image.change, ui.norm_layer.input, ui.norm_native.change, ui.norm_side.change], **norms, **QUICK)
    ui.source.change(**ui.bind(head_atlas))
    gr.on([ui.layer.input, ui.head.input], **ui.bind(qk_views))
    ui.clicks.change(**ui.bind(qk_token))
    return ui
