"""What the token-norm view shows (Heads tab): one layer's token norms as a map and a histogram,
the outliers marked, every layer's outlier count, and what the paper found beside what this
model shows on this image (:mod:`vitviz.explain.norms`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..explain.norms import FENCE, MIN_RATIO, PAPER, token_norms
from ..explain.layout import TOKEN_NAMES
from ..models.loading import LoadedModel, load_choice
from ..models.runner import runs_with_model
from ..plots.norms import norm_depth_figure, norm_histogram_figure
from ..render.attention import heat_overlay
from ..render._draw import panel_size
from .common import require_image
from .native import native_of

VIEW_PX = 448

HELP = (
    "**Token norms** (registers and high-norm tokens): the length of every token after each block, as a map over "
    "the photo and as a histogram. A patch token is marked an *outlier* (red outline) when its norm is above "
    f"Q3 + {FENCE:g}×IQR of that layer's patch norms and at least {MIN_RATIO:g}× their median. Under the map: the "
    "share of the next block's class-token attention (mean over heads) that goes to those outliers, beside the "
    "share uniform attention would give them. Layer 0 is the patch + position embedding: a bright or saturated "
    f"patch can stand out there without being an artefact. {PAPER} *(Darcet et al., ICLR 2024, §2, figs. 3–4, 7)*"
)


@dataclass(frozen=True)
class NormsView:
    """One layer's token-norm map (outliers outlined), the histogram, the outliers by depth, and words."""

    norm_map: np.ndarray
    norm_hist: go.Figure
    norm_depth: go.Figure
    norm_text: str


def norms_view(image: Any, choice: str | None, layer: Any, native: Any = False, side: Any = None) -> NormsView:
    """``(norm map with outliers outlined (VIEW_PX, VIEW_PX, 3) uint8 (the photo's proportions with ``native``),
    histogram, per-layer chart, Markdown)``; with ``native`` (a model that takes any grid), the photo at its own
    shape, ``side`` px on its longer side."""
    require_image(image)
    model = load_choice(choice)
    return _norms_view(model, image, layer, native_of(model, native, side))


@runs_with_model
def _norms_view(model: LoadedModel, image: Any, layer: Any, s: int | None) -> NormsView:
    """:func:`norms_view` drawn where the model's calls run: with model workers the tokens and attention stay in
    the worker's caches and only the pictures and words come back."""
    n = token_norms(model, image) if s is None else token_norms(model, image, "native", s)
    try:
        li = n.check_layer(int(round(float(layer))))
    except (TypeError, ValueError):
        raise ValueError(f"layer must be a whole number, got {layer!r}") from None
    from ..features.layer_tokens import layer_tokens

    view = (layer_tokens(model, image) if s is None else layer_tokens(model, image, "native", s)).image
    heat = n.patch_norms(li)
    tag = " (random weights)" if n.random_init else ""
    overlay = heat_overlay(view, heat, size=panel_size(view.shape, VIEW_PX), region=n.outlier_map(li) if n.outlier_map(li).any() else None,
                           label=f"{n.model_name}{tag} · {n.names[li]} · token norm")
    k = n.layout.num_prefix
    prefix = {TOKEN_NAMES.get(name, name): float(n.norms[li, i]) for i, name in enumerate(n.layout.prefix)}
    hist = norm_histogram_figure(n.norms[li, k:], prefix, float(n.threshold[li]),
                                 f"{n.model_name}{tag}: token norms after {n.names[li]}")
    ratios = np.array([n.ratio(i) for i in range(n.num_layers)])
    depth = norm_depth_figure(n.names, ratios, n.counts(), f"{n.model_name}{tag}: high-norm patch tokens by depth")
    count = int(n.counts()[li])
    share = n.cls_share[li]
    if np.isfinite(share):
        attn = (f" The next block's class token gives them **{100 * share:.1f}%** of its attention (uniform: "
                f"{100 * n.uniform_share[li]:.1f}%).") if count else ""
    else:
        attn = " (No later block reads this layer.)" if count else ""
    text = (f"**{n.names[li]}**: {count} of {n.layout.num_patches} patch tokens above the threshold "
            f"{n.threshold[li]:.1f}; the largest patch norm is {n.ratio(li):.1f}× the median.{attn}  \n"
            f"{n.summary()}  \n*The paper:* {PAPER}")
    if n.random_init:
        text += "  \n⚠️ Random weights: norms show the architecture, not anything learned."
    return NormsView(overlay, hist, depth, text)
