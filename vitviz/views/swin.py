"""What the Swin tab shows: the windows of a stage, the shifted windows, the cyclic shift,
the mask of a clicked token's window, and the attention inside it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..core.images import view_or_synthetic
from ..core.windows import (REGION_LETTERS, StageGeometry, blocked_pairs, stage_geometry, token_at_pixel,
                            token_center_pixel, token_window, window_regions, window_token_positions)
from ..explain.windows import relative_position_bias, swin_model, window_attention
from ..plots.windows import attention_mask_figure, bias_table_figure, window_attention_figure
from ..render.windows import attention_overlay, partition_overlay, rolled_overlay, stage_partitions, \
    window_attention_tiles

#: Side of the model input and of the coordinates a point is given in.
INPUT = 224
#: Side of the three main views.
VIEW_PX = 448


@dataclass(frozen=True)
class SwinViews:
    """Everything the Swin tab draws for one stage and one clicked token.

    Attributes:
        geometry: the stage.
        token: original ``(row, col)`` of the clicked token.
        shifted_block: the block whose shifted layout is shown (1, or 0 if the stage
            has a single block); its shift may be ``(0, 0)`` (e.g. Swin-T stage 4).
        regular, shifted, rolled: ``(size, size, 3)`` uint8 views (see
            :func:`partition_overlay`, :func:`rolled_overlay`).
        stages: the regular partition of every stage, ``(stage_size, stage_size, 3)``.
        window_regular, window_shifted: the token's window in each layout.
        query_index: the token's position in its shifted window.
        blocked: ``(A, A)`` bool mask of the shifted window (rows = queries).
        regions: ``(A,)`` region ids of the shifted window's positions.
        positions: ``(A, 2)`` original ``(row, col)`` of the shifted window's positions.
    """

    geometry: StageGeometry
    token: tuple[int, int]
    shifted_block: int
    regular: np.ndarray
    shifted: np.ndarray
    rolled: np.ndarray
    stages: list[np.ndarray]
    window_regular: int
    window_shifted: int
    query_index: int
    blocked: np.ndarray
    regions: np.ndarray
    positions: np.ndarray


def swin_views(
    image: np.ndarray,
    stage: int,
    token: tuple[int, int],
    geometries: list[StageGeometry] | None = None,
    size: int = 448,
    stage_size: int = 224,
) -> SwinViews:
    """Compute the Swin tab's pictures and the clicked window's mask.

    Args:
        image: ``(S, S, 3)`` uint8 at the model's input size.
        stage: 1-based stage.
        token: original ``(row, col)`` on the stage's grid.
        geometries: per-stage geometry (default: Swin-T at 224, :func:`vitviz.core.windows.stage_geometry`).
        size: side of the three main views; ``stage_size``: side of the per-stage views.
    """
    geoms = stage_geometry(image.shape[0]) if geometries is None else geometries
    if not 1 <= int(stage) <= len(geoms):
        raise ValueError(f"stage must be 1..{len(geoms)}, got {stage!r}")
    g = geoms[int(stage) - 1]
    row, col = int(token[0]), int(token[1])
    if not (0 <= row < g.grid[0] and 0 <= col < g.grid[1]):
        raise ValueError(f"token ({row}, {col}) is outside the {g.grid[0]}x{g.grid[1]} grid of stage {g.stage}")
    sb = 1 if g.depth > 1 else 0
    w_reg, _ = token_window(g, 0, row, col)
    w_sh, q_idx = token_window(g, sb, row, col)
    blocked = blocked_pairs(g.grid, g.window, g.block_shift(sb))[w_sh]
    return SwinViews(
        geometry=g,
        token=(row, col),
        shifted_block=sb,
        regular=partition_overlay(image, g, 0, size, selected_window=w_reg, token=(row, col)),
        shifted=partition_overlay(image, g, sb, size, selected_window=w_sh, token=(row, col)),
        rolled=rolled_overlay(image, g, sb, size, selected_window=w_sh, token=(row, col)),
        stages=stage_partitions(image, geoms, stage_size),
        window_regular=w_reg,
        window_shifted=w_sh,
        query_index=q_idx,
        blocked=blocked,
        regions=window_regions(g, sb, w_sh),
        positions=window_token_positions(g, sb, w_sh),
    )


def stage_choices(geoms: list[StageGeometry]) -> list[tuple[str, int]]:
    """Radio choices, e.g. ``('1: 56x56 tokens, 8x8 windows', 1)``."""
    out = []
    for g in geoms:
        wh, ww = g.windows_hw
        out.append((f"{g.stage}: {g.grid[0]}x{g.grid[1]} tokens, {wh}x{ww} windows", g.stage))
    return out


def block_choices(geom: StageGeometry) -> list[tuple[str, int]]:
    """Dropdown choices for the blocks of a stage, saying which are shifted."""
    out = []
    for b in range(geom.depth):
        s = geom.block_shift(b)
        if any(s):
            out.append((f"block {b}: SW-MSA, shifted by {s[0]}", b))
        elif b % 2:
            out.append((f"block {b}: W-MSA (no shift possible: one window covers the map)", b))
        else:
            out.append((f"block {b}: W-MSA, regular windows", b))
    return out


def geometry(stage: Any) -> tuple[list[StageGeometry], StageGeometry]:
    """Every stage of Swin-T at 224 px, and the chosen one (``ValueError`` naming the valid stages)."""
    geoms = stage_geometry(INPUT)
    try:
        s = int(stage)
    except (TypeError, ValueError):
        raise ValueError(f"stage must be 1..{len(geoms)}, got {stage!r}") from None
    if not 1 <= s <= len(geoms):
        raise ValueError(f"stage must be 1..{len(geoms)}, got {stage!r}")
    return geoms, geoms[s - 1]


def views_markdown(v: SwinViews) -> str:
    """One paragraph describing the clicked token and its windows."""
    g = v.geometry
    regions = sorted({REGION_LETTERS[int(r)] for r in v.regions})
    q_region = REGION_LETTERS[int(v.regions[v.query_index])]
    n_blocked = int(v.blocked.sum())
    area = g.window_area
    if any(g.block_shift(v.shifted_block)):
        shifted = (
            f"In the shifted block it sits in window {v.window_shifted} of the rolled map, which holds "
            f"region{'s' if len(regions) > 1 else ''} {', '.join(regions)}; the token is in region {q_region} "
            f"and may attend to {int((~v.blocked[v.query_index]).sum())} of {area} keys "
            f"({n_blocked} of {area * area} pairs of this window are masked)."
        )
    else:
        shifted = "This stage has no shifted windows: one window covers the whole map, so nothing is masked."
    return f"**{g.describe()}.** Token (row {v.token[0]}, col {v.token[1]}) is in regular window " \
           f"{v.window_regular}. {shifted}"


@dataclass(frozen=True)
class Windows:
    """The regular partition, the shifted partition, the rolled map (uint8 RGB), the clicked window's mask
    figure, the per-stage gallery and a description (each field named as the Swin tab's component)."""

    regular: np.ndarray
    shifted: np.ndarray
    rolled: np.ndarray
    mask_plot: go.Figure
    stages: list
    info: str


@dataclass(frozen=True)
class WindowAttention:
    """The query's window per head (gallery), the keys on the image, the weights per head, and words."""

    tiles: list
    overlay: np.ndarray
    heads_plot: go.Figure
    attn_text: str


@dataclass(frozen=True)
class Point:
    """A token's centre, in pixels of the 224-px input."""

    x: int
    y: int


@dataclass(frozen=True)
class Bias:
    """One head's relative position bias table (heatmap), and words."""

    bias_plot: go.Figure
    bias_text: str


def windows_view(image: Any, stage: Any, x: Any, y: Any) -> Windows:
    """(image or None for the synthetic picture, stage 1-4, x, y px in the 224 image) -> the views.

    Returns:
        The regular partition, the shifted partition, the rolled map, the mask figure,
        the per-stage gallery ``[(image, caption)]`` and a description.
    """
    geoms, g = geometry(stage)
    arr = view_or_synthetic(image, INPUT)
    token = token_at_pixel(g, x, y, INPUT)
    v = swin_views(arr, g.stage, token, geoms, size=VIEW_PX)
    fig = attention_mask_figure(v.blocked, v.regions, v.positions, g.window, v.query_index,
                                title=f"window {v.window_shifted}, shifted block")
    gallery = [(img, f"stage {s.stage}: {s.grid[0]}x{s.grid[1]} tokens") for img, s in zip(v.stages, geoms)]
    return Windows(v.regular, v.shifted, v.rolled, fig, gallery, views_markdown(v))


def weights_note(random_init: bool) -> str:
    """Which weights the attention comes from."""
    if random_init:
        return ("`swin-tiny` with **random weights** (its pretrained file is not on this machine): the pattern is "
                "the geometry, not learned content")
    return "`swin-tiny` with its **pretrained** ImageNet-1k weights"


def attention_view(image: Any, stage: Any, block: Any, x: Any, y: Any) -> WindowAttention:
    """(image, stage, block, x, y) -> per-head tiles, overlay, figure, text."""
    _, g = geometry(stage)
    try:
        b = int(block)
    except (TypeError, ValueError):
        raise ValueError(f"block must be 0..{g.depth - 1}, got {block!r}") from None
    g.block_shift(b)  # validates
    arr = view_or_synthetic(image, INPUT)
    token = token_at_pixel(g, x, y, INPUT)
    cap = window_attention(swin_model(), arr, g.stage, b, token)
    tiles = window_attention_tiles(arr, cap, 196)  # each tile says its head
    kind = f"SW-MSA (shift {cap.shift[0]})" if any(cap.shift) else "W-MSA"
    fig = window_attention_figure(cap.weights, cap.blocked,
                                  title=f"stage {g.stage}, block {b} ({kind}): weights of token {cap.token}")
    text = (
        f"Stage {g.stage}, block {b} ({kind}), {cap.weights.shape[0]} heads of {weights_note(cap.random_init)}: "
        f"token {cap.token} is query {cap.query_index} of window {cap.window_index}; {int(cap.blocked.sum())} of "
        f"{cap.blocked.size} keys are masked (weight effectively 0)."
    )
    return WindowAttention(tiles, attention_overlay(arr, cap, VIEW_PX), fig, text)


def pick(stage: Any, px: float, py: float, rolled: bool) -> Point:
    """A click at ``(px, py)`` on a ``VIEW_PX``-px view -> the token's centre ``(x, y)`` in the 224 image.

    On the rolled map (``rolled=True``) the position is un-rolled first.
    """
    _, g = geometry(stage)
    token = token_at_pixel(g, px, py, VIEW_PX, rolled_block=1 if rolled and g.depth > 1 else None)
    return Point(*token_center_pixel(g, token, INPUT))


def block_value(stage: Any, block: Any) -> int:
    """The block to show after a stage change: keep regular/shifted when the stage allows it."""
    _, g = geometry(stage)
    prev = int(block) if block is not None else 1
    return min(prev % 2, g.depth - 1)


def bias_view(stage: Any, block: Any, head: Any) -> Bias:
    """(stage, block, head counted from 1) -> heatmap of that head's relative position bias table, and a text."""
    _, g = geometry(stage)
    try:
        b, h = int(block), int(head) - 1
    except (TypeError, ValueError):
        raise ValueError(f"block and head must be whole numbers, got {block!r}, {head!r}") from None
    g.block_shift(b)  # validates the block
    if not 0 <= h < g.num_heads:
        raise ValueError(f"head must be 1..{g.num_heads} in stage {g.stage}, got {head!r}")
    model = swin_model()
    table = relative_position_bias(model, g.stage, b)[h]
    mh, mw = g.window
    fig = bias_table_figure(table, h + 1, f"stage {g.stage}, block {b}, head {h + 1}: relative position bias")
    source = ("⚠️ `swin-tiny` has **random weights** here (its pretrained file is not on this machine): these "
              "are the table's random initial values, not learned ones" if model.random_init
              else weights_note(False))
    text = (
        f"{table.size} numbers ({2 * mh - 1}×{2 * mw - 1} offsets) for head {h + 1} of {g.num_heads}; {source}. "
        "The bias of a query/key pair depends only on their offset, so one "
        f"table serves all {mh * mw}×{mh * mw} pairs of every window; it ranges from {float(table.min()):.2f} "
        f"to {float(table.max()):.2f} here."
    )
    return Bias(fig, text)


def merging_markdown(size: int = INPUT) -> str:
    """Patch merging stage by stage, with the token grids and widths computed for Swin-T."""
    geoms = stage_geometry(size)
    steps = " → ".join(f"{g.grid[0]}×{g.grid[1]}×{g.dim}" for g in geoms)
    return (
        "**Patch merging** between stages: each 2×2 group of neighbouring tokens is concatenated (4C numbers) "
        "and mapped by one linear layer to 2C, so the tokens fall 4× and the channels double, like a CNN's "
        f"pyramid. Swin-T at {size} px (tokens × tokens × channels): {steps}. The window stays "
        f"{geoms[0].window[0]}×{geoms[0].window[1]} tokens, so it covers 4× more of the image at each stage. "
        "*(Swin §3.1, fig. 3)*"
    )
