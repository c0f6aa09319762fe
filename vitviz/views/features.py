"""What the Features tab shows: PCA feature maps by layer, patch correspondence, probes
by depth, class token vs average pooling, and layer-wise learning-rate decay.

Every view starts from :func:`vitviz.features.layer_tokens.layer_tokens` (one forward pass per
model and image, cached) and returns panels (uint8 arrays), Plotly figures, table rows
and sentences; no gradio here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..assets import default_example, example_images
from ..cache import LRU
from ..core.images import square_view
from ..explain.attention import attention
from ..features.llrd import DECAYS, DEPTHS, FORMULA, llrd_multipliers
from ..features.pca import foreground_pca_maps, joint_pca_maps
from ..features.pooling import cls_gap_cosine, topk_overlap
from ..features.probes import ProbeSplit, ProbeTable, layer_probes_with_control
from ..features.shipped import example_grid
from ..features.similarity import correspondence
from ..features.targets import TARGET_NAMES, TARGETS, patch_targets
from ..features.layer_tokens import LayerTokens, layer_tokens, num_blocks
from ..models.loading import LoadedModel, load_choice
from ..models.runner import runs_with_model
from ..plots.features import cls_gap_figure, llrd_figure, probe_figure
from ..render.attention import heat_overlay
from ..core.patches import pixel_to_patch
from ..render._draw import hw, panel_size
from ..render.features import pca_grid
from .attention import model_choices as _choices
from .attention import model_note
from .common import require_image
from .native import native_of, native_pca

__all__ = ["model_note", "num_blocks"]

#: Every family has tokens to show (Swin's stages included).
FAMILIES = ("mae", "vit", "deit", "dino", "dinov2", "swin")
RANDOM_FAMILIES = ("vit", "deit", "dino", "dinov2", "swin")
DEFAULT_MODEL = "mae-tiny"
#: Images side by side in the joint PCA view (this one and the first other examples).
N_PCA = 4
#: Side of one PCA panel and of the clickable similarity overlays, in pixels.
PANEL = 224
VIEW_PX = 336
#: Longer side of a similarity panel of a photo at its own shape (about 10 px a column at 46 columns).
NATIVE_PANEL = 448
#: Seed of the shuffled-target control.
CONTROL_SEED = 0

HELP_PCA = (
    "**PCA feature maps** (as in the DINOv2 paper): the patch tokens of the chosen layer, from all four images "
    "together, are projected on their first three principal components, which become red, green and blue. "
    "Because the PCA is fitted **jointly**, one colour means one direction of the token space in every image. "
    "Layer 0 is the patch embedding plus the position embedding (the slider says when a model has none: "
    "Swin adds position only as a relative bias inside attention); each step right is one more block. "
    "**Foreground only** splits each image on the first component (the side that touches the border less is "
    "the foreground) and refits the colours on the foreground tokens. *(DINOv2, Oquab et al. 2023, fig. 1)*"
)
HELP_SIMILARITY = (
    "**Patch correspondence**: click a patch of the left image. Each map shows the **cosine similarity** of that "
    "patch's token with every patch token of the same layer, in this image and in the second image "
    "(−1 dark, +1 yellow); the red box on the right marks the best match. The mean patch token of the two "
    "images is subtracted first: every token of a layer shares a large common direction that would make all "
    "cosines close to 1. Early layers match by colour and "
    "position; in deeper layers of a trained model, by what the patch shows."
    " *(DINO, Caron et al. 2021; DINOv2, Oquab et al. 2023)*"
)
HELP_PROBES = (
    "**Probes by depth, no labels needed.** For every layer a linear ridge regression (closed form, strength "
    "chosen by cross-validation leaving one fitting image out) reads each patch token and predicts things the "
    "image itself tells us: the patch's **row and column** (position), its **mean colour** and its **edge "
    "energy** (texture). The probes are fitted on the other example photos and scored, as R², on this one: "
    "1 = read perfectly, 0 = no better than the fitting photos' average. Dotted grey: the same probes with "
    "the targets shuffled across all patches of all photos (the control: about 0). A low R² says a *linear* "
    "read-out fails, not that the information is absent: a non-linear read-out, or fine-tuning, may find it, "
    "and in MAE linear probing and fine-tuning even rank masking ratios differently."
    " *(linear probes: Alain & Bengio 2016; MAE §4.1, fig. 5)*"
)
HELP_POOLING = (
    "**Class token or average pooling?** A classifier summarises the image in one vector: the class token, or "
    "the average of the patch tokens (global average pooling). The chart gives the cosine of the two at every "
    "layer. The top-5 lists send **both** through the **same** classifier head: the head was trained on one of "
    "them, so the other reaches it as a vector it never saw — they can disagree even when the cosine is high. "
    "Below: the class token's last-layer attention over the patches beside the uniform weights (1/P each) that "
    "average pooling gives them. *(ViT appendix D.3, fig. 9; MAE appendix A.1)*"
)
HELP_LLRD = (
    "**Layer-wise learning-rate decay** (BEiT, MAE fine-tuning): `{formula}`. The head learns at the full rate "
    "and every layer below at `decay` times the rate of the one above, so the lower layers — whose general "
    "features (position, colour, edges) pretraining already made useful — move less while the top adapts."
    " *(ELECTRA, Clark et al. 2020; MAE appendix A.1, table 9)*"
)


def model_choices() -> list[tuple[str, str]]:
    """(label, value) pairs for every family with tokens (Swin included)."""
    return _choices(FAMILIES, RANDOM_FAMILIES)


def tokens_for(image: Any, choice: str | None, native: Any = False, side: Any = None
               ) -> tuple[LoadedModel, LayerTokens]:
    """The picked model and its (cached) tokens of every layer for the image: the square view, or the photo at
    its own shape with its longer side ``side`` when ``native`` is on and the model takes any grid
    (:func:`vitviz.views.native.native_of`)."""
    require_image(image)
    model = load_choice(choice)
    s = native_of(model, native, side)
    return model, layer_tokens(model, image) if s is None else layer_tokens(model, image, "native", s)



def has_absolute_position_embedding(model: LoadedModel) -> bool:
    """Whether layer 0 includes an absolute position embedding: a ViT's ``pos_embed``, an MAE's fixed
    sin-cos table, or Swin's ``absolute_pos_embed`` (off by default: Swin §3.2, ``ape=False``)."""
    m = model.architecture
    return any(getattr(m, name, None) is not None for name in ("pos_embed", "absolute_pos_embed"))


def layer0_label(model: LoadedModel) -> str:
    """What layer 0 of the picked model is, for the slider, the help and the probe chart's axis."""
    if has_absolute_position_embedding(model):
        return "patch + position embedding"
    return "patch embedding; no absolute position embedding"


def layer0_label_of(choice: str | None) -> str:
    """:func:`layer0_label` of a model choice."""
    return layer0_label(load_choice(choice))


def depth_of(choice: str | None) -> int:
    """Blocks of the picked model: the layer slider runs from 0 (embedding) to this."""
    return num_blocks(load_choice(choice))


def layer_index(lt: LayerTokens, layer: Any) -> int:
    """A layer from the slider: ``0..n-1`` (0 = embedding)."""
    try:
        f = float(layer)
    except (TypeError, ValueError):
        raise ValueError(f"layer must be a whole number, got {layer!r}") from None
    if not np.isfinite(f):
        raise ValueError(f"layer must be a whole number, got {layer!r}")
    return lt.check_layer(int(round(f)))


def _tag(lt: LayerTokens) -> str:
    return " (random weights)" if lt.random_init else ""


def _name(path: str) -> str:
    return Path(path).stem


def companions(model: LoadedModel, image: Any, k: int) -> list[tuple[str, str]]:
    """The first ``k`` example photos whose view differs from the image's: ``(name, path)``."""
    view = square_view(image, model.input_size)
    out = []
    for path in example_images():
        if len(out) >= k:
            break
        if not np.array_equal(square_view(path, model.input_size), view):
            out.append((_name(path), path))
    return out


def example_choices() -> list[tuple[str, str]]:
    """(name, path) of every example photo, for the second image of the correspondence."""
    return [(_name(p), p) for p in example_images()]


# --------------------------------------------------------------------------------------
# PCA maps
# --------------------------------------------------------------------------------------


def pca_view(image: Any, choice: str | None, layer: Any, foreground: bool = False, native: Any = False,
             side: Any = None) -> tuple[np.ndarray, str]:
    """Joint PCA maps of this image and three example photos at one layer -> (panel grid, caption).

    With ``native`` (a model that takes any grid): the photo at its own shape, ``side`` px on its longer
    side, and the PCA fitted on its tokens alone, photo and map side by side.
    """
    model, lt = tokens_for(image, choice, native, side)
    li = layer_index(lt, layer)
    if native_of(model, native, side) is not None:
        return native_pca(lt, li, foreground, _tag(lt))
    others = companions(model, image, N_PCA - 1)
    # (name, view, patch grid); the examples' tokens ship for dinov2-small (features/shipped.py)
    sets = [("this image", lt.image, lt.patch_grid(li))] + [(name, *example_grid(model, path, li))
                                                            for name, path in others]
    grids = [g for _, _, g in sets]
    if foreground:
        maps, masks = foreground_pca_maps(grids)
        fg = ", ".join(f"{name} {100 * m.mean():.0f}%" for (name, _, _), m in zip(sets, masks))
        extra = f" Foreground share: {fg}."
    else:
        maps = joint_pca_maps(grids)
        extra = ""
    panel = pca_grid([(name, view, rgb) for (name, view, _), rgb in zip(sets, maps.rgb)], PANEL)
    ev = maps.basis.explained
    gh, gw = lt.layouts[li].grid
    text = (f"**{lt.names[li]}** (layer {li} of {lt.num_layers - 1}){_tag(lt)} · {gh}x{gw} patches of "
            f"{lt.patch_size(li)} px, {grids[0].shape[-1]} channels. Joint PCA over {len(sets)} images "
            f"({maps.basis.num_tokens} tokens): the three components hold {100 * ev[0]:.1f}%, {100 * ev[1]:.1f}% "
            f"and {100 * ev[2]:.1f}% of the variance (red, green, blue).{extra}")
    return panel, text


# --------------------------------------------------------------------------------------
# Patch correspondence
# --------------------------------------------------------------------------------------


def _sim_size(shape: tuple[int, ...]) -> int | tuple[int, int]:
    """The similarity panel of a view: :data:`VIEW_PX` square, or a photo at its own shape with its longer side
    :data:`NATIVE_PANEL` (about 10 px a column at 46 columns, enough to click one)."""
    return VIEW_PX if shape[0] == shape[1] else panel_size(shape, NATIVE_PANEL)


def pick_patch(image: Any, choice: str | None, layer: Any, x: float, y: float, native: Any = False,
               side: Any = None) -> tuple[int, int]:
    """Pixel ``(x, y)`` of the left similarity view -> grid ``(row, col)`` at that layer."""
    _, lt = tokens_for(image, choice, native, side)
    lay = lt.layouts[layer_index(lt, layer)]
    h, w = hw(_sim_size(lt.image.shape))
    return pixel_to_patch(float(x) / w, float(y) / h, lay.grid, 1.0)


def _query(lt: LayerTokens, li: int, row: Any, col: Any) -> tuple[int, int]:
    """Clamp a query to this layer's grid (Swin's grid shrinks with depth)."""
    try:
        r, c = int(row), int(col)
    except (TypeError, ValueError):
        raise ValueError(f"row and column must be whole numbers, got {row!r}, {col!r}") from None
    gh, gw = lt.layouts[li].grid
    if r < 0 or c < 0:
        raise ValueError(f"row and column must be 0 or more, got ({r}, {c})")
    return min(r, gh - 1), min(c, gw - 1)


def similarity_view(image: Any, choice: str | None, layer: Any, row: Any, col: Any, other: str | None,
                    other_image: Any = None, native: Any = False,
                    side: Any = None) -> tuple[np.ndarray, np.ndarray, str]:
    """Cosine maps of one patch within the image and across to a second image -> (left, right, caption).

    Args:
        other: the second image by an example photo's name (``chelsea``): never a path, so a
            request cannot name a server file and an error lists names only.
        other_image: the visitor's own second photo (an upload, or anything :func:`vitviz.load_image`
            reads); when given it replaces ``other``.
    """
    model, lt = tokens_for(image, choice, native, side)
    li = layer_index(lt, layer)
    if other_image is not None and not (isinstance(other_image, str) and not other_image):
        other_path, other_label = other_image, "your second photo"
    else:
        paths = dict(example_choices())
        if str(other) not in paths:
            raise ValueError(f"unknown second image {other!r}; choose one of {', '.join(paths)}, or drop your own")
        other_path, other_label = paths[str(other)], str(other)
    s = native_of(model, native, side)
    if s is None:
        view2, grid2 = example_grid(model, other_path, li)  # shipped for an example photo, else computed
    else:  # the second photo at its own shape too, at the same side
        lt2 = layer_tokens(model, other_path, "native", s)
        view2, grid2 = lt2.image, lt2.patch_grid(li)
    r, c = _query(lt, li, row, col)
    corr = correspondence(lt.patch_grid(li), r, c, grid2)
    left = heat_overlay(lt.image, (corr.same + 1) / 2, _sim_size(lt.image.shape), vmax=1.0, query=(r, c),
                        label=f"{lt.names[li]} · patch (row {r}, col {c})")
    right = heat_overlay(view2, (corr.other + 1) / 2, _sim_size(view2.shape), vmax=1.0, query=corr.best,
                         label=f"best match (row {corr.best[0]}, col {corr.best[1]}) · cos {corr.best_score:.2f}")
    same = np.delete(corr.same.reshape(-1), r * corr.same.shape[1] + c)
    text = (f"**{lt.names[li]}**{_tag(lt)}, query patch (row {r}, col {c}). In this image the other patches' "
            f"cosine ranges {same.min():.2f} to {same.max():.2f} (median {np.median(same):.2f}); in "
            f"*{other_label}* the best match is (row {corr.best[0]}, col {corr.best[1]}) at "
            f"{corr.best_score:.2f}, the median {np.median(corr.other):.2f}.")
    return left, right, text


# --------------------------------------------------------------------------------------
# Probes by depth
# --------------------------------------------------------------------------------------

#: Probe tables per (model, image): the probes refit only when one of them changes.
_PROBES: LRU[tuple, tuple[ProbeTable, ProbeTable]] = LRU(8)


@runs_with_model
def probe_tables(model: LoadedModel, image: Any) -> tuple[ProbeTable, ProbeTable]:
    """Probes of every layer and their shuffled-target control for an image (cached where they are fitted: with
    model workers, in the worker, beside the tokens: :func:`~vitviz.models.runner.runs_with_model`).

    Fitted on the example photos other than this image, scored on this image. A photo that is none of them
    is fitted on the same photos as the tab's first view (every example but :func:`vitviz.assets.default_example`),
    so it reuses that view's fits (their decompositions are kept by content, ``features.probes._design``):
    13 layers x 5 eigendecompositions of 384 x 384 on dinov2-small, 1.4 s on a 2-core CPU.
    """
    lt = layer_tokens(model, image)
    n_examples = len(example_images())
    others = companions(model, image, n_examples)
    if len(others) == n_examples and n_examples > 3:  # not an example: drop the first view's photo
        others = [(name, path) for name, path in others if path != default_example()]
    if not others:
        raise ValueError("probes need example photos to fit on; none were found")
    sets = [lt] + [layer_tokens(model, p) for _, p in others]
    digest = hashlib.blake2b(np.ascontiguousarray(lt.image).tobytes(), digest_size=16).hexdigest()
    key = (model.choice, str(model.device), id(model.architecture), digest, tuple(p for _, p in others))

    def compute() -> tuple[ProbeTable, ProbeTable]:
        feats, targets = [], []
        for t in sets:
            feats.append([t.tokens[i][t.layouts[i].num_prefix:] for i in range(t.num_layers)])
            by_size: dict[int, dict] = {}  # a plain ViT's layers share one grid: its targets are computed once
            for size in {t.patch_size(i) for i in range(t.num_layers)}:
                by_size[size] = patch_targets(t.image, size)
            targets.append([by_size[t.patch_size(i)] for i in range(t.num_layers)])
        split = ProbeSplit(tuple(range(1, len(sets))), (0,), ("this image",) + tuple(n for n, _ in others))
        return _by_layer(feats, targets, split, lt.names)

    return _PROBES.get_or_compute(key, compute)


def warm_probes(choice: str | None) -> None:
    """Prepare, before a visitor asks, what a new photo's probes are fitted on: the example photos' tokens of
    every layer and the token side of each fit on them (:func:`vitviz.features.probes.solve_ridge` keeps
    it by content). A grey square stands in for the photo: no example, so it is fitted on the photos a
    visitor's photo is (:func:`probe_tables`). Only caches fill; no result changes."""
    model = load_choice(choice)
    probe_tables(model, np.full((model.input_size, model.input_size, 3), 128, np.uint8))


def _by_layer(feats: list[list[np.ndarray]], targets: list[list[dict]], split: ProbeSplit,
              names: tuple[str, ...]) -> tuple[ProbeTable, ProbeTable]:
    """Probes and control layer by layer (Swin's layers differ in grid and width), stacked into tables."""
    real, ctrl = [], []
    for i in range(len(names)):
        t, c = layer_probes_with_control([f[i][None] for f in feats], [tg[i] for tg in targets], split,
                                         CONTROL_SEED, layers=[names[i]])
        real.append(t)
        ctrl.append(c)

    def stack(ts: list[ProbeTable], shuffled: bool) -> ProbeTable:
        return ProbeTable(tuple(names), ts[0].targets, np.concatenate([t.r2 for t in ts]),
                          np.concatenate([t.alpha for t in ts]), split, ts[0].fit_patches, ts[0].score_patches,
                          shuffled)

    return stack(real, False), stack(ctrl, True)


def _trend(table: ProbeTable) -> str:
    """One data-driven sentence per target: where it peaks and where it ends."""
    parts = []
    for t in TARGETS:
        col = table.column(t)
        best = int(np.nanargmax(col))
        parts.append(f"{TARGET_NAMES[t]} peaks at layer {best} (R² {col[best]:.2f}) and ends at {col[-1]:.2f}")
    return "; ".join(parts) + "."


def probe_view(image: Any, choice: str | None) -> tuple[go.Figure, list[list[Any]], str]:
    """Probe R^2 by layer -> (chart, table rows ``[layer, name, row, column, colour, edges]``, caption)."""
    model, lt = tokens_for(image, choice)
    table, control = probe_tables(model, image)
    fig = probe_figure(table.layers, table.r2, table.targets, TARGET_NAMES,
                       f"{model.name}{_tag(lt)}: what a linear probe reads from each layer", control.r2,
                       layer0=layer0_label(model))
    rows = [[i, name] + [round(float(v), 3) for v in table.r2[i]] for i, name in enumerate(table.layers)]
    text = f"{table.describe()} {_trend(table)}"
    return fig, rows, text


def probe_headers() -> list[str]:
    """Column titles of :func:`probe_view`'s table."""
    return ["layer", "name"] + [TARGET_NAMES[t] for t in TARGETS]


def probe_markdown(rows: list[list[Any]]) -> str:
    """:func:`probe_view`'s rows as a Markdown table (R^2 to three decimals)."""
    heads = probe_headers()
    lines = ["| " + " | ".join(heads) + " |", "| --- | --- |" + " ---: |" * (len(heads) - 2)]
    for row in rows:
        cells = [str(row[0]), str(row[1])] + [f"{float(x):.3f}" for x in row[2:]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Class token vs average pooling
# --------------------------------------------------------------------------------------


def pooling_view(image: Any, choice: str | None) -> tuple[go.Figure | None, dict | None, dict | None,
                                                          np.ndarray | None, str]:
    """CLS-vs-GAP cosine by layer, both through one head, and the class token's attention vs uniform."""
    model, lt = tokens_for(image, choice)
    if lt.num_prefix == 0:
        top = {n: p for n, p in lt.top_k("model", 5)} or None
        return (None, top, None, None,
                f"*{model.name} has no class token: it always pools by averaging its last stage's tokens "
                "(the top-5 on the left come from that average).*")
    cos = np.array([float(cls_gap_cosine(t, lay.num_prefix)) for t, lay in zip(lt.tokens, lt.layouts)])
    fig = cls_gap_figure(lt.names, cos, f"{model.name}{_tag(lt)}: class token vs patch average")
    maps = attention(model, lt.image)
    cls_att = maps.query_mean(-1, "cls")
    patch_share = float(np.nansum(cls_att))
    uniform = np.full_like(cls_att, patch_share / cls_att.size)
    vmax = float(np.nanmax(cls_att))
    att = np.concatenate([
        heat_overlay(lt.image, cls_att, PANEL, vmax=vmax, label="class token attention, last layer"),
        np.full((PANEL, 12, 3), 255, np.uint8),
        heat_overlay(lt.image, uniform, PANEL, vmax=vmax, label="average pooling: uniform"),
    ], axis=1)
    text = (f"Cosine of the class token and the patch average: {cos[0]:.2f} at the embedding, {cos[-1]:.2f} after "
            f"the last block{_tag(lt)}. Last layer: the class token gives {100 * patch_share:.0f}% of its attention "
            f"to the patches (the rest to prefix tokens); the largest single share is {100 * vmax:.1f}% against "
            f"{100 * patch_share / cls_att.size:.2f}% each under uniform weights (same colour scale).")
    if lt.cls_logits is None:
        return fig, None, None, att, text + f" *{model.name} has no classifier head: no labels.*"
    cls_top = {n: p for n, p in lt.top_k("cls", 5)}
    gap_top = {n: p for n, p in lt.top_k("gap", 5)}
    trained = "the class token" if lt.head_pool == "token" else "the patch average"
    agree = topk_overlap(lt.cls_logits, lt.gap_logits, 5)
    text += (f" The head was trained on **{trained}**; the two top-5 lists share {agree} of 5 classes."
             + (" *Random weights: the labels mean nothing.*" if lt.random_init else ""))
    if "dist" in lt.layouts[-1].prefix:
        text += " (DeiT's own prediction also averages a second head reading the distillation token.)"
    return fig, cls_top, gap_top, att, text


# --------------------------------------------------------------------------------------
# Layer-wise learning-rate decay
# --------------------------------------------------------------------------------------


def llrd_view() -> tuple[go.Figure, str]:
    """The LLRD chart for decays 0.65, 0.75, 0.9 at depths 12 and 24, and its explanation."""
    curves = [(d, k, llrd_multipliers(d, k)) for d in DEPTHS for k in DECAYS]
    fig = llrd_figure(curves, "Layer-wise learning-rate decay: multiplier of each layer's learning rate")
    lows = ", ".join(f"{k:g}: ×{llrd_multipliers(12, k)[0]:.3g}" for k in DECAYS)
    return fig, HELP_LLRD.format(formula=FORMULA) + f" At depth 12 the embeddings get, for decay {lows}."
