"""What the Heads tab shows: the head atlas (every layer and head, typed) and the
query-key space of one head, plus the Attention tab's query view narrowed to one head."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..explain.attention import num_layers
from ..explain.heads import HEAD_TYPES, LOCAL_RATIO, RULE, HeadAtlas, head_atlas
from ..explain.qk import QueryKeySpace, query_key_space
from ..models.loading import LoadedModel, load_choice
from ..plots.heads import head_grid_figure, head_scatter_figure, position_colors, qk_figure
from ..render.attention import heat_overlay
from . import attention as av
from .common import require_image

#: Same models as the Attention tab (global attention: MAE, ViT, DeiT, DINO).
model_choices = av.model_choices
model_note = av.model_note
DEFAULT_MODEL = av.DEFAULT_MODEL
VIEW_PX = av.VIEW_PX
#: Where the statistics come from: (label, value).
SOURCES: list[tuple[str, str]] = [("this image", "image"), ("average over the example photos", "examples")]

SOURCES_TEXT = ("Every cell is one head: its type by the rule above, its numbers on hover. **Click a cell** (or a "
                "point of the scatter) to open the Attention tab's query view at that layer and head. MAE models: "
                "the encoder with every patch visible.")
HELP_ATLAS = (
    "Per head, averaged over the image's patch queries: the **mean attention distance** (how far a patch looks, "
    "in pixels: the ViT paper's fig. 7), the **entropy** of its attention divided by log T (1 = spread evenly "
    "over all T tokens, 0 = all on one token), the share on **prefix tokens** (class, distillation, register "
    "tokens; a head that parks most of its attention there is called a *sink* here) and "
    "the share on the token "
    f"**itself**. The rule: {RULE}. Heads specialise this way in trained Transformers (Voita et al., ACL 2019, "
    "found positional, syntactic and rare-word heads in a translation model). Switch to the example-photo "
    "average to see that the types belong to the model, not to one photo. The prefix share is not the register "
    "story: Darcet et al. 2023 found high-norm *patch* tokens in background areas of large trained ViTs, which "
    "soak up attention and which registers (extra prefix tokens) replace; a prefix-token share cannot see those "
    "patch tokens, so the sink share here adds the attention on high-norm patch tokens (outliers of the block's "
    "input, found by their norms as the token-norm view below marks them). *(ViT fig. 7; Voita et al. 2019; "
    "Darcet et al. 2023, §2)*"
)
HELP_QK = (
    "A head's attention weight is softmax(q·k/√d): **a query attends to the keys it has a large dot product "
    "with**. Distance is a proxy for that only when the vectors' lengths are alike (‖q−k‖² = ‖q‖² + ‖k‖² − 2q·k), "
    "so a query tends to lie near the keys it attends to, and a cluster of queries and keys suggests *these "
    "patches attend to each other*; under the picture the app measures how well 2-D distance tracks the logit "
    "for the head shown. Circles are the queries of the image's tokens, diamonds their "
    "keys; the fill gives the patch position (red grows left → right, blue top → bottom); stars are the prefix "
    "tokens. Queries and keys are projected **together by PCA** to 2-D (the two directions of largest joint "
    "spread), after moving the keys to the queries' mean and matching their mean lengths — both leave every "
    "attention weight unchanged — as AttentionViz does (which also offers t-SNE and UMAP; PCA is linear and the "
    "same on every run). **Click a point**: its patch is boxed on the photo, with the head's attention from that "
    "query (or, for a key, to that key). *(AttentionViz, Yeh et al., IEEE VIS 2023)*"
)


def atlas_for(image: Any, choice: str | None, source: str) -> tuple[LoadedModel, HeadAtlas]:
    """The model and its atlas: of the image (``source="image"``) or of the example photos (``"examples"``)."""
    if source not in [v for _, v in SOURCES]:
        raise ValueError(f"unknown source {source!r}; choose one of {', '.join(v for _, v in SOURCES)}")
    model = load_choice(choice)
    if source == "image":
        require_image(image)
        return model, head_atlas(model, image)
    return model, head_atlas(model, None)


def _stats(atlas: HeadAtlas) -> dict[str, np.ndarray]:
    return {"distance": atlas.distance, "entropy": atlas.entropy, "prefix_share": atlas.sink_share,
            "self_share": atlas.self_share}


def layers_sentence(atlas: HeadAtlas) -> str:
    """Where this model's local and sink heads are, against what a large trained ViT shows."""
    names = atlas.type_names()

    def where(kind: str) -> str:
        layers = [str(i + 1) for i in range(atlas.depth) if (names[i] == kind).any()]
        return f"layer{'s' if len(layers) > 1 else ''} {', '.join(layers)}" if layers else "no layer"

    return (f"A large trained ViT has local heads mostly in its early layers and global ones above (ViT fig. 7); "
            f"here local heads are in {where('local')} and prefix-sink heads in {where('prefix-sink')}.")


@dataclass(frozen=True)
class AtlasView:
    """The head atlas: the layer x head grid by type, the distance-entropy scatter (Plotly), a summary."""

    grid: go.Figure
    scatter: go.Figure
    info: str


@dataclass(frozen=True)
class QKView:
    """One head's queries and keys (Plotly), and a sentence."""

    qk: go.Figure
    qk_text: str


@dataclass(frozen=True)
class TokenView:
    """A clicked query or key: its patch boxed over the head's attention (uint8 RGB), and a sentence."""

    token: np.ndarray
    token_text: str


@dataclass(frozen=True)
class QKViews(QKView, TokenView):
    """The query-key space and the centre patch's query."""


@dataclass(frozen=True)
class HeadsViews(AtlasView, QKViews):
    """Every view of the Heads tab but the token norms."""


def atlas_view(image: Any, choice: str | None, source: str) -> AtlasView:
    """The head grid, the scatter of heads and a summary (counts per type, what was averaged)."""
    model, atlas = atlas_for(image, choice, source)
    what = "this image" if source == "image" else f"the mean of {atlas.images} example photos"
    tag = " (random weights)" if atlas.random_init else ""
    title = f"{model.name}{tag} · {atlas.depth} layers × {atlas.num_heads} heads · {what}"
    grid = head_grid_figure(atlas.types, HEAD_TYPES, _stats(atlas), title)
    scatter = head_scatter_figure(atlas.types, HEAD_TYPES, _stats(atlas), atlas.uniform_distance, LOCAL_RATIO,
                                  f"{model.name}{tag}: distance against entropy")
    for fig in (grid, scatter):
        fig.update_layout(meta={"model": str(choice)})  # read by the page when a head is clicked
    counts = ", ".join(f"**{n}** {name}" for name, n in atlas.counts().items())
    text = (f"{atlas.depth * atlas.num_heads} heads over {what}: {counts}. Uniform attention over these patches "
            f"would score a distance of {atlas.uniform_distance:.0f} px and an entropy of 1. {layers_sentence(atlas)}")
    if atlas.random_init:
        text += (" ⚠️ Random weights: every head attends almost uniformly, so the atlas shows the architecture, "
                 "not learned heads.")
    return AtlasView(grid, scatter, text)


def head_range(choice: str | None) -> tuple[int, int]:
    """``(layers, heads)`` of the model's encoder, without a forward pass."""
    model = load_choice(choice)
    blocks: Any = model.architecture.blocks
    return num_layers(model), int(blocks[0].attn.num_heads)


def _index(value: Any, n: int, what: str) -> int:
    """A 1-based UI number -> a 0-based index, or ValueError naming the range."""
    try:
        i = int(round(float(value)))
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a whole number, got {value!r}") from None
    if not 1 <= i <= n:
        raise ValueError(f"{what} must be 1..{n} for this model, got {value!r}")
    return i - 1


def space_for(image: Any, choice: str | None, layer: Any, head: Any) -> QueryKeySpace:
    """The query-key space of (layer, head), both 1-based as in the tab."""
    require_image(image)
    model = load_choice(choice)
    depth, heads = head_range(choice)
    return query_key_space(model, image, _index(layer, depth, "layer"), _index(head, heads, "head"))


def qk_view(image: Any, choice: str | None, layer: Any, head: Any) -> QKView:
    """The query-key scatter of one head and a sentence about it."""
    s = space_for(image, choice, layer, head)
    lay = s.layout
    labels = [lay.describe(i) for i in range(lay.num_tokens)]
    tag = " (random weights)" if s.random_init else ""
    fig = qk_figure(s.query_xy, s.key_xy, labels, position_colors(lay.patch_rc, lay.grid), lay.num_prefix,
                    s.explained, f"{s.model_name}{tag} · layer {s.layer + 1}, head {s.head + 1}: queries and keys")
    text = (f"Layer {s.layer + 1}, head {s.head + 1}{tag}: {lay.num_tokens} queries and {lay.num_tokens} keys of "
            f"dimension {s.queries.shape[1]}, projected jointly by PCA; the two axes hold "
            f"{s.explained.sum():.0%} of their variance, so distances in the picture are only approximate: for this "
            f"head, nearness in the picture correlates with the logit q·k/√d at r = "
            f"{s.distance_logit_correlation():.2f} (per query over its {lay.num_tokens} keys, averaged; 1 = the logit "
            "falls in a straight line with the distance).")
    return QKView(fig, text)


def token_view(image: Any, choice: str | None, layer: Any, head: Any, token: Any = None, kind: Any = 0
               ) -> TokenView:
    """A clicked point: its patch boxed on the photo, over the head's attention from that query / to that key.

    Args:
        token: sequence index of the token (``customdata[0]`` of the click); None = the centre patch.
        kind: 0 (a query) or 1 (a key).
    """
    s = space_for(image, choice, layer, head)
    lay = s.layout
    gh, gw = lay.grid
    i = lay.resolve(int(token)) if token is not None else lay.resolve((gh // 2, gw // 2))
    is_key = int(kind) == 1
    a = s.attention()
    p0 = lay.num_prefix
    weights = a[p0:, i] / max(float(a[p0:, i].sum()), 1e-30) if is_key else a[i, p0:]
    where = tuple(int(v) for v in lay.patch_rc[i - p0]) if i >= p0 else None
    name = lay.describe(i)
    what = f"which patches attend to the key of {name}" if is_key else f"where the query of {name} looks"
    overlay = heat_overlay(s.image, lay.scatter(weights), VIEW_PX, query=where,
                           label=f"layer {s.layer + 1}, head {s.head + 1} · {'key' if is_key else 'query'}: {name}")
    box = f"Red box: {name}." if where is not None else f"The {name} has no patch, so no box."
    if is_key:
        text = (f"{box} Colours: the share of each patch query's attention that lands on this key "
                "(normalised over the patch queries).")
    else:
        text = (f"{box} Colours: its attention over the patches in this head "
                f"({100 * float(a[i, :p0].sum()):.1f}% goes to prefix tokens).")
    return TokenView(overlay, f"{what.capitalize()}. {text}")


def parse_goto(text: str | None) -> tuple[str | None, int, int]:
    """The page's click on a head (``{"model", "layer", "head"}`` as JSON, 1-based) -> ``(model, layer, head)``.

    Raises:
        ValueError: anything that is not such an object.
    """
    try:
        data = json.loads(text or "")
        layer, head = int(data["layer"]), int(data["head"])
    except (ValueError, TypeError, KeyError):
        raise ValueError("a head click must name a layer and a head") from None
    if layer < 1 or head < 1:
        raise ValueError(f"layer and head are 1-based, got {layer}, {head}")
    model = data.get("model")
    return (str(model) if model else None), layer, head
