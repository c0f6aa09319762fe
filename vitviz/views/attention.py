"""What the Attention tab shows: a query token's maps, the class token's heads, rollout,
mean attention distance and top-5 labels, for one image, model, mask and part."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..explain.attention import PARTS, attention, masked_attention, num_layers, prefix_tokens
from ..explain.maps import AttentionMaps
from ..models.loading import LoadedModel, available_models, load_choice
from ..models.registry import RANDOM_SUFFIX, parse_choice
from ..plots.attention import attention_distance_figure
from ..render._draw import panel_size
from ..render.attention import head_grid, heat_overlay, side_by_side
from .common import as_seed, model_label, require_image
from .native import native_of

#: Families whose attention is global (Swin's windows have their own tab).
FAMILIES = ("mae", "vit", "deit", "dino", "dinov2")
#: Families offered with random weights when their pretrained weights are not here.
RANDOM_FAMILIES = ("vit", "deit", "dino", "dinov2")
DEFAULT_MODEL = "mae-tiny"
#: Side of the clickable overlays, in pixels.
VIEW_PX = 448  # side in pixels of the drawn maps (not the concurrency group serve.limits.VIEW)
#: Side of one head tile.
TILE = 160
#: Share of the attention mass kept by the DINO-style view.
MASS = 0.6
TOKEN_WORDS = {"cls": "class token", "dist": "distillation token"}
QUERY_CHOICES = [("a patch (click the image)", "patch"), ("class token", "cls"), ("distillation token", "dist")]

HELP_RANDOM = (
    "⚠️ **Random weights**: this choice runs the architecture with random weights (seeded, no download), so "
    "the tab works offline. The maps show the *architecture* (sequence layout, heads, layers), not learned "
    "attention: expect nearly uniform maps. Pick the pretrained entry when its weights are on this machine."
)


#: What reads the class token, per family: the classifier reads it only in a plain ViT.
READOUT = {
    "vit": ("**Read-out:** vit-base classifies from the class token's last-layer output alone, so its "
            "class-token maps show what feeds the decision. *(ViT §3.1, eq. 4)*"),
    "deit": ("**Read-out:** a classifier head on the class token and one on the distillation token; at test "
             "time their outputs are averaged. The two tokens end up very similar in the last layer (cosine "
             "0.93 in the paper), so their maps may look alike. *(DeiT §4; deit models.py)*"),
    "mae": ("**Read-out:** none here. MAE's class token is an auxiliary dummy that the pixel loss never reads; "
            "the official code fine-tunes with the average of the patch tokens (the class token works about "
            "as well). *(MAE app. A.1; mae models_vit.py)*"),
    "dino": ("**Read-out:** dino-small has no classifier head; DINO trains its projection head on the class "
             "token, whose last-layer heads give the paper's object maps. The paper's figures use ViT-S/8 at "
             "480 px (60×60 patches); this is ViT-S/16 at 224 px (14×14), so its maps are coarser. "
             "*(DINO fig. 1, 3; dino visualize_attention.py)*"),
    "dinov2": ("**Read-out:** dinov2-small has no classifier head; DINOv2 trains its image-level (DINO) head on "
               "the class token and its patch-level (iBOT) head on the patch tokens, and is evaluated frozen, "
               "by linear probes and k-NN. ViT-S/14: patch 14, so 224 px gives 16×16 patches; "
               "dinov2-small-448 gives 32×32; its forward took 7.3× as long (bench/dinov2.py, its card). *(DINOv2 §4, §7)*"),
}


def model_choices(families: tuple[str, ...] = FAMILIES,
                  random_families: tuple[str, ...] = RANDOM_FAMILIES) -> list[tuple[str, str]]:
    """(label, value) pairs: available models, random-weight architectures, then unavailable ones.

    Values are registry names, or ``name:random`` for the random-weight architecture.
    ``families`` and ``random_families`` default to this tab's (the Features tab adds Swin).
    """
    ready, random, missing = [], [], []
    for info in available_models():
        if info.family not in families:
            continue
        if info.available:
            kind = "embedded, trained by vitviz" if info.name == DEFAULT_MODEL else "pretrained"
            ready.append((model_label(info, f"{info.name} ({kind})"), info.name))
        else:
            missing.append((f"{info.name} (unavailable)", info.name))
        if info.family in random_families:
            random.append((f"{info.name} — random weights (architecture only)", info.name + RANDOM_SUFFIX))
    return ready + random + missing


def weights_origin(name: str) -> str:
    """Where ``name``'s weights come from on this machine, in words (without loading them)."""
    from ..models.registry import get_spec
    from ..models.sources import find_weights

    hit = find_weights(get_spec(name))
    if hit is None:
        return "Weights: downloaded at first use."
    extra = " (read with onnx, converted once and cached; never run)" if hit.source.package else ""
    return f"Weights from: {hit.origin}, `{hit.path.name}`{extra}."


def model_note(choice: str | None) -> str:
    """Description of the picked model (and the random-weights warning), as Markdown."""
    try:
        name, random_init = parse_choice(choice)
    except ValueError:
        return ""
    for info in available_models():
        if info.name == name:
            text = f"{info.description}  \n*{info.architecture}* · licence of the weights: {info.licence}"
            readout = READOUT.get(info.family, "")
            if random_init:
                return HELP_RANDOM + "  \n" + f"*{info.architecture}*" + (f"  \n{readout}" if readout else "")
            text += f"  \n{readout}" if readout else ""
            if info.available:
                text += f"  \n{weights_origin(name)}"
            if not info.available:
                text += f"  \n⛔ unavailable — {info.reason}"
            return text
    return ""


def maps_for(image: Any, choice: str | None, part: str, ratio: float, seed: Any, native: Any = False,
             side: Any = None) -> tuple[LoadedModel, AttentionMaps]:
    """The picked model and its (cached) attention for the image (:func:`maps_of`)."""
    require_image(image)
    model = load_choice(choice)
    return model, maps_of(model, image, part, ratio, seed, native, side)


def maps_of(model: LoadedModel, image: Any, part: str, ratio: float, seed: Any, native: Any = False,
            side: Any = None) -> AttentionMaps:
    """A model's (cached) attention for the image; ratio, seed and part apply to MAEs. With ``native`` (a model
    that takes any grid), the photo at its own shape, ``side`` px on its longer side: the encoder over every
    patch (an MAE's mask and decoder are square-only)."""
    s = native_of(model, native, side)
    if s is not None:
        return attention(model, image, aspect="native", max_side=s)
    is_mae = model.family == "mae"
    return masked_attention(model, image, float(ratio or 0.0) if is_mae else 0.0,
                            as_seed(seed if seed is not None else 0), part if is_mae else "encoder")


def view_size(maps: AttentionMaps) -> int | tuple[int, int]:
    """The overlays' size: :data:`VIEW_PX` square, or ``(h, w)`` with that longer side for a photo at its own shape."""
    return panel_size(maps.image.shape, VIEW_PX)


def _tile(maps: AttentionMaps, side: int) -> int | tuple[int, int]:
    """A head tile of ``side`` px, in the photo's proportions when it keeps its own shape."""
    return panel_size(maps.image.shape, side)


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


@dataclass(frozen=True)
class QueryView:
    """One query token's attention in one layer: the overlay (mean of heads, or one head), every head, words."""

    overlay: np.ndarray  # (VIEW_PX, VIEW_PX, 3) uint8
    heads: np.ndarray  # every head's tile, uint8 RGB
    query_info: str


@dataclass(frozen=True)
class ClassView:
    """The class (and distillation) token's heads in the last layer, and words."""

    cls_heads: np.ndarray
    cls_info: str


@dataclass(frozen=True)
class RolloutView:
    """The class token's rollout overlay and a line of numbers."""

    rollout: np.ndarray  # (VIEW_PX, VIEW_PX, 3) uint8
    rollout_info: str


@dataclass(frozen=True)
class ImageViews:
    """The views that do not depend on the query: the class token's heads, the rollout, the distances, top-5."""

    cls_heads: np.ndarray
    cls_info: str
    rollout: np.ndarray
    rollout_info: str
    distance: go.Figure
    top5: dict[str, float] | None  # None without a classifier
    top5_note: str


@dataclass(frozen=True)
class AttentionViews(ImageViews):
    """Every view of the tab for one set of controls: :class:`ImageViews`, the query view (:class:`QueryView`'s
    fields) and ``query``, the query token actually shown."""

    overlay: np.ndarray
    heads: np.ndarray
    query_info: str
    query: str


def query_view(maps: AttentionMaps, layer: Any, query: str, row: Any, col: Any, head: Any = 0) -> QueryView:
    """Overlay, per-head grid and description for one query token and layer; the overlay is the mean of
    heads, or head ``head`` (1-based) when it is not 0."""
    li = _layer_index(maps, layer)
    token = _query_token(maps, query, row, col)
    idx = maps.layout.resolve(token)
    where = token if isinstance(token, tuple) else None
    name = maps.layout.describe(idx)
    try:
        h = int(round(float(head or 0)))
    except (TypeError, ValueError):
        raise ValueError(f"head must be a whole number, got {head!r}") from None
    if not 0 <= h <= maps.num_heads:
        raise ValueError(f"head must be 0 (mean of heads) or 1..{maps.num_heads}, got {head!r}")
    heat = maps.query(li, token)[h - 1] if h else maps.query_mean(li, token)
    overlay = heat_overlay(maps.image, heat, view_size(maps), query=where, hatch=_hatch(maps),
                           label=f"layer {li + 1}/{maps.depth} · {name} · "
                                 + (f"head {h}" if h else f"mean of {maps.num_heads} heads"))
    grid = head_grid(maps.image, maps.query(li, token), tile=_tile(maps, TILE if maps.num_heads > 4 else 200),
                     query=where,
                     hatch=_hatch(maps))
    prefix = ", ".join(f"{TOKEN_WORDS.get(n, n)} {100 * v:.1f}%" for n, v in maps.prefix_share_mean(li, token).items())
    info = (f"**Layer {li + 1} of {maps.depth}{_tag(maps)}**, query: **{name}**. "
            f"Attention given to prefix tokens (mean over heads): {prefix}; the rest goes to the "
            f"{maps.layout.num_patches} patch tokens shown. Each map is scaled to its own maximum (printed "
            "above each head)." + _mask_note(maps))
    return QueryView(overlay, grid, (f"**Head {h} selected** (left). " if h else "") + info)


def class_view(maps: AttentionMaps, mass: bool) -> ClassView:
    """Per-head maps of the class (and distillation) token in the last layer."""
    panels = []
    tokens = [t for t in ("cls", "dist") if maps.layout.has(t)]
    h = maps.num_heads
    cols = -(-h // 2) if h > 6 or len(tokens) > 1 else h  # one row up to 6 heads, else two rows
    tile = TILE if h > 3 else 200
    for token in tokens:
        regions = maps.mass_regions(-1, token, MASS) if mass else None
        grid = head_grid(maps.image, maps.query(-1, token), tile=_tile(maps, tile), regions=regions, cols=cols,
                         hatch=_hatch(maps))
        panels.append(("class token" if token == "cls" else "distillation token", grid))
    if not panels:
        raise ValueError("this model has no class token")
    img = side_by_side(panels) if len(panels) > 1 else panels[0][1]
    kept = f" Bright: the patches holding {MASS:.0%} of each head's attention." if mass else ""
    text = (f"Last layer ({maps.depth} of {maps.depth}){_tag(maps)}, {maps.num_heads} heads; each tile scaled to its "
            f"own maximum.{kept}" + _mask_note(maps))
    return ClassView(img, text)


def rollout_view(maps: AttentionMaps, head_fusion: str, discard_ratio: float) -> RolloutView:
    """Rollout overlay and a line of numbers."""
    r = maps.rollout(head_fusion, float(discard_ratio))
    overlay = heat_overlay(maps.image, r, view_size(maps), absent=maps.layout.hidden if maps.part == "encoder" else None,
                           hatch=_hatch(maps),
                           label=f"rollout · {head_fusion} · discard {float(discard_ratio):.0%}")
    s = maps.rollout_summary(r, 0.1)
    text = (f"Rollout of the class token through {maps.depth} layers{_tag(maps)}: heads fused by **{head_fusion}**, "
            f"{float(discard_ratio):.0%} of each row's weakest weights discarded. The map sums to {s['sum']:.3f}; "
            f"the strongest patch holds {100 * s['max_share']:.1f}%, the strongest 10% of patches hold "
            f"{100 * s['top_share']:.1f}% (a uniform map: {100 * s['uniform_top_share']:.0f}%)." + _mask_note(maps))
    return RolloutView(overlay, text)


def distance_summary(distance: np.ndarray, uniform: float) -> str:
    """What the chart shows on this photo: the range of the first and the last layer's heads, as a share
    of the uniform-attention distance (``distance`` is ``(L, H)`` in pixels)."""
    d = np.asarray(distance, dtype=np.float64)
    first, last = d[0], d[-1]
    return (f"this photo: layer 1's heads at {first.min() / uniform:.2f}–{first.max() / uniform:.2f} and layer "
            f"{d.shape[0]}'s at {last.min() / uniform:.2f}–{last.max() / uniform:.2f} of uniform attention's "
            f"{uniform:.0f} px")


def distance_view(model: LoadedModel, maps: AttentionMaps) -> go.Figure:
    """The mean-attention-distance scatter for the current image, its measured summary under the title."""
    d, u = maps.mean_distance(), maps.uniform_distance()
    return attention_distance_figure(d, f"{_title(model, maps)}: mean attention distance<br><sup>"
                                        f"{distance_summary(d, u)}</sup>", reference=u)


def top5_value(maps: AttentionMaps) -> dict[str, float] | None:
    """``{label: probability}`` for ``gr.Label``; None without a classifier."""
    top = maps.top_k(5)
    return {name: p for name, p in top} if top else None


def top5_note(model: LoadedModel, maps: AttentionMaps) -> str:
    """What the top-5 box shows for this model."""
    if maps.logits is None:
        what = "a masked autoencoder" if model.family == "mae" else "a backbone without a classifier head"
        return f"*{model.name} is {what}: no ImageNet labels.*"
    if maps.random_init:
        return "*Random weights: these probabilities are near 1/1000 and mean nothing.*"
    return "*Softmax over the 1000 ImageNet-1k classes.*"


def layer_value(layer: Any, depth: int) -> int:
    """A slider value clamped to ``1..depth`` (anything unreadable counts as 1)."""
    return min(max(1, int(round(float(layer or 1)))), int(depth))


def step_layer(layer: float, depth: float, delta: int) -> int:
    """Layer slider value after pressing previous (-1) or next (+1), clamped to 1..depth."""
    return int(min(max(1, int(round(float(layer or 1))) + delta), int(depth or 1)))


def model_controls(choice: str, layer: Any, part: str, query: str | None) -> dict[str, Any]:
    """The controls that apply to a newly picked model.

    Returns:
        ``note`` (Markdown), ``is_mae``, ``part`` (``encoder`` unless an MAE keeps its part),
        ``depth`` (layers of that part), ``layer`` (clamped), ``query_choices`` (the
        distillation token only when the model has one) and ``query`` (a distillation-token
        query falls back to the class token on a model without one).
    """
    model = load_choice(choice)
    is_mae = model.family == "mae"
    new_part = part if is_mae and part in PARTS else "encoder"
    depth = num_layers(model, new_part)
    has_dist = "dist" in prefix_tokens(model)
    return {
        "note": model_note(choice),
        "is_mae": is_mae,
        "part": new_part,
        "depth": depth,
        "layer": layer_value(layer, depth),
        "query_choices": [c for c in QUERY_CHOICES if c[1] != "dist" or has_dist],
        "query": "cls" if query == "dist" and not has_dist else (query or "patch"),
    }


def part_depth(choice: str, part: str) -> int:
    """Layers of the chosen part (the encoder for models that are not MAEs)."""
    model = load_choice(choice)
    return num_layers(model, part if model.family == "mae" else "encoder")


def shown_query(maps: AttentionMaps, query: str, row: Any, col: Any, head: Any = 0) -> tuple[str, int]:
    """The query token and head (1-based, 0 = the mean) a view shows for the asked ones.

    The query falls back to the class token when its patch is hidden by the mask or its token does not
    exist; ``head`` falls back to the mean on a model without that head (as after a model switch).
    """
    q = query
    if q == "patch" and maps.layout.token_of_patch(*_query_token(maps, q, row, col)) is None:
        q = "cls"  # the query patch is hidden by the new mask: fall back to the class token
    if q == "dist" and not maps.layout.has("dist"):
        q = "cls"
    return q, head if head and 1 <= int(head) <= maps.num_heads else 0
