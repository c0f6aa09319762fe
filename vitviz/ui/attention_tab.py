"""The Attention tab: click a patch and see every head; class-token maps; rollout; attention distance.

Its views come from :mod:`vitviz.views.attention` (captured once per image, model, mask and part by
:mod:`vitviz.explain`, then looked up).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import gradio as gr
import plotly.graph_objects as go

from ..core.masking import MAX_RATIO
from ..explain.rollout import HEAD_FUSIONS
from ..explain.attention import PARTS
from ..views import attention as av
from ..views import attention_drawn as ad
from ..views import heads as hv
from ..views.attention import (DEFAULT_MODEL, MASS, QUERY_CHOICES, VIEW_PX, AttentionViews, ClassView, ImageViews,
                               QueryView, RolloutView, model_choices, model_note)
from ..views.common import trained_default
from ..views.urlstate import from_request
from . import helptext, js, urlstate
from .binder import Binder
from .common import handler, help_text, in_page, memo_view, picture, section, shown_if, signal
from .shared_image import image_box
from .native_controls import native_controls, on_native
from ..models.costs import Cost, cost, model_cost
from ..views.native import native_cost

TAB_ID, LABEL = "attention", "Attention"


@dataclass(frozen=True)
class Controls:
    """Everything the tab's views depend on (one field per control, named as the tab's component)."""

    image: str | None
    model: str
    part: str
    mask_ratio: float
    seed: float
    layer: float
    query: str
    row: float
    col: float
    mass: bool
    head_fusion: str
    discard_ratio: float
    head: float = 0  # 1-based; 0: the mean of heads
    native: bool = False  # the photo at its own shape
    side: str | None = None  # its longer side in pixels


@dataclass(frozen=True)
class ModelControls:
    """The controls that apply to a model: its part (MAE only), the layer range, the query tokens it has."""

    part: Any
    mae_box: Any
    layer: Any
    query: Any
    depth: int


@dataclass(frozen=True)
class LayerRange:
    layer: Any
    depth: int


@dataclass(frozen=True)
class Picked:
    """A clicked patch: the query becomes it."""

    row: int
    col: int
    query: str


@dataclass(frozen=True)
class Goto:
    """A head clicked in the Heads tab, as this tab's controls."""

    model: Any
    part: str
    mask_ratio: float
    layer: Any
    head: float


@handler(native_cost(1, 9, 10))
def attention_query(image: str | None, model: str, part: str, mask_ratio: float, seed: float, layer: float,
                    query: str, row: float, col: float, native: bool = False, side: str | None = None) -> QueryView:
    """Endpoint ``attention_query``: one token's attention in one layer (1-based) -> overlay, per-head grid, text.

    ``query`` is ``patch`` (at grid ``row``, ``col``), ``cls`` or ``dist``. ``part``,
    ``mask_ratio`` and ``seed`` apply to MAE models (encoder over the visible patches). ``native``: the
    photo at its own shape, uncropped, ``side`` px on its longer side (DINOv2, ViT, DeiT, DINO, MAE's encoder).
    """
    return ad.drawn("query", image, model, part, mask_ratio, seed, native, side, layer, query, row, col)


@handler(native_cost(1, 7, 8))
def rollout(image: str | None, model: str, part: str, mask_ratio: float, seed: float, head_fusion: str,
            discard_ratio: float, native: bool = False, side: str | None = None) -> RolloutView:
    """Endpoint ``rollout``: the class token's attention rollout (Abnar & Zuidema) as an overlay.

    Args:
        image: the photo (a file path or URL).
        model: a ViT, DeiT, DINO or MAE model name (``name:random`` for random weights).
        part: ``encoder`` (or ``decoder`` for an MAE).
        mask_ratio: share of patches hidden from an MAE encoder (0 for other models).
        seed: seed of the MAE mask.
        head_fusion: how heads are fused per layer: ``mean``, ``max`` or ``min``.
        discard_ratio: share of the weakest attentions dropped per layer, 0 to 0.99.
        native: the photo at its own shape, uncropped (DINOv2, ViT, DeiT, DINO, MAE's encoder).
        side: its longer side in pixels (224, 336, 448, 518 or 644; a public host allows less).

    Returns:
        The overlay (uint8 RGB) and a Markdown description of where the rollout is strongest.
    """
    return ad.drawn("rollout", image, model, part, mask_ratio, seed, native, side, head_fusion, discard_ratio)


@handler(native_cost(1, 5, 6))
def attention_distance(image: str | None, model: str, part: str, mask_ratio: float, seed: float,
                       native: bool = False, side: str | None = None) -> go.Figure:
    """Endpoint ``attention_distance``: mean attention distance per head vs layer (Plotly)."""
    return ad.drawn("distance", image, model, part, mask_ratio, seed, native, side)


@handler(native_cost(1, 10, 11))
def head_query(image: str | None, model: str, part: str, mask_ratio: float, seed: float, layer: float, query: str,
               row: float, col: float, head: float, native: bool = False, side: str | None = None) -> QueryView:
    """The query view with one head (1-based; 0 = mean of heads) on the left: the tab's own events."""
    return ad.drawn("query", image, model, part, mask_ratio, seed, native, side, layer, query, row, col, head)


@handler(native_cost(1, 13, 14))
@memo_view()
def update_all(c: Controls) -> AttentionViews:
    """Every view for the current controls (one capture, then lookups); the top-5 box only with a classifier."""
    v = ad.all_views(c.image, c.model, c.part, c.mask_ratio, c.seed, c.layer, c.query, c.row, c.col, c.mass,
                     c.head_fusion, c.discard_ratio, c.head, c.native, c.side)
    return replace(v, top5=shown_if(v.top5))


@handler(Cost.VIEW)
def on_model(model: str, layer: float, part: str, query: str | None = None) -> ModelControls:
    """New model -> the controls that apply to it (part, mask, layer range, query choices).

    The model note is not among the outputs: it has its own listener (:func:`model_note`, registry
    text that never fails), so a model that cannot load leaves no stale "Error" above the note.

    A distillation-token query falls back to the class token on a model without one.
    """
    c = av.model_controls(model, layer, part, query)
    return ModelControls(gr.update(visible=c["is_mae"], value=c["part"]), gr.update(visible=c["is_mae"]),
                         gr.update(maximum=c["depth"], value=c["layer"]),
                         gr.update(choices=c["query_choices"], value=c["query"]), c["depth"])


@dataclass(frozen=True)
class FirstView(QueryView, ModelControls):
    """The first showing's controls, the head to start on, and its query view (the rest follows:
    :func:`image_views`)."""

    head: float


@cost(model_cost(0))
def on_load(model: str, layer: float, part: str, query: str | None, head: float, image: str | None,
            mask_ratio: float, seed: float, row: float, col: float, request: gr.Request) -> FirstView:
    """The tab's first showing: like :func:`on_model`, starting at the layer the URL names (``?layer=``), if any,
    and at ``head``; and the query view of those controls, so that the view at the top of the tab comes in the
    same answer (the rest follows in :func:`image_views`). A head clicked in the Heads tab before this tab was
    shown arrives here as ``layer``, ``part`` and ``head`` (:data:`FIRST_JS`), so the first view is that head's.

    A query view that fails (no image, say) leaves those outputs alone: :func:`image_views`, next in the chain,
    reads the same maps and reports the error.
    """
    state = from_request(request)
    controls = on_model(model, state.layer if state.layer else layer, part, query)
    view: dict[str, Any] = dict(overlay=gr.skip(), heads=gr.skip(), query_info=gr.skip())
    try:
        shown, q = ad.first_query_view(image, model, controls.part["value"], mask_ratio, seed,
                                       controls.layer["value"], controls.query["value"], row, col, head)
    except ValueError:  # a user error (no image, an unreadable one): image_views, next in the chain, says it
        pass
    else:
        view = vars(shown)
        controls = replace(controls, query={**controls.query, "value": q})
    return FirstView(**vars(controls), head=head, **view)


@handler(native_cost(1, 8, 9))
@memo_view()
def image_views(image: str | None, model: str, part: str, mask_ratio: float, seed: float, mass: bool,
                head_fusion: str, discard_ratio: float, native: bool = False, side: str | None = None) -> ImageViews:
    """The views of :func:`update_all` that do not depend on the query (after :func:`on_load`'s query view)."""
    v = ad.image_views(image, model, part, mask_ratio, seed, mass, head_fusion, discard_ratio, native, side)
    return replace(v, top5=shown_if(v.top5))


@handler(Cost.VIEW)
def on_part(model: str, part: str, layer: float) -> LayerRange:
    """Encoder/decoder switch (MAE) -> the layer range of that part."""
    depth = av.part_depth(model, part)
    return LayerRange(gr.update(maximum=depth, value=av.layer_value(layer, depth)), depth)


@handler(native_cost(1, 5, 6))
def pick_patch(evt: gr.SelectData, image: str | None, model: str, part: str, mask_ratio: float,
               seed: float, native: bool = False, side: str | None = None) -> Picked:
    """A click on the query overlay -> the clicked patch's grid (row, col); the query becomes that patch."""
    r, c = ad.patch_at_click(image, model, part, mask_ratio, seed, evt.index[0], evt.index[1], native, side)
    return Picked(r, c, "patch")


@handler(native_cost(1, 6, 7))
def class_only(image: str | None, model: str, part: str, mask_ratio: float, seed: float, mass: bool,
               native: bool = False, side: str | None = None) -> ClassView:
    """The class-token view alone (the DINO checkbox)."""
    return ad.drawn("class", image, model, part, mask_ratio, seed, native, side, bool(mass))


@handler(Cost.VIEW)
def on_goto(goto: str | None, model: str) -> Goto:
    """A head clicked in the Heads tab (``{"model", "layer", "head"}``) -> this tab's model, layer and head,
    on the encoder without a mask (what the head atlas shows)."""
    target, layer, head = hv.parse_goto(goto)
    new = target or model
    depth, heads = hv.head_range(new)
    if layer > depth or head > heads:
        raise ValueError(f"{new} has {depth} layers of {heads} heads; there is no layer {layer}, head {head}")
    return Goto(gr.update(value=new) if new != model else gr.update(), "encoder", 0.0,
                gr.update(maximum=depth, value=layer), head)


def as_patch() -> str:
    """The query becomes the patch at (row, col)."""
    return "patch"


#: A head clicked in the Heads tab (``vitviz.attention.goto`` in ``vitviz/ui/js/page.js``): once this tab
#: shows its query view, the target goes into this component's value, which fires its change. (Arrow keys
#: and [ ] step through the layers: the page module's keyboard presses the prev / next buttons.)
GOTO_JS = js.read("attention_goto")
#: The first view's inputs: a head clicked in the Heads tab before this tab was shown (``vitviz.attention.first``).
FIRST_JS = js.read("attention_first")


def build(demo: gr.Blocks) -> Binder:
    """Create the Attention tab's components inside the caller's ``gr.Tab`` context."""
    ui = Binder()
    choices = model_choices()
    default = trained_default(choices, DEFAULT_MODEL)
    ui.depth = gr.State(8)
    help_text(helptext.read(TAB_ID, "intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            image_box(ui, TAB_ID, "attn", height=240, examples_id="attn-examples")
            ui.model = gr.Dropdown(choices=choices, value=default, label="Model", elem_id="attn-model")
            ui.note = gr.Markdown(model_note(default), elem_id="attn-model-note")
            ui.native, ui.side = native_controls("attn")
            ui.native_cost = gr.Markdown(elem_id="attn-native-cost")
            with gr.Group(visible=True) as ui.mae_box:
                ui.part = gr.Radio(list(PARTS), value="encoder", label="MAE part", elem_id="attn-part",
                                   info="encoder: visible patches only; decoder: every patch, mask tokens where hidden")
                ui.mask_ratio = gr.Slider(0.0, MAX_RATIO, value=0.0, step=0.05, label="Masking ratio (MAE)",
                                          elem_id="attn-ratio")
                ui.seed = gr.Number(value=0, precision=0, minimum=0, label="Mask seed", elem_id="attn-seed")
            ui.top5 = gr.Label(num_top_classes=5, label="Top-5 ImageNet labels", elem_id="attn-top5")
            ui.top5_note = gr.Markdown(elem_id="attn-top5-note")
        with gr.Column(scale=3):
            # The query view: the layer, then the maps (on the first screen at 1280x720), then the query.
            with gr.Row(equal_height=True):
                prev = gr.Button("◀ previous layer", elem_id="attn-prev", size="sm", scale=1)
                ui.layer = gr.Slider(1, 8, value=1, step=1, label="Layer", elem_id="attn-layer", scale=4)
                nxt = gr.Button("next layer ▶", elem_id="attn-next", size="sm", scale=1)
            ui.goto = signal(GOTO_JS, "attn-goto")
            with gr.Row(equal_height=True):
                with gr.Column(scale=1, min_width=300):
                    gr.Markdown("**Click a patch**: its attention, mean over heads (red box: the query)")
                    ui.overlay = picture("query attention", "attn-query-overlay", height=VIEW_PX, show_label=False)
                with gr.Column(scale=1, min_width=300):
                    gr.Markdown("**Every head of this layer** (each scaled to its own maximum)")
                    ui.heads = picture("every head", "attn-query-heads", height=VIEW_PX, show_label=False)
            ui.query_info = gr.Markdown(elem_id="attn-query-info")
            with gr.Row(equal_height=True):
                ui.query = gr.Radio([c for c in QUERY_CHOICES if c[1] != "dist"], value="patch",
                                    label="Query token", elem_id="attn-query", scale=3)
                ui.row = gr.Number(value=7, precision=0, minimum=0, label="row", elem_id="attn-row", min_width=70,
                                   scale=1)
                ui.col = gr.Number(value=7, precision=0, minimum=0, label="col", elem_id="attn-col", min_width=70,
                                   scale=1)
                ui.head = gr.Number(value=0, precision=0, minimum=0, label="head (0: mean)", elem_id="attn-head",
                                    min_width=90, scale=1)
            section("### Class token, last layer", helptext.read(TAB_ID, "cls", mass=f"{MASS:.0%}"))
            ui.mass = gr.Checkbox(False, label=f"Keep the patches holding {MASS:.0%} of each head's attention "
                                  "(DINO view)", elem_id="attn-mass")
            ui.cls_heads = picture("class token per head", "attn-cls-heads", show_label=False)
            ui.cls_info = gr.Markdown(elem_id="attn-cls-info")
            section("### Attention rollout", helptext.read(TAB_ID, "rollout"))
            with gr.Row():
                with gr.Column(scale=1, min_width=220):
                    ui.head_fusion = gr.Radio(list(HEAD_FUSIONS), value="mean", label="Head fusion",
                                              elem_id="attn-fusion")
                    ui.discard_ratio = gr.Slider(0.0, 0.95, value=0.0, step=0.05,
                                                 label="Discard ratio (weakest per row)", elem_id="attn-discard")
                    ui.rollout_info = gr.Markdown(elem_id="attn-rollout-info")
                with gr.Column(scale=2):
                    ui.rollout = picture("rollout of the class token", "attn-rollout", height=VIEW_PX,
                                         show_label=False)
            section("### Mean attention distance", helptext.read(TAB_ID, "distance"))
            ui.distance = gr.Plot(label="Mean attention distance per head", elem_id="attn-distance")

    # Named endpoints first: they claim their names before the private events that reuse the same functions.
    ui.endpoint(attention_query, api_name="attention_query")
    ui.endpoint(rollout, api_name="rollout")
    ui.endpoint(attention_distance, api_name="attention_distance", outputs="distance")

    everything = ui.bind(update_all)
    demo.load(**ui.bind(on_load, js=FIRST_JS, quick=False)).then(**ui.bind(image_views, quick=False))
    ui.model.change(**ui.bind(model_note, inputs=["model"], outputs="note", quick=False, queue=False, trigger_mode="always_last"))
    ui.model.change(**ui.bind(on_model)).then(**everything)
    ui.part.input(**ui.bind(on_part)).then(**everything)
    # One always-last chain for every control that changes the photo's views: a slow view of an earlier setting
    # can never land after (and over) the one asked for while it ran.
    gr.on([ui.new_image.change, ui.seed.change, ui.mask_ratio.change, ui.native.change, ui.side.change],
          **ui.bind(on_native)).then(**everything)
    ui.model.change(**ui.bind(on_native))
    gr.on([ui.layer.change, ui.query.input, ui.head.change], **ui.bind(head_query))
    in_page(ui.layer.change, [ui.layer], urlstate.LAYER_JS)
    ui.goto.change(**ui.bind(on_goto))
    gr.on([ui.row.submit, ui.col.submit], **ui.bind(as_patch, outputs="query", quick=False, queue=False)).then(
        **ui.bind(head_query))
    step = dict(outputs="layer", quick=False, queue=False)  # the layer after the previous or next button
    prev.click(**ui.bind(lambda layer, depth: av.step_layer(layer, depth, -1), **step))
    nxt.click(**ui.bind(lambda layer, depth: av.step_layer(layer, depth, +1), **step))
    ui.overlay.select(**ui.bind(pick_patch, quick=False)).then(**ui.bind(head_query))
    ui.mass.change(**ui.bind(class_only))
    gr.on([ui.head_fusion.change, ui.discard_ratio.change], **ui.bind(rollout))
    return ui
