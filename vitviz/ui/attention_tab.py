"""The Attention tab: click a patch and see every head; class-token maps; rollout; attention distance.

Wiring only: the views come from :mod:`vitviz.views.attention` (captured once per image,
model, mask and part by :mod:`vitviz.explain`, then looked up).
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from ..core.masking import MAX_RATIO
from ..explain.rollout import HEAD_FUSIONS
from ..explain.attention import PARTS
from ..views import attention as av
from ..views import heads as hv
from ..views.attention import DEFAULT_MODEL, MASS, QUERY_CHOICES, VIEW_PX, model_choices, model_note
from . import js, urlstate
from .common import endpoint, example_images, memo_view, user_errors
from .shared_image import ImageInput, default_image
from ..views.common import trained_default
from .serve.costs import Cost, cost, model_cost

TAB_ID, LABEL = "attention", "Attention"
TOUR_TITLE = "Attention"
TOUR_TEXT = ("Every token looks at every other token in every layer; click a patch to see where each head looks, "
             "and roll the layers up into one map.")

INTRO = (
    "Every token of a Vision Transformer mixes in the other tokens with weights that sum to 1: its **attention**. "
    "**Click a patch** of the image to see where it looks in the chosen layer — averaged over heads on the left, "
    "each head on the right — or pick the **class token** (what reads it depends on the model: see the "
    "note under the model). Step through layers with the buttons or the **←/→** keys (also **[** and **]**). "
    "*(ViT §3.1)*"
)
HELP_CLS = (
    "**Class token, last layer, per head.** In vit-base the classifier reads only this token; DeiT's classifier "
    "also reads its *distillation* token (trained to match a CNN teacher, maps shown beside it); MAE and DINO "
    "have no classifier here. In the trained self-supervised **DINO** ViTs of the paper, last-layer heads "
    f"segment objects without ever seeing a label: tick the box to keep, for each head, the patches that hold "
    f"{MASS:.0%} of its attention (the DINO paper's view). With random weights (the note under the model says "
    "which you have) no head can find an object; the kept patches then show only the architecture. "
    "*(DINO figs. 3–4; DeiT §4)*"
)
HELP_ROLLOUT = (
    "**Attention rollout** (Abnar & Zuidema, 2020) follows attention through *all* layers. The paper averages "
    "each layer's heads, adds the identity for the residual connection (A = 0.5·W + 0.5·I) and multiplies the "
    "layers' matrices; *max*/*min* fusion and the discard ratio (the weakest entries of each row zeroed, never "
    "a token's attention to itself) come from later practice (jacobgil/vit-explain), not the paper. The map is "
    "the class token's row over the patches: its share of the prefix tokens is dropped and the rest "
    "renormalised to sum 1. Rollout is a heuristic: it treats attention as linear mixing of tokens and ignores "
    "the MLPs and the value vectors. *(Abnar & Zuidema §3; vit-explain vit_rollout.py)*"
)
HELP_DISTANCE = (
    "**Mean attention distance** (the ViT paper's figure 7): for each head, how far in pixels a patch looks on "
    "average, weighting the distance to every other patch by its attention. The paper's figure is a supervised "
    "ViT-L/16 over 128 images: its early layers mix local heads (short distances, like convolutions) and "
    "global ones, and its deeper layers are mostly global. Xie et al. (2023) found that a masked-image-modeling "
    "model (SimMIM) keeps local heads in deep layers too. mae-tiny (this tab's default where dinov2-small's "
    "weights are absent) is not evidence of either: its deep heads sit near uniform attention, and its two early local heads were *given* a positional "
    "start before training (its model card); the line under the chart's title measures what it does on this "
    "photo. The dashed line is a head that looks everywhere equally — where a random-weight model sits. "
    "*(ViT fig. 7, app. D.7; Xie et al. 2023, fig. 1 and §3)*"
)


@cost(model_cost(1))
@user_errors
def attention_query(image: str | None, model: str, part: str, mask_ratio: float, seed: float, layer: float,
                    query: str, row: float, col: float) -> tuple[np.ndarray, np.ndarray, str]:
    """Endpoint ``attention_query``: one token's attention in one layer (1-based) -> overlay, per-head grid, text.

    ``query`` is ``patch`` (at grid ``row``, ``col``), ``cls`` or ``dist``. ``part``,
    ``mask_ratio`` and ``seed`` apply to MAE models (encoder over the visible patches).
    """
    _, maps = av.maps_for(image, model, part, mask_ratio, seed)
    return av.query_view(maps, layer, query, row, col)


@cost(model_cost(1))
@user_errors
def rollout(image: str | None, model: str, part: str, mask_ratio: float, seed: float, head_fusion: str,
            discard_ratio: float) -> tuple[np.ndarray, str]:
    """Endpoint ``rollout``: the class token's attention rollout (Abnar & Zuidema) as an overlay.

    Args:
        image: the photo (a file path or URL).
        model: a ViT, DeiT, DINO or MAE model name (``name:random`` for random weights).
        part: ``encoder`` (or ``decoder`` for an MAE).
        mask_ratio: share of patches hidden from an MAE encoder (0 for other models).
        seed: seed of the MAE mask.
        head_fusion: how heads are fused per layer: ``mean``, ``max`` or ``min``.
        discard_ratio: share of the weakest attentions dropped per layer, 0 to 0.99.

    Returns:
        The overlay (uint8 RGB) and a Markdown description of where the rollout is strongest.
    """
    _, maps = av.maps_for(image, model, part, mask_ratio, seed)
    return av.rollout_view(maps, head_fusion, discard_ratio)


@cost(model_cost(1))
@user_errors
def attention_distance(image: str | None, model: str, part: str, mask_ratio: float, seed: float) -> go.Figure:
    """Endpoint ``attention_distance``: mean attention distance per head vs layer (Plotly)."""
    m, maps = av.maps_for(image, model, part, mask_ratio, seed)
    return av.distance_view(m, maps)


@cost(model_cost(1))
@user_errors
def head_query(image: str | None, model: str, part: str, mask_ratio: float, seed: float, layer: float, query: str,
               row: float, col: float, head: float) -> tuple[np.ndarray, np.ndarray, str]:
    """The query view with one head (1-based; 0 = mean of heads) on the left: the tab's own events."""
    _, maps = av.maps_for(image, model, part, mask_ratio, seed)
    return hv.head_query_view(maps, layer, query, row, col, head)


@cost(model_cost(1))
@user_errors
@memo_view()
def update_all(image: str | None, model: str, part: str, mask_ratio: float, seed: float, layer: float, query: str,
               row: float, col: float, mass: bool, head_fusion: str, discard_ratio: float, head: float = 0) -> tuple:
    """Every view for the current controls (one capture, then lookups); ``head`` as in :func:`head_query`."""
    out = av.all_views(image, model, part, mask_ratio, seed, layer, query, row, col, mass, head_fusion,
                       discard_ratio)
    if head:
        _, maps = av.maps_for(image, model, part, mask_ratio, seed)
        if 1 <= int(head) <= maps.num_heads:  # a head the model has (else the mean, as after a model switch)
            out = hv.head_query_view(maps, av.layer_value(layer, maps.depth), out[-1], row, col, head) + out[3:]
    top5 = out[8]
    return out[:8] + (gr.update(value=top5, visible=top5 is not None),) + out[9:]


@cost(Cost.VIEW)
@user_errors
def on_model(choice: str, layer: float, part: str, query: str | None = None) -> tuple:
    """New model -> the controls that apply to it (part, mask, layer range, query choices).

    The model note is not among the outputs: it has its own listener (:func:`model_note`, registry
    text that never fails), so a model that cannot load leaves no stale "Error" above the note.

    A distillation-token query falls back to the class token on a model without one.
    """
    c = av.model_controls(choice, layer, part, query)
    return (gr.update(visible=c["is_mae"], value=c["part"]), gr.update(visible=c["is_mae"]),
            gr.update(maximum=c["depth"], value=c["layer"]), gr.update(choices=c["query_choices"], value=c["query"]),
            c["depth"])


@cost(Cost.VIEW)
def on_load(choice: str, layer: float, part: str, query: str | None, head: float, request: gr.Request) -> tuple:
    """The tab's first showing: like :func:`on_model`, starting at the layer the URL names (``?layer=``), if any,
    and at ``head``. A head clicked in the Heads tab before this tab was shown arrives here as ``layer``,
    ``part`` and ``head`` (:data:`FIRST_JS`), so the first view is that head's."""
    state = urlstate.parse_query(dict(request.query_params) if request is not None else {})
    return on_model(choice, state.layer if state.layer else layer, part, query) + (head,)


@cost(Cost.VIEW)
@user_errors
def on_part(choice: str, part: str, layer: float) -> tuple:
    """Encoder/decoder switch (MAE) -> the layer range of that part."""
    depth = av.part_depth(choice, part)
    return gr.update(maximum=depth, value=av.layer_value(layer, depth)), depth


@cost(model_cost(1))
@user_errors
def pick_patch(evt: gr.SelectData, image: str | None, model: str, part: str, mask_ratio: float,
               seed: float) -> tuple[int, int, str]:
    """A click on the query overlay -> the clicked patch's grid (row, col); the query becomes that patch."""
    r, c = av.patch_at_click(image, model, part, mask_ratio, seed, evt.index[0], evt.index[1])
    return r, c, "patch"


@cost(model_cost(1))
@user_errors
def class_only(image: str | None, model: str, part: str, mask_ratio: float, seed: float, mass: bool
                ) -> tuple[np.ndarray, str]:
    """The class-token view alone (the DINO checkbox)."""
    _, maps = av.maps_for(image, model, part, mask_ratio, seed)
    return av.class_view(maps, bool(mass))


@cost(Cost.VIEW)
@user_errors
def on_goto(goto: str | None, choice: str) -> tuple:
    """A head clicked in the Heads tab (``{"model", "layer", "head"}``) -> this tab's model, layer and head,
    on the encoder without a mask (what the head atlas shows)."""
    target, layer, head = hv.parse_goto(goto)
    new = target or choice
    depth, heads = hv.head_range(new)
    if layer > depth or head > heads:
        raise ValueError(f"{new} has {depth} layers of {heads} heads; there is no layer {layer}, head {head}")
    return (gr.update(value=new) if new != choice else gr.update(), "encoder", 0.0,
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


def build(demo: gr.Blocks) -> ImageInput:
    """Create the Attention tab's components inside the caller's ``gr.Tab`` context.

    Args:
        demo: the enclosing app; its page load fills the views for the first example.
    """
    examples = example_images()
    choices = model_choices()
    default = trained_default(choices, DEFAULT_MODEL)
    depth = gr.State(8)
    gr.Markdown(INTRO, elem_classes=["vitviz-help"])  # hidden in the presenter layout
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            image = gr.Image(value=default_image(), type="filepath", image_mode=None,
                             sources=["upload", "webcam", "clipboard"], label="Your image (drop, paste or webcam)",
                             height=240, elem_id="attn-input")
            examples_box = (gr.Examples(examples=examples, inputs=image, label="Example photos",
                                        elem_id="attn-examples") if examples else None)
            model = gr.Dropdown(choices=choices, value=default, label="Model", elem_id="attn-model")
            note = gr.Markdown(model_note(default), elem_id="attn-model-note")
            with gr.Group(visible=True) as mae_box:
                part = gr.Radio(list(PARTS), value="encoder", label="MAE part", elem_id="attn-part",
                                info="encoder: visible patches only; decoder: every patch, mask tokens where hidden")
                ratio = gr.Slider(0.0, MAX_RATIO, value=0.0, step=0.05, label="Masking ratio (MAE)",
                                  elem_id="attn-ratio")
                seed = gr.Number(value=0, precision=0, minimum=0, label="Mask seed", elem_id="attn-seed")
            top5 = gr.Label(num_top_classes=5, label="Top-5 ImageNet labels", elem_id="attn-top5")
            top5_text = gr.Markdown(elem_id="attn-top5-note")
        with gr.Column(scale=3):
            # The query view: the layer, then the maps (on the first screen at 1280x720, issue 34), then the query.
            with gr.Row(equal_height=True):
                prev = gr.Button("◀ previous layer", elem_id="attn-prev", size="sm", scale=1)
                layer = gr.Slider(1, 8, value=1, step=1, label="Layer", elem_id="attn-layer", scale=4)
                nxt = gr.Button("next layer ▶", elem_id="attn-next", size="sm", scale=1)
            goto = gr.HTML("", html_template="<span></span>", js_on_load=GOTO_JS, elem_id="attn-goto", padding=False)
            kw: dict[str, Any] = dict(type="numpy", format="png", interactive=False, buttons=["download"],
                                      show_label=False)
            with gr.Row(equal_height=True):
                with gr.Column(scale=1, min_width=300):
                    gr.Markdown("**Click a patch**: its attention, mean over heads (red box: the query)")
                    overlay = gr.Image(label="query attention", elem_id="attn-query-overlay", height=VIEW_PX, **kw)
                with gr.Column(scale=1, min_width=300):
                    gr.Markdown("**Every head of this layer** (each scaled to its own maximum)")
                    heads = gr.Image(label="every head", elem_id="attn-query-heads", height=VIEW_PX, **kw)
            query_info = gr.Markdown(elem_id="attn-query-info")
            with gr.Row(equal_height=True):
                query = gr.Radio([c for c in QUERY_CHOICES if c[1] != "dist"], value="patch", label="Query token",
                                 elem_id="attn-query", scale=3)
                row = gr.Number(value=7, precision=0, minimum=0, label="row", elem_id="attn-row", min_width=70,
                                scale=1)
                col = gr.Number(value=7, precision=0, minimum=0, label="col", elem_id="attn-col", min_width=70,
                                scale=1)
                head = gr.Number(value=0, precision=0, minimum=0, label="head (0: mean)", elem_id="attn-head",
                                 min_width=90, scale=1)
            gr.Markdown("### Class token, last layer")
            gr.Markdown(HELP_CLS)
            mass = gr.Checkbox(False, label=f"Keep the patches holding {MASS:.0%} of each head's attention (DINO view)",
                               elem_id="attn-mass")
            cls_heads = gr.Image(label="class token per head", elem_id="attn-cls-heads", **kw)
            cls_info = gr.Markdown(elem_id="attn-cls-info")
            gr.Markdown("### Attention rollout")
            gr.Markdown(HELP_ROLLOUT)
            with gr.Row():
                with gr.Column(scale=1, min_width=220):
                    fusion = gr.Radio(list(HEAD_FUSIONS), value="mean", label="Head fusion", elem_id="attn-fusion")
                    discard = gr.Slider(0.0, 0.95, value=0.0, step=0.05, label="Discard ratio (weakest per row)",
                                        elem_id="attn-discard")
                    roll_info = gr.Markdown(elem_id="attn-rollout-info")
                with gr.Column(scale=2):
                    roll = gr.Image(label="rollout of the class token", elem_id="attn-rollout", height=VIEW_PX, **kw)
            gr.Markdown("### Mean attention distance")
            gr.Markdown(HELP_DISTANCE)
            dist_plot = gr.Plot(label="Mean attention distance per head", elem_id="attn-distance")

    src = [image, model, part, ratio, seed]
    all_in = src + [layer, query, row, col, mass, fusion, discard, head]
    all_out = [overlay, heads, query_info, cls_heads, cls_info, roll, roll_info, dist_plot, top5, top5_text, query]
    q_in = src + [layer, query, row, col]
    q_out = [overlay, heads, query_info]
    h_in = q_in + [head]
    r_in = src + [fusion, discard]
    r_out = [roll, roll_info]
    quick: dict[str, Any] = dict(api_visibility="private", trigger_mode="always_last", show_progress="minimal")

    # Named endpoints first: they claim their names before the private events that reuse the same functions.
    endpoint(attention_query, q_in, q_out, api_name="attention_query")
    endpoint(rollout, r_in, r_out, api_name="rollout")
    endpoint(attention_distance, src, [dist_plot], api_name="attention_distance")

    demo.load(on_load, [model, layer, part, query, head], [part, mae_box, layer, query, depth, head],
              js=FIRST_JS, api_visibility="private").then(update_all, all_in, all_out, api_visibility="private")
    model.change(model_note, model, note, api_visibility="private", queue=False, trigger_mode="always_last")
    model.change(on_model, [model, layer, part, query], [part, mae_box, layer, query, depth], **quick).then(
        update_all, all_in, all_out, **quick)
    part.input(on_part, [model, part, layer], [layer, depth], **quick).then(update_all, all_in, all_out, **quick)
    for control in (image, seed):
        control.change(update_all, all_in, all_out, **quick)
    ratio.change(update_all, all_in, all_out, **quick)
    layer.change(head_query, h_in, q_out, **quick)
    layer.change(None, [layer], None, js=urlstate.LAYER_JS, queue=False, api_visibility="private")
    query.input(head_query, h_in, q_out, **quick)
    head.change(head_query, h_in, q_out, **quick)
    goto.change(on_goto, [goto, model], [model, part, ratio, layer, head], **quick)
    gr.on([row.submit, col.submit], as_patch, None, query, api_visibility="private", queue=False).then(
        head_query, h_in, q_out, **quick)
    prev.click(lambda v, d: av.step_layer(v, d, -1), [layer, depth], layer, api_visibility="private", queue=False)
    nxt.click(lambda v, d: av.step_layer(v, d, +1), [layer, depth], layer, api_visibility="private", queue=False)
    overlay.select(pick_patch, src, [row, col, query], api_visibility="private").then(
        head_query, h_in, q_out, **quick)
    mass.change(class_only, src + [mass], [cls_heads, cls_info], **quick)
    gr.on([fusion.change, discard.change], rollout, r_in, r_out, **quick)
    return ImageInput(image, examples_box)

