"""The Attention tab: click a patch and see every head; class-token maps; rollout; attention distance.

Wiring only: the numbers come from :mod:`vitviz.attention` (captured once per image,
model, mask and part, then looked up), the pictures from :mod:`vitviz.render_attention`,
the chart from :mod:`vitviz.plots`.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from ..attention import HEAD_FUSIONS, PARTS, AttentionMaps, masked_attention, num_layers, prefix_tokens
from ..masking import MAX_RATIO
from ..models.loading import LoadedModel, available_models, load_model
from ..plots import attention_distance_figure
from ..render_attention import head_grid, heat_overlay, side_by_side
from . import urlstate
from .common import as_seed, example_images, memo_view, require_image, user_errors

#: Families whose attention is global (Swin's windows have their own tab).
FAMILIES = ("mae", "vit", "deit", "dino")
#: Families offered with random weights when their pretrained weights are not here.
RANDOM_FAMILIES = ("vit", "deit", "dino")
RANDOM_SUFFIX = ":random"
DEFAULT_MODEL = "mae-tiny"
#: Side of the clickable overlays, in pixels.
VIEW = 448
#: Side of one head tile.
TILE = 160
#: Share of the attention mass kept by the DINO-style view.
MASS = 0.6
TOKEN_WORDS = {"cls": "class token", "dist": "distillation token"}
QUERY_CHOICES = [("a patch (click the image)", "patch"), ("class token", "cls"), ("distillation token", "dist")]

INTRO = (
    "Every token of a Vision Transformer mixes in the other tokens with weights that sum to 1: its **attention**. "
    "**Click a patch** of the image to see where it looks in the chosen layer — averaged over heads on the left, "
    "each head on the right — or pick the **class token**, which the classifier reads. Step through layers "
    "with the buttons or the **←/→** keys (also **[** and **]**)."
)
HELP_RANDOM = (
    "⚠️ **Random weights**: this choice runs the architecture with random weights (seeded, no download), so "
    "the tab works offline. The maps show the *architecture* (sequence layout, heads, layers), not learned "
    "attention: expect nearly uniform maps. Pick the pretrained entry when its weights are on this machine."
)
HELP_CLS = (
    "**Class token, last layer, per head.** The classifier reads only this token, so these maps show what feeds "
    "the decision. In self-supervised **DINO** the heads segment objects without ever seeing a label: tick the "
    f"box to keep, for each head, the patches that hold {MASS:.0%} of its attention (the DINO paper's view). "
    "**DeiT** has a second, *distillation* token trained to match a CNN teacher: its maps are shown beside it."
)
HELP_ROLLOUT = (
    "**Attention rollout** (Abnar & Zuidema, 2020) follows attention through *all* layers: each layer's heads "
    "are fused (mean, max or min), the weakest entries of each row can be discarded, the identity is added "
    "for the residual connection and rows are renormalised to sum 1; the layers' matrices are multiplied. The "
    "map is the class token's row over the patches, summing to 1. Discarding never drops a token's attention "
    "to itself, so every row stays well defined."
)
HELP_DISTANCE = (
    "**Mean attention distance** (the ViT paper's figure 7): for each head, how far in pixels a patch looks on "
    "average, weighting the distance to every other patch by its attention. Early layers of trained ViTs mix "
    "local heads (short distances, like convolutions) and global ones; deeper layers are global. The dashed "
    "line is a head that looks everywhere equally — where a random-weight model sits."
)


# --------------------------------------------------------------------------------------
# Model choices
# --------------------------------------------------------------------------------------


def model_choices() -> list[tuple[str, str]]:
    """(label, value) pairs: available models, random-weight architectures, then unavailable ones.

    Values are registry names, or ``name:random`` for the random-weight architecture.
    """
    ready, random, missing = [], [], []
    for info in available_models():
        if info.family not in FAMILIES:
            continue
        if info.available:
            kind = "embedded, trained by vitviz" if info.name == DEFAULT_MODEL else "pretrained"
            ready.append((f"{info.name} ({kind})", info.name))
        else:
            missing.append((f"{info.name} (unavailable)", info.name))
        if info.family in RANDOM_FAMILIES:
            random.append((f"{info.name} — random weights (architecture only)", info.name + RANDOM_SUFFIX))
    return ready + random + missing


def parse_choice(choice: str | None) -> tuple[str, bool]:
    """``'vit-base:random'`` -> ``('vit-base', True)``; ``'mae-tiny'`` -> ``('mae-tiny', False)``."""
    if not choice:
        raise ValueError("pick a model first")
    if choice.endswith(RANDOM_SUFFIX):
        return choice[: -len(RANDOM_SUFFIX)], True
    return choice, False


def _load(choice: str | None) -> LoadedModel:
    name, random_init = parse_choice(choice)
    return load_model(name, random_init=random_init)


def model_note(choice: str | None) -> str:
    """Description of the picked model (and the random-weights warning), as Markdown."""
    try:
        name, random_init = parse_choice(choice)
    except ValueError:
        return ""
    for info in available_models():
        if info.name == name:
            text = f"{info.description}  \n*{info.architecture}* · licence of the weights: {info.licence}"
            if random_init:
                return HELP_RANDOM + "  \n" + f"*{info.architecture}*"
            if not info.available:
                text += f"  \n⛔ unavailable — {info.reason}"
            return text
    return ""


def _maps(image: Any, choice: str | None, part: str, ratio: float, seed: Any) -> tuple[LoadedModel, AttentionMaps]:
    require_image(image)
    model = _load(choice)
    is_mae = model.family == "mae"
    return model, masked_attention(model, image, float(ratio or 0.0) if is_mae else 0.0,
                                   as_seed(seed if seed is not None else 0), part if is_mae else "encoder")


def _layer_index(maps: AttentionMaps, layer: Any) -> int:
    try:
        n = int(round(float(layer)))
    except (TypeError, ValueError):
        raise ValueError(f"layer must be a whole number, got {layer!r}") from None
    if not 1 <= n <= maps.depth:
        raise ValueError(f"layer must be 1..{maps.depth} for this model's {maps.part}, got {layer!r}")
    return n - 1


def _hatch(maps: AttentionMaps) -> np.ndarray | None:
    """Mask-token positions to hatch (MAE decoder), else None."""
    return maps.layout.mask_token_grid if maps.layout.mask_token.any() else None


def _mask_note(maps: AttentionMaps) -> str:
    hidden = int(maps.layout.hidden.sum())
    if not hidden:
        return ""
    if maps.part == "decoder":
        return (f" The decoder sees all {maps.layout.num_patches} positions; the {hidden} hatched ones hold mask "
                "tokens (a learned placeholder plus position, no image content).")
    return " Grey hatched patches are hidden by the mask: the encoder never sees them."


def _tag(maps: AttentionMaps) -> str:
    return " (random weights)" if maps.random_init else ""


def _title(model: LoadedModel, maps: AttentionMaps) -> str:
    hidden = int(maps.layout.hidden.sum())
    mask = f", {hidden} of {maps.layout.hidden.size} patches hidden" if hidden else ""
    return f"{model.name}{_tag(maps)} · {maps.part}{mask}"


def _query_token(maps: AttentionMaps, query: str, row: Any, col: Any) -> int | str | tuple[int, int]:
    if query in ("cls", "dist"):
        return query
    if query != "patch":
        raise ValueError(f"unknown query {query!r}; choose one of patch, cls, dist")
    try:
        r, c = int(row), int(col)
    except (TypeError, ValueError):
        raise ValueError(f"row and column must be whole numbers, got {row!r}, {col!r}") from None
    gh, gw = maps.layout.grid
    if not (0 <= r < gh and 0 <= c < gw):
        raise ValueError(f"row must be 0..{gh - 1} and column 0..{gw - 1}, got ({r}, {c})")
    return r, c


# --------------------------------------------------------------------------------------
# Views (each returns what its components show)
# --------------------------------------------------------------------------------------


def query_view(maps: AttentionMaps, layer: Any, query: str, row: Any, col: Any) -> tuple[np.ndarray, np.ndarray, str]:
    """Overlay (mean of heads), per-head grid and description for one query token and layer."""
    li = _layer_index(maps, layer)
    token = _query_token(maps, query, row, col)
    idx = maps.layout.resolve(token)
    where = token if isinstance(token, tuple) else None
    name = maps.layout.describe(idx)
    overlay = heat_overlay(maps.image, maps.query_mean(li, token), VIEW, query=where, hatch=_hatch(maps),
                           label=f"layer {li + 1}/{maps.depth} · {name} · mean of {maps.num_heads} heads")
    grid = head_grid(maps.image, maps.query(li, token), tile=TILE if maps.num_heads > 4 else 200, query=where,
                     hatch=_hatch(maps))
    prefix = ", ".join(f"{TOKEN_WORDS.get(n, n)} {100 * v:.1f}%" for n, v in maps.prefix_share_mean(li, token).items())
    info = (f"**Layer {li + 1} of {maps.depth}{_tag(maps)}**, query: **{name}**. "
            f"Attention given to prefix tokens (mean over heads): {prefix}; the rest goes to the "
            f"{maps.layout.num_patches} patch tokens shown. Each map is scaled to its own maximum (printed "
            "above each head)." + _mask_note(maps))
    return overlay, grid, info


def class_view(maps: AttentionMaps, mass: bool) -> tuple[np.ndarray, str]:
    """Per-head maps of the class (and distillation) token in the last layer."""
    panels = []
    tokens = [t for t in ("cls", "dist") if maps.layout.has(t)]
    h = maps.num_heads
    cols = -(-h // 2) if h > 6 or len(tokens) > 1 else h  # one row up to 6 heads, else two rows
    tile = TILE if h > 3 else 200
    for token in tokens:
        regions = maps.mass_regions(-1, token, MASS) if mass else None
        grid = head_grid(maps.image, maps.query(-1, token), tile=tile, regions=regions, cols=cols,
                         hatch=_hatch(maps))
        panels.append(("class token" if token == "cls" else "distillation token", grid))
    if not panels:
        raise ValueError("this model has no class token")
    img = side_by_side(panels) if len(panels) > 1 else panels[0][1]
    kept = f" Bright: the patches holding {MASS:.0%} of each head's attention." if mass else ""
    text = (f"Last layer ({maps.depth} of {maps.depth}){_tag(maps)}, {maps.num_heads} heads; each tile scaled to its "
            f"own maximum.{kept}" + _mask_note(maps))
    return img, text


def rollout_view(maps: AttentionMaps, head_fusion: str, discard_ratio: float) -> tuple[np.ndarray, str]:
    """Rollout overlay and a line of numbers."""
    r = maps.rollout(head_fusion, float(discard_ratio))
    overlay = heat_overlay(maps.image, r, VIEW, absent=maps.layout.hidden if maps.part == "encoder" else None,
                           hatch=_hatch(maps),
                           label=f"rollout · {head_fusion} · discard {float(discard_ratio):.0%}")
    s = maps.rollout_summary(r, 0.1)
    text = (f"Rollout of the class token through {maps.depth} layers{_tag(maps)}: heads fused by **{head_fusion}**, "
            f"{float(discard_ratio):.0%} of each row's weakest weights discarded. The map sums to {s['sum']:.3f}; "
            f"the strongest patch holds {100 * s['max_share']:.1f}%, the strongest 10% of patches hold "
            f"{100 * s['top_share']:.1f}% (a uniform map: {100 * s['uniform_top_share']:.0f}%)." + _mask_note(maps))
    return overlay, text


def distance_view(model: LoadedModel, maps: AttentionMaps) -> go.Figure:
    """The mean-attention-distance scatter for the current image."""
    return attention_distance_figure(maps.mean_distance(), f"{_title(model, maps)}: mean attention distance",
                                     reference=maps.uniform_distance())


def top5_value(maps: AttentionMaps) -> dict[str, float] | None:
    """``{label: probability}`` for ``gr.Label``; None without a classifier."""
    top = maps.top_k(5)
    return {name: p for name, p in top} if top else None


def _top5_update(maps: AttentionMaps) -> Any:  # noqa: ANN401 - a gr.update
    value = top5_value(maps)
    return gr.update(value=value, visible=value is not None)


def top5_note(model: LoadedModel, maps: AttentionMaps) -> str:
    """What the top-5 box shows for this model."""
    if maps.logits is None:
        what = "a masked autoencoder" if model.family == "mae" else "a backbone without a classifier head"
        return f"*{model.name} is {what}: no ImageNet labels.*"
    if maps.random_init:
        return "*Random weights: these probabilities are near 1/1000 and mean nothing.*"
    return "*Softmax over the 1000 ImageNet-1k classes.*"


# --------------------------------------------------------------------------------------
# Endpoints and event handlers
# --------------------------------------------------------------------------------------


@user_errors
def attention_query(image: str | None, model: str, part: str, mask_ratio: float, seed: float, layer: float,
                    query: str, row: float, col: float) -> tuple[np.ndarray, np.ndarray, str]:
    """Endpoint ``attention_query``: one token's attention in one layer (1-based) -> overlay, per-head grid, text.

    ``query`` is ``patch`` (at grid ``row``, ``col``), ``cls`` or ``dist``. ``part``,
    ``mask_ratio`` and ``seed`` apply to MAE models (encoder over the visible patches).
    """
    _, maps = _maps(image, model, part, mask_ratio, seed)
    return query_view(maps, layer, query, row, col)


@user_errors
def rollout(image: str | None, model: str, part: str, mask_ratio: float, seed: float, head_fusion: str,
            discard_ratio: float) -> tuple[np.ndarray, str]:
    """Endpoint ``rollout``: the class token's attention rollout as an overlay, with a description."""
    _, maps = _maps(image, model, part, mask_ratio, seed)
    return rollout_view(maps, head_fusion, discard_ratio)


@user_errors
def attention_distance(image: str | None, model: str, part: str, mask_ratio: float, seed: float) -> go.Figure:
    """Endpoint ``attention_distance``: mean attention distance per head vs layer (Plotly)."""
    m, maps = _maps(image, model, part, mask_ratio, seed)
    return distance_view(m, maps)


@user_errors
@memo_view()
def update_all(image: str | None, model: str, part: str, mask_ratio: float, seed: float, layer: float, query: str,
               row: float, col: float, mass: bool, head_fusion: str, discard_ratio: float) -> tuple:
    """Every view for the current controls (one capture, then lookups)."""
    m, maps = _maps(image, model, part, mask_ratio, seed)
    q = query
    if q == "patch" and maps.layout.token_of_patch(*_query_token(maps, q, row, col)) is None:
        q = "cls"  # the query patch is hidden by the new mask: fall back to the class token
    if q == "dist" and not maps.layout.has("dist"):
        q = "cls"
    layer = min(max(1, int(round(float(layer or 1)))), maps.depth)
    overlay, grid, info = query_view(maps, layer, q, row, col)
    cls_img, cls_text = class_view(maps, bool(mass))
    roll, roll_text = rollout_view(maps, head_fusion, discard_ratio)
    return (overlay, grid, info, cls_img, cls_text, roll, roll_text, distance_view(m, maps), _top5_update(maps),
            top5_note(m, maps), q)


@user_errors
def on_model(choice: str, layer: float, part: str, query: str | None = None) -> tuple:
    """New model -> note, controls that apply to it (part, mask, layer range, query choices).

    A distillation-token query falls back to the class token on a model without one.
    """
    model = _load(choice)
    is_mae = model.family == "mae"
    new_part = part if is_mae and part in PARTS else "encoder"
    depth = num_layers(model, new_part)
    has_dist = "dist" in prefix_tokens(model)
    choices = [c for c in QUERY_CHOICES if c[1] != "dist" or has_dist]
    value = min(max(1, int(round(float(layer or 1)))), depth)
    q = "cls" if query == "dist" and not has_dist else (query or "patch")
    return (model_note(choice), gr.update(visible=is_mae, value=new_part), gr.update(visible=is_mae),
            gr.update(maximum=depth, value=value), gr.update(choices=choices, value=q), depth)


def on_load(choice: str, layer: float, part: str, query: str | None, request: gr.Request) -> tuple:
    """Page load: like :func:`on_model`, starting at the layer the URL names (``?layer=``), if any."""
    state = urlstate.parse_query(dict(request.query_params) if request is not None else {})
    return on_model(choice, state.layer if state.layer else layer, part, query)


@user_errors
def on_part(choice: str, part: str, layer: float) -> tuple:
    """Encoder/decoder switch (MAE) -> the layer range of that part."""
    model = _load(choice)
    depth = num_layers(model, part if model.family == "mae" else "encoder")
    return gr.update(maximum=depth, value=min(max(1, int(round(float(layer or 1)))), depth)), depth


def step_layer(layer: float, depth: float, delta: int) -> int:
    """Layer slider value after pressing previous (-1) or next (+1), clamped to 1..depth."""
    return int(min(max(1, int(round(float(layer or 1))) + delta), int(depth or 1)))


@user_errors
def pick_patch(evt: gr.SelectData, image: str | None, model: str, part: str, mask_ratio: float,
               seed: float) -> tuple[int, int, str]:
    """A click on the query overlay -> the clicked patch's grid (row, col); the query becomes that patch."""
    _, maps = _maps(image, model, part, mask_ratio, seed)
    x, y = evt.index[0], evt.index[1]
    r, c = maps.layout.patch_at_pixel(x, y, VIEW)
    if maps.layout.token_of_patch(r, c) is None:
        raise gr.Error(f"Patch (row {r}, col {c}) is hidden by the mask: the encoder never sees it. "
                       "Click a visible patch, or set the masking ratio to 0.")
    return r, c, "patch"


@user_errors
def class_only(image: str | None, model: str, part: str, mask_ratio: float, seed: float, mass: bool
                ) -> tuple[np.ndarray, str]:
    """The class-token view alone (the DINO checkbox)."""
    _, maps = _maps(image, model, part, mask_ratio, seed)
    return class_view(maps, bool(mass))


def as_patch() -> str:
    """The query becomes the patch at (row, col)."""
    return "patch"


# Arrow keys / [ ] step through layers while the tab is visible and no text field has the focus.
KEYS_JS = """
if (!window.__vitvizAttnKeys) {
  window.__vitvizAttnKeys = true;
  document.addEventListener('keydown', (e) => {
    const t = e.target;
    if (t && (['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName) || t.isContentEditable)) return;
    const layer = document.getElementById('attn-layer');
    if (!layer || layer.offsetParent === null) return;
    let id = null;
    if (e.key === 'ArrowLeft' || e.key === '[') id = 'attn-prev';
    if (e.key === 'ArrowRight' || e.key === ']') id = 'attn-next';
    if (!id) return;
    const btn = document.getElementById(id);
    if (btn) { e.preventDefault(); btn.click(); }
  });
}
"""


def build_tab(demo: gr.Blocks) -> None:
    """Create the Attention tab's components inside the caller's ``gr.Tab`` context.

    Args:
        demo: the enclosing app; its page load fills the views for the first example.
    """
    examples = example_images()
    choices = model_choices()
    values = [v for _, v in choices]
    default = DEFAULT_MODEL if DEFAULT_MODEL in values else (values[0] if values else None)
    depth = gr.State(8)
    gr.Markdown(INTRO)
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            image = gr.Image(value=examples[0] if examples else None, type="filepath", image_mode=None,
                             sources=["upload", "webcam", "clipboard"], label="Your image (drop, paste or webcam)",
                             height=240, elem_id="attn-input")
            if examples:
                gr.Examples(examples=examples, inputs=image, label="Example photos")
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
            gr.Markdown("### Query view")
            with gr.Row(equal_height=True):
                query = gr.Radio([c for c in QUERY_CHOICES if c[1] != "dist"], value="patch", label="Query token",
                                 elem_id="attn-query", scale=3)
                row = gr.Number(value=7, precision=0, minimum=0, label="row", elem_id="attn-row", min_width=70,
                                scale=1)
                col = gr.Number(value=7, precision=0, minimum=0, label="col", elem_id="attn-col", min_width=70,
                                scale=1)
            with gr.Row(equal_height=True):
                prev = gr.Button("◀ previous layer", elem_id="attn-prev", size="sm", scale=1)
                layer = gr.Slider(1, 8, value=1, step=1, label="Layer", elem_id="attn-layer", scale=4)
                nxt = gr.Button("next layer ▶", elem_id="attn-next", size="sm", scale=1)
            gr.HTML("", js_on_load=KEYS_JS, elem_id="attn-keys", padding=False)
            kw: dict[str, Any] = dict(type="numpy", format="png", interactive=False, buttons=["download"],
                                      show_label=False)
            with gr.Row(equal_height=True):
                with gr.Column(scale=1, min_width=300):
                    gr.Markdown("**Click a patch**: its attention, mean over heads (red box: the query)")
                    overlay = gr.Image(label="query attention", elem_id="attn-query-overlay", height=VIEW, **kw)
                with gr.Column(scale=1, min_width=300):
                    gr.Markdown("**Every head of this layer** (each scaled to its own maximum)")
                    heads = gr.Image(label="every head", elem_id="attn-query-heads", height=VIEW, **kw)
            query_info = gr.Markdown(elem_id="attn-query-info")
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
                    roll = gr.Image(label="rollout of the class token", elem_id="attn-rollout", height=VIEW, **kw)
            gr.Markdown("### Mean attention distance")
            gr.Markdown(HELP_DISTANCE)
            dist_plot = gr.Plot(label="Mean attention distance per head", elem_id="attn-distance")
    api_btn = gr.Button(visible=False)

    src = [image, model, part, ratio, seed]
    all_in = src + [layer, query, row, col, mass, fusion, discard]
    all_out = [overlay, heads, query_info, cls_heads, cls_info, roll, roll_info, dist_plot, top5, top5_text, query]
    q_in = src + [layer, query, row, col]
    q_out = [overlay, heads, query_info]
    r_in = src + [fusion, discard]
    r_out = [roll, roll_info]
    quick: dict[str, Any] = dict(api_visibility="private", trigger_mode="always_last", show_progress="minimal")

    # Named endpoints first: they claim their names before the private events that reuse the same functions.
    api_btn.click(attention_query, q_in, q_out, api_name="attention_query")
    api_btn.click(rollout, r_in, r_out, api_name="rollout")
    api_btn.click(attention_distance, src, [dist_plot], api_name="attention_distance")

    demo.load(on_load, [model, layer, part, query], [note, part, mae_box, layer, query, depth],
              api_visibility="private").then(update_all, all_in, all_out, api_visibility="private")
    model.change(on_model, [model, layer, part, query], [note, part, mae_box, layer, query, depth], **quick).then(
        update_all, all_in, all_out, **quick)
    part.input(on_part, [model, part, layer], [layer, depth], **quick).then(update_all, all_in, all_out, **quick)
    for control in (image, seed):
        control.change(update_all, all_in, all_out, **quick)
    ratio.change(update_all, all_in, all_out, **quick)
    layer.change(attention_query, q_in, q_out, **quick)
    layer.change(None, [layer], None, js=urlstate.LAYER_JS, queue=False, api_visibility="private")
    query.input(attention_query, q_in, q_out, **quick)
    gr.on([row.submit, col.submit], as_patch, None, query, api_visibility="private", queue=False).then(
        attention_query, q_in, q_out, **quick)
    prev.click(lambda v, d: step_layer(v, d, -1), [layer, depth], layer, api_visibility="private", queue=False)
    nxt.click(lambda v, d: step_layer(v, d, +1), [layer, depth], layer, api_visibility="private", queue=False)
    overlay.select(pick_patch, src, [row, col, query], api_visibility="private").then(
        attention_query, q_in, q_out, **quick)
    mass.change(class_only, src + [mass], [cls_heads, cls_info], **quick)
    gr.on([fusion.change, discard.change], rollout, r_in, r_out, **quick)

