"""The Heads tab: every head at once (the head atlas) and one head's query-key space.

Wiring only: figures and sentences come from :mod:`vitviz.views.heads`. Clicks on the
Plotly charts are read in the page (:data:`CLICK_JS`): a head opens the Attention tab's
query view at that layer and head (the Attention tab picks it up, see
:data:`vitviz.ui.attention_tab.GOTO_JS`); a query or key sends its token here.
"""

from __future__ import annotations

import json
from typing import Any

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from ..views import heads as hv
from ..views import norms as nv
from . import js
from .common import endpoint, example_images, memo_view, user_errors
from .shared_image import ImageInput, default_image
from ..views.common import trained_default
from .serve.costs import Cost, cost, model_cost

TAB_ID, LABEL = "heads", "Heads"
TOUR_TITLE = "Heads"
TOUR_TEXT = ("Every head of every layer at once, sorted by a stated rule into local, global, sink and self heads "
             "(the summary counts which ones this model has); then one head's queries and keys, with how well "
             "nearness tracks attention measured for that head.")

INTRO = (
    "The Attention tab shows one layer at a time. Here are **all the heads at once**: each head summarised by "
    "four numbers and sorted into a type, for this photo or averaged over the example photos; below, the "
    "**queries and keys** of one head, the vectors whose dot products make its attention."
)


@cost(model_cost(1))
@user_errors
def head_atlas(image: str | None, model: str, source: str) -> tuple[go.Figure, go.Figure, str]:
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


@cost(model_cost(1))
@user_errors
def qk_space(image: str | None, model: str, layer: float, head: float) -> tuple[go.Figure, str]:
    """Endpoint ``qk_space``: the queries and keys of one head (layer and head 1-based), PCA to 2-D, and a sentence."""
    return hv.qk_view(image, model, layer, head)


@cost(model_cost(1))
@user_errors
def qk_token(image: str | None, model: str, layer: float, head: float, click: str | None
             ) -> tuple[np.ndarray, str]:
    """A click on a query or key (``{"token", "kind"}`` from the page) -> its patch on the photo."""
    try:
        data = json.loads(click or "{}")
    except ValueError:
        data = {}
    return hv.token_view(image, model, layer, head, data.get("token"), data.get("kind", 0))


@cost(model_cost(1))
@user_errors
@memo_view()
def update_all(image: str | None, model: str, source: str, layer: float, head: float) -> tuple:
    """Every view of the tab: atlas (grid, scatter, text), query-key space (figure, text), centre patch's query."""
    grid, scatter, text = hv.atlas_view(image, model, source)
    qk, qk_text = hv.qk_view(image, model, layer, head)
    token, token_text = hv.token_view(image, model, layer, head)
    return grid, scatter, text, qk, qk_text, token, token_text


@cost(model_cost(1))
@user_errors
def qk_views(image: str | None, model: str, layer: float, head: float) -> tuple:
    """The query-key views for a new layer or head."""
    qk, qk_text = hv.qk_view(image, model, layer, head)
    return (qk, qk_text) + hv.token_view(image, model, layer, head)


@cost(Cost.VIEW)
@user_errors
def on_model(choice: str, layer: float, head: float) -> tuple:
    """New model -> the layer and head sliders' ranges (values kept when they fit)."""
    depth, heads = hv.head_range(choice)
    clamp = lambda v, n: min(max(1, int(round(float(v or 1)))), n)  # noqa: E731
    return gr.update(maximum=depth, value=clamp(layer, depth)), gr.update(maximum=heads, value=clamp(head, heads))


@cost(model_cost(1))
@user_errors
def token_norms(image: str | None, model: str, layer: float) -> tuple:
    """Endpoint ``token_norms``: one layer's token-norm map (outliers outlined), histogram, per-layer chart, text."""
    return nv.norms_view(image, model, layer)


@cost(Cost.VIEW)
@user_errors
def on_model_norms(choice: str, layer: float) -> Any:
    """New model -> the token-norm layer slider runs 0 (embedding) .. depth."""
    depth, _ = hv.head_range(choice)
    return gr.update(maximum=depth, value=min(max(0, int(round(float(layer or 0)))), depth))


#: Clicks on the tab's Plotly charts, read in the page (``vitviz.heads.clicks`` in ``vitviz/ui/js/page.js``).
#: A head (grid cell or scatter point) opens the Attention tab on it; a query or key sends
#: ``{"token", "kind"}`` in this component's value.
CLICK_JS = js.read("heads_clicks")


def build(demo: gr.Blocks) -> ImageInput:
    """Create the Heads tab's components inside the caller's ``gr.Tab`` context.

    Args:
        demo: the enclosing app; its page load (the tab's first showing) fills the views.

    Returns:
        The tab's image box and examples, which the app links to the shared image.
    """
    examples = example_images()
    choices = hv.model_choices()
    default = trained_default(choices, hv.DEFAULT_MODEL)
    examples_box = None
    gr.Markdown(INTRO, elem_classes=["vitviz-help"])
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            image = gr.Image(value=default_image(), type="filepath", image_mode=None,
                             sources=["upload", "webcam", "clipboard"], label="Your image (drop, paste or webcam)",
                             height=220, elem_id="heads-input")
            if examples:
                examples_box = gr.Examples(examples=examples, inputs=image, label="Example photos",
                                           elem_id="heads-examples")
            model = gr.Dropdown(choices=choices, value=default, label="Model", elem_id="heads-model")
            note = gr.Markdown(hv.model_note(default), elem_id="heads-model-note")
            source = gr.Radio(hv.SOURCES, value="image", label="Statistics of", elem_id="heads-source",
                              info="one photo, or the mean over the example photos (the model's own head types)")
        with gr.Column(scale=3):
            # the atlas first, its reading after it: on the first screen at 1280x720 (issue 34)
            info = gr.Markdown(elem_id="heads-info")
            with gr.Row(equal_height=True):
                grid = gr.Plot(label="heads by type", elem_id="heads-grid", show_label=False)
                scatter = gr.Plot(label="heads: distance and entropy", elem_id="heads-scatter", show_label=False)
            gr.Markdown("### Reading the head atlas\n" + hv.HELP_ATLAS)
            gr.Markdown(hv.SOURCES_TEXT)
            gr.Markdown("### Query–key space of one head")
            gr.Markdown(hv.HELP_QK)
            with gr.Row(equal_height=True):
                layer = gr.Slider(1, 8, value=1, step=1, label="Layer", elem_id="heads-layer")
                head = gr.Slider(1, 3, value=1, step=1, label="Head", elem_id="heads-head")
            with gr.Row(equal_height=True):
                with gr.Column(scale=3):
                    qk = gr.Plot(label="queries and keys", elem_id="heads-qk", show_label=False)
                with gr.Column(scale=2, min_width=280):
                    token = gr.Image(type="numpy", format="png", interactive=False, show_label=False,
                                     buttons=["download"], label="the clicked token", elem_id="heads-token",
                                     height=hv.VIEW_PX)
                    token_text = gr.Markdown(elem_id="heads-token-info")
            qk_text = gr.Markdown(elem_id="heads-qk-info")
            gr.Markdown("### Token norms: registers and high-norm tokens")
            gr.Markdown(nv.HELP)
            norm_layer = gr.Slider(0, 12, value=11, step=1, label="Layer (0 = embedding)", elem_id="heads-norm-layer")
            with gr.Row(equal_height=True):
                norm_map = gr.Image(type="numpy", format="png", interactive=False, show_label=False,
                                    buttons=["download"], label="token norms", elem_id="heads-norm-map", height=nv.VIEW_PX)
                with gr.Column():
                    norm_hist = gr.Plot(label="norm histogram", elem_id="heads-norm-hist", show_label=False)
                    norm_depth = gr.Plot(label="outliers by depth", elem_id="heads-norm-depth", show_label=False)
            norm_text = gr.Markdown(elem_id="heads-norm-info")
    clicks = gr.HTML("", html_template="<span></span>", js_on_load=CLICK_JS, elem_id="heads-click", padding=False)

    all_in = [image, model, source, layer, head]
    all_out = [grid, scatter, info, qk, qk_text, token, token_text]
    qk_in = [image, model, layer, head]
    quick: dict[str, Any] = dict(api_visibility="private", trigger_mode="always_last", show_progress="minimal")

    endpoint(head_atlas, [image, model, source], [grid, scatter, info], api_name="head_atlas")
    endpoint(qk_space, qk_in, [qk, qk_text], api_name="qk_space")
    norm_in, norm_out = [image, model, norm_layer], [norm_map, norm_hist, norm_depth, norm_text]
    endpoint(token_norms, norm_in, norm_out, api_name="token_norms")

    demo.load(on_model, [model, layer, head], [layer, head], api_visibility="private").then(
        update_all, all_in, all_out, api_visibility="private")
    model.change(hv.model_note, model, note, api_visibility="private", queue=False, trigger_mode="always_last")
    model.change(on_model, [model, layer, head], [layer, head], **quick).then(update_all, all_in, all_out, **quick)
    image.change(update_all, all_in, all_out, **quick)
    demo.load(on_model_norms, [model, norm_layer], norm_layer, api_visibility="private").then(
        token_norms, norm_in, norm_out, api_visibility="private")
    model.change(on_model_norms, [model, norm_layer], norm_layer, **quick).then(token_norms, norm_in, norm_out, **quick)
    image.change(token_norms, norm_in, norm_out, **quick)
    norm_layer.input(token_norms, norm_in, norm_out, **quick)
    source.change(head_atlas, [image, model, source], [grid, scatter, info], **quick)
    gr.on([layer.input, head.input], qk_views, qk_in, [qk, qk_text, token, token_text], **quick)
    clicks.change(qk_token, qk_in + [clicks], [token, token_text], **quick)
    return ImageInput(image, examples_box)
