"""What the Patches tab shows: the patch grid, the token sequence, a patch's pixels and
embedding, position-embedding maps, another resolution, and the shuffle experiment.

Points are ``(x, y)`` fractions of the square view (:func:`vitviz.core.patches.pixel_to_patch`
with ``size=1``); models are picker values (a registry name, or ``name:random``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..compute.formulas import global_attention_flops
from ..core.images import square_view
from ..core.patches import PatchGrid, check_patch, grid_view, patch_center, pixel_to_patch, pixel_vector, \
    snap_to_patch, token_patches
from ..core.pos_embed import similarity_grid, sincos_at
from ..embedding.resolution import resized_model, run_at_resolution
from ..embedding.shuffle import shuffle_demo
from ..embedding.sequence import POS_FAMILIES, class_token_embedding, patch_embedding, position_embeddings
from ..mae.reconstruct import reconstruct
from ..models.loading import LoadedModel, available_models, load_choice
from ..models.mae import MaskedAutoencoderViT
from ..models.runner import on_module
from ..models.registry import RANDOM_SUFFIX, get_spec, model_names
from ..plots.patches import embedding_figure, pixel_vector_figure
from ..render._draw import label_row
from ..render.mae import grid_overlay
from ..render.patches import (MosaicLayout, OverlayLayout, StripLayout, color_range, mark_patch, patch_grid_overlay,
                             shuffled_view, similarity_image, similarity_mosaic, token_strip)
from .common import as_seed, enlargement_note, model_label, require_image

#: Patch sizes offered by the tab.
PATCH_SIZES: tuple[int, ...] = (4, 8, 14, 16, 32)
#: Width used for the FLOPs readout of one attention layer (ViT-B).
REFERENCE_WIDTH = 768
#: Default selected point, ``(x, y)`` fractions of the view: patch (row 4, col 9) of a 14x14 grid.
DEFAULT_POINT = (9.5 / 14, 4.5 / 14)
#: White band above drawn images: Gradio puts the component's label over their top-left corner.
LABEL_PAD = 26
MAE_RATIO, MAE_SEED = 0.75, 0


def attention_gflops(g: PatchGrid) -> float:
    """``4 (N+1)^2 C`` FLOPs of ``QK^T`` and ``AV`` at width ``C = 768``, in GFLOPs."""
    return global_attention_flops(g.seq_len, REFERENCE_WIDTH) / 1e9


def readouts(g: PatchGrid) -> dict:
    """The numbers of the readout, JSON-ready (the grid's own plus the attention cost)."""
    return {**g.readouts(), "attention_gflops_c768": attention_gflops(g)}


def _sincos(m: LoadedModel) -> bool:
    """True for fixed 2-D sin-cos position embeddings (MAE), False for learned ones."""
    return isinstance(m.architecture, MaskedAutoencoderViT)


def load(choice: str) -> LoadedModel:
    """The model behind a picker value of this tab (:func:`model_keys`); others are refused.

    Raises:
        ValueError: a value the tab does not offer (the message lists the valid ones).
        ModelUnavailable: trained weights that cannot be had here.
    """
    keys = model_keys()
    if not isinstance(choice, str) or choice not in keys:
        raise ValueError(f"unknown model {choice!r}; choose one of {', '.join(keys)}")
    return load_choice(choice)


def point_of(point: Any) -> tuple[float, float]:
    """A stored point as ``(x, y)`` fractions (the default when missing)."""
    if isinstance(point, (list, tuple)) and len(point) == 2:
        return float(point[0]), float(point[1])
    return DEFAULT_POINT


def model_choices() -> list[tuple[str, str]]:
    """``(label, key)`` pairs for the model picker.

    Every registered model with absolute position embeddings whose weights can be had
    here (``vitviz.available_models``), and, for the timm architectures (ViT, DeiT,
    DINO), the same architecture with seeded random weights, which works offline.
    """
    out = []
    for info in available_models():
        if info.family not in POS_FAMILIES:
            continue
        if info.available:
            note = f" ({info.reason.replace('will download', 'downloads')})" if info.reason else ""
            out.append((model_label(info, f"{info.name}: trained weights{note}"), info.name))
        if info.family != "mae":
            out.append((f"{info.name}: random weights (architecture only)", info.name + RANDOM_SUFFIX))
    return out


def model_keys() -> list[str]:
    """Every picker value this tab accepts (whether or not the weights are here)."""
    keys = []
    for name in model_names():
        family = get_spec(name).family
        if family in POS_FAMILIES:
            keys.append(name)
            if family != "mae":
                keys.append(name + RANDOM_SUFFIX)
    return keys


def readout_markdown(g: PatchGrid) -> str:
    """The live readout of a patch grid, as Markdown."""
    gh, gw = g.grid
    h, w = g.image_size
    rh, rw = g.resized
    snapped = (f"{g.requested} px is not a multiple of {g.patch_size}: using the nearest, **{g.side} px**. "
               if g.side != g.requested else "")
    if g.crop_left or g.crop_top:
        lost = g.crop_left * 2 if g.crop_left else g.crop_top * 2
        axis = "width" if g.crop_left else "height"
        crop = (f"Your {w}×{h} image → {rw}×{rh} (shorter side {g.side} px) → centre crop {g.side}×{g.side} "
                f"(about {lost} px of the {axis} cut off).")
    else:
        crop = f"Your {w}×{h} image → {g.side}×{g.side} (square: nothing is cut off)."
    enlarged = enlargement_note(w, h, g.side, g.patch_size)
    return (
        f"**Grid** {gh} × {gw} patches of {g.patch_size} px at {g.side}×{g.side} px  ·  "
        f"**N** = {g.num_patches:,} patch tokens  ·  **N + 1** = {g.seq_len:,} with [CLS]  ·  "
        f"**P·P·3** = {g.patch_dim:,} numbers per patch\n\n"
        f"**One global attention layer** compares every token with every token: (N+1)² = "
        f"{g.attention_pairs:,} pairs, **{g.relative_attention_cost:.3g}×** ViT-B/16 at 224 px (197 tokens); "
        f"its products QKᵀ and AV cost 4·(N+1)²·C = {attention_gflops(g):.3g} GFLOPs at C = 768.\n\n"
        f"{snapped}{crop}" + (f"\n\n{enlarged}" if enlarged else "")
    )


def position_note(m: LoadedModel) -> str:
    """What the picked model's position embeddings are, and whether its maps mean anything."""
    pos = on_module(m, position_embeddings)
    gh, gw = pos.grid
    d = pos.full.shape[-1]
    head = (f"**{m.name}**: patch {m.patch_size} at {m.input_size} px → {gh}×{gw} grid, position embeddings "
            f"of {d} numbers for {pos.num_prefix} prefix token(s) and {gh * gw} patches.")
    if _sincos(m):
        return head + (" **Fixed 2-D sin-cos** embeddings (not learned): half of the numbers encode the "
                       "column and half the row at many frequencies, so each map is brightest along the "
                       "patch's own row and column, fading with distance.")
    if m.random_init:
        return head + (" ⚠️ **Random weights**: this is the architecture with a seeded random initialisation, "
                       "not the published weights (those are not embedded: they need a download or a weights "
                       "folder). Its *learned* position embeddings are "
                       "untrained random vectors, so **every map is noise**: 1 on the patch itself and near 0 "
                       "elsewhere (trained ViTs show smooth row and column structure). The shapes, the "
                       "interpolation and the shuffle demonstration do not depend on training.")
    return head + (" **Learned** embeddings: nothing told the model about 2-D space, yet nearby patches end up "
                   "with similar embeddings and rows and columns show up as stripes.")


def token_text(g: PatchGrid, index: int | None) -> str:
    gh, gw = g.grid
    if index is None:
        return ("**[CLS]** selected: token 0 of the sequence. It has no pixels: it is one learned vector, the same "
                "for every image, which gathers information from the patches through attention.")
    r, c = divmod(index, gw)
    return (f"**Patch p{index + 1}** (row {r}, column {c} of the {gh}×{gw} grid) is token {index + 1} of "
            f"{g.seq_len:,}. Its {g.patch_dim:,} numbers are {g.patch_size}×{g.patch_size} pixels × 3 channels, "
            "flattened row by row, R G B per pixel.")


def sincos_note(new: tuple[int, int], old: tuple[int, int]) -> str:
    """Why recomputed sin-cos and interpolated embeddings differ at a new grid."""
    if new[0] > old[0]:
        return (f"Recomputed sin-cos continues counting past row and column {old[0] - 1}, positions the model never "
                "saw in training; interpolation stretches the range it knows over the bigger grid.")
    if new[0] < old[0]:
        return (f"Recomputed sin-cos uses only positions 0..{new[0] - 1} of the {old[0]} the model knows (as if "
                "the image were its top-left corner); interpolation squeezes the whole range into the smaller grid.")
    return "At the training grid both are the model's own embeddings."


@dataclass(frozen=True)
class GridViews:
    """The patch grid, its readouts, the token strip and the selected patch's pixels (layouts: for clicks)."""

    overlay: np.ndarray
    readout: str
    numbers: dict
    overlay_layout: OverlayLayout
    strip: np.ndarray
    strip_layout: StripLayout
    pixels_plot: go.Figure
    token_text: str


@dataclass(frozen=True)
class EmbeddingViews:
    """The selected patch's row and column in the model's grid, its embedding E·x + b, the model note."""

    row: int
    col: int
    embed_plot: go.Figure
    embed_text: str
    note: str


@dataclass(frozen=True)
class PosViews:
    """One patch's position-similarity map, the map of maps, and the mosaic's layout (for clicks)."""

    sim_map: np.ndarray
    mosaic: np.ndarray
    mosaic_layout: MosaicLayout


@dataclass(frozen=True)
class ShuffleViews:
    """The shuffle demonstration: the patches in place and shuffled (the selected one outlined), a table."""

    before: np.ndarray
    after: np.ndarray
    shuffle_text: str


@dataclass(frozen=True)
class Selection:
    """The selected point (in the view, fractions) and whether the class token is selected instead."""

    point: Any
    on_cls: bool


def grid_views(image: Any, patch_size: Any, resolution: Any, point: Any, on_cls: bool) -> GridViews:
    """The grid, readouts, token strip and the selected patch's pixels."""
    require_image(image)
    g, resized, view = grid_view(image, int(patch_size), int(resolution))
    r, c = pixel_to_patch(*point_of(point), g.grid, 1.0)
    index = r * g.grid[1] + c
    overlay, layout = patch_grid_overlay(g, resized, selected=None if on_cls else (r, c))
    strip, strip_layout = token_strip(token_patches(view, g.patch_size), selected=0 if on_cls else index + 1,
                                      pad_top=LABEL_PAD)
    if on_cls:
        fig = go.Figure()
        fig.add_annotation(text="[CLS] has no pixels: it is a learned vector (its embedding is on the right)",
                           showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
        fig.update_layout(height=280, template="plotly_white", xaxis=dict(visible=False), yaxis=dict(visible=False))
    else:
        fig = pixel_vector_figure(pixel_vector(view, g.patch_size, index), g.patch_size,
                                  f"p{index + 1} flattened: {g.patch_size}×{g.patch_size}×3 = {g.patch_dim} numbers")
    return GridViews(overlay, readout_markdown(g), readouts(g), layout, strip, strip_layout, fig,
                     token_text(g, None if on_cls else index))


def embedding_views(image: Any, choice: str, resolution: Any, point: Any, on_cls: bool) -> EmbeddingViews:
    """Row/column of the selected patch in the model's grid, its embedding E·x, the model note."""
    require_image(image)
    m = load(choice)
    r, c = pixel_to_patch(*point_of(point), m.grid, 1.0)
    side = snap_to_patch(int(resolution), m.patch_size)
    g = side // m.patch_size
    e_dim = m.architecture.patch_embed.proj.out_channels
    k_in = m.patch_size * m.patch_size * 3
    if on_cls:
        vec = on_module(m, class_token_embedding)
        fig = embedding_figure(vec, f"{m.name}: the [CLS] token ({e_dim} numbers, learned)")
        text = (f"**[CLS]** in {m.name}: a learned vector of {e_dim} numbers (plus its position embedding); it is "
                "not computed from pixels." + (" Random weights: these numbers are untrained." if m.random_init
                                               else ""))
    else:
        rr, cc = pixel_to_patch(*point_of(point), (g, g), 1.0)
        vec = on_module(m, patch_embedding, m.data_config, square_view(image, side), rr * g + cc)
        fig = embedding_figure(vec, f"{m.name}: E·x + b for its patch ({rr}, {cc})")
        text = (f"**Embedding:** {m.name} cuts {m.patch_size}-px patches; at {side} px its grid is {g}×{g}, and its "
                f"patch ({rr}, {cc}) holds the centre of your patch. Its {k_in:,} normalised pixel values times "
                f"**E** ({e_dim}×{k_in:,}) plus a bias give the {e_dim} numbers above: the patch's token, before "
                "the position embedding is added."
                + (" ⚠️ Random weights: E is untrained." if m.random_init else ""))
    return EmbeddingViews(r, c, fig, text, position_note(m))


def pos_views(choice: str, row: Any, col: Any) -> PosViews:
    """One patch's position-similarity map, the map of maps, and the mosaic's layout (for clicks)."""
    m = load(choice)
    pos = on_module(m, position_embeddings)
    if row is None or col is None:
        raise ValueError("give a row and a column")
    r, c = int(row), int(col)
    check_patch(r, c, pos.grid)
    sims = similarity_grid(pos.patches, pos.grid)
    vmin, vmax = color_range(sims)
    one = similarity_image(sims[r, c], (r, c), vmin, vmax, pad_top=LABEL_PAD)
    mosaic, layout = similarity_mosaic(sims, vmin, vmax, selected=(r, c), pad_top=LABEL_PAD)
    return PosViews(one, mosaic, layout)


def resolution_views(image: Any, choice: str, resolution: Any) -> tuple:
    """The model at another resolution: interpolated maps and, for an MAE, reconstructions.

    Returns:
        ``(text_md, interpolated_maps, recomputed_maps or None, reconstructions or None)``;
        the last two only for an MAE (sin-cos embeddings).
    """
    require_image(image)
    m = load(choice)
    side = snap_to_patch(int(resolution), m.patch_size)
    view = square_view(image, side)
    run = run_at_resolution(m, view)
    pos = on_module(m, position_embeddings)
    sims = similarity_grid(run.pos.patches, run.grid)
    vmin, vmax = color_range(sims)
    interp, _ = similarity_mosaic(sims, vmin, vmax, target=520, pad_top=LABEL_PAD)
    (gh, gw), (oh, ow) = run.grid, pos.grid
    same = run.grid == pos.grid
    lines = [
        f"**{m.name} at {side}×{side} px**: {gh}×{gw} = {gh * gw:,} patches + {pos.num_prefix} prefix token(s); "
        f"encoder output {tuple(run.output_shape)} in {1000 * run.seconds:.0f} ms on this machine.",
        ("Same grid as in training: resampling returns the stored embeddings unchanged."
         if same else f"Position embeddings resampled bicubically from {oh}×{ow} to {gh}×{gw}: the pattern "
                      "is stretched, so every patch keeps a position the model knows."),
    ]
    if not _sincos(m):
        return "\n\n".join(lines), interp, None, None
    sin = sincos_at(pos, run.grid)
    s2 = similarity_grid(sin.patches, run.grid)
    lo = min(vmin, color_range(s2)[0])
    interp, _ = similarity_mosaic(sims, lo, 1.0, target=520, pad_top=LABEL_PAD)
    recomputed, _ = similarity_mosaic(s2, lo, 1.0, target=520, pad_top=LABEL_PAD)
    panels, mse = [], []
    for method, title in (("sincos", "sin-cos recomputed"), ("bicubic", "bicubic interpolated")):
        r = reconstruct(resized_model(m, side, method), image, MAE_RATIO, MAE_SEED, "random")
        if not panels:
            panels += [(f"{side} px input", grid_overlay(r.original, m.patch_size, alpha=0.25)),
                       (f"masked {int(MAE_RATIO * 100)}%", r.masked)]
        panels.append((f"{title} + visible", r.pasted))
        mse.append((title, r.masked_mse))
    native = reconstruct(m, image, MAE_RATIO, MAE_SEED, "random")
    lines.append("**MAE reconstruction** (75% hidden, seed 0), hidden-patch MSE: "
                 + ", ".join(f"{t} **{v:.4f}**" for t, v in mse)
                 + f"; at its own {m.input_size} px: {native.masked_mse:.4f}. " + sincos_note(run.grid, pos.grid))
    return "\n\n".join(lines), interp, recomputed, label_row(panels)


def shuffle_views(image: Any, choice: str, seed: Any, row: Any, col: Any) -> ShuffleViews:
    """The shuffle demonstration for the selected patch: before, after, a table of differences."""
    require_image(image)
    m = load(choice)
    s = as_seed(seed)
    view = square_view(image, m.input_size)
    i = check_patch(int(row), int(col), m.grid)
    res = on_module(m, shuffle_demo, m.data_config, view, s)
    j = int(res.where[i])
    gh, gw = m.grid
    scale = max(1, 448 // m.input_size)
    before = mark_patch(view, m.patch_size, i, m.grid, scale)
    after = mark_patch(shuffled_view(view, m.patch_size, res.perm), m.patch_size, j, m.grid, scale)
    ok = "holds" if res.max_diff_without < 1e-5 else "does not hold"
    text = (
        f"Seed {s}: patch ({i // gw}, {i % gw}) moves to ({j // gw}, {j % gw}). Max absolute difference of "
        f"encoder outputs (the same patch before vs after the shuffle; outputs are about {res.output_scale:.2f} "
        "in size):\n\n"
        "| | this patch | worst of all patches | [CLS] |\n|---|---|---|---|\n"
        f"| **without** position embeddings | {res.diff_without[i]:.2e} | {res.max_diff_without:.2e} | "
        f"{res.prefix_diff_without:.2e} |\n"
        f"| **with** position embeddings | {res.diff_with[i]:.2e} | {res.max_diff_with:.2e} | "
        f"{res.prefix_diff_with:.2e} |\n\n"
        f"Without positions the differences are float rounding: permutation equivariance **{ok}** (< 1e-5). "
        "With positions the contents moved but the position rows stayed, so the outputs change."
        + (" (Random weights: the numbers differ from a trained model's, the equivariance does not.)"
           if m.random_init else "")
    )
    return ShuffleViews(before, after, text)


# ----------------------------------------------------------------------------- clicks -> selections


def click_overlay(layout: OverlayLayout | None, x: float, y: float, point: Any) -> Selection:
    """A click on the grid selects the patch under it (clicks on the cropped bands keep the selection)."""
    if layout is None:
        return Selection(point, False)
    p = layout.point(x, y)
    return Selection(([p[0], p[1]] if p is not None else point), False)


def click_strip(layout: StripLayout | None, x: float, y: float, patch_size: Any, resolution: Any, point: Any,
                on_cls: bool) -> Selection:
    """A click on the token strip selects that token ([CLS] or a patch)."""
    if layout is None:
        return Selection(point, on_cls)
    t = layout.token_at(x, y)
    if t is None:
        return Selection(point, on_cls)
    if t == 0:
        return Selection(point, True)
    s = snap_to_patch(int(resolution), int(patch_size))
    grid = (s // int(patch_size), s // int(patch_size))
    r, c = divmod(t - 1, grid[1])
    return Selection(list(patch_center(r, c, grid)), False)


def click_mosaic(layout: MosaicLayout | None, x: float, y: float, point: Any) -> Selection:
    """A click on a tile of the map of maps selects that tile's patch."""
    if layout is None:
        return Selection(point, False)
    hit = layout.patch_at(x, y)
    if hit is None:
        return Selection(point, False)
    return Selection(list(patch_center(hit[0], hit[1], layout.grid)), False)


def rowcol_to_point(choice: str, row: Any, col: Any) -> Selection:
    """Typed row/column (in the model's grid) -> the selected point."""
    m = load(choice)
    if row is None or col is None:
        raise ValueError("give a row and a column")
    check_patch(int(row), int(col), m.grid)
    return Selection(list(patch_center(int(row), int(col), m.grid)), False)
