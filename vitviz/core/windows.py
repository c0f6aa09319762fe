"""Swin Transformer's window geometry: partition, cyclic shift, the shifted-window mask.

Swin (Liu et al., 2021) computes self-attention inside non-overlapping ``M x M``
windows of the token grid (``M = 7``). Every second block shifts the window grid by
``M // 2`` tokens so that information crosses window borders. Instead of padding
the extra, partial windows that a shifted grid creates at the image border, the
implementation *rolls* the feature map by ``-shift`` (a cyclic shift), so the
shifted windows line up with the regular grid again. The windows along the bottom
and right edges of the rolled map then hold tokens from up to four places of the
original image that are not neighbours; an additive mask (``-100`` before the
softmax) keeps tokens from attending across those seams. The map is rolled back
after attention.

Everything here follows timm's ``swin_transformer.py`` exactly (window clamping to
small resolutions, bottom/right padding, the ``-100`` mask value), and the tests
compare against timm's own buffers.

Conventions:
    * Feature maps are channels-last, ``(B, H, W, C)``, as in timm's Swin.
    * ``(row, col)`` token coordinates are in the *original* (un-rolled) frame
      unless a name says ``rolled``.
    * Windows are numbered row-major over the (padded, rolled) map, and tokens
      row-major inside a window, as ``window_partition`` lays them out.
    * The nine regions of a shifted layout are numbered 0..8 row-major, exactly
      as timm's ``get_attn_mask`` numbers them (``cnt``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .patches import patch_center, pixel_to_patch

Pair = tuple[int, int]

#: Value timm adds to blocked logits: ``exp(-100)`` ≈ 3.7e-44 (a float32 subnormal), so a blocked
#: key's softmax weight is effectively zero, not exactly zero.
MASK_VALUE = -100.0
#: Letters for the nine regions of a shifted layout, in timm's order.
REGION_LETTERS = "ABCDEFGHI"


def _pair(x: int | Sequence[int]) -> Pair:
    if isinstance(x, (int, np.integer)):
        return int(x), int(x)
    a, b = x
    return int(a), int(b)


# --------------------------------------------------------------------------------------
# Geometry (pure arithmetic)
# --------------------------------------------------------------------------------------


def effective_window(grid: int | Pair, window: int | Pair, shift: int | Pair = 0) -> tuple[Pair, Pair]:
    """Window and shift that timm actually uses for a token grid.

    timm (``SwinTransformerBlock._calc_window_shift``): along an axis whose resolution
    is at most the window, the window shrinks to the resolution and the shift becomes
    0 (one window covers the axis, shifting would change nothing). At 224 px this makes
    the last stage of Swin-T (7x7 tokens) use a single unshifted window in every block.

    Args:
        grid: token grid ``(H, W)`` (or one int for a square).
        window: requested window side(s).
        shift: requested shift(s) (``window // 2`` for shifted blocks, else 0).

    Returns:
        ``((win_h, win_w), (shift_h, shift_w))``.
    """
    (h, w), (mh, mw), (sh, sw) = _pair(grid), _pair(window), _pair(shift)
    if min(h, w, mh, mw) < 1:
        raise ValueError(f"grid and window must be positive, got grid={grid!r}, window={window!r}")
    win = (min(mh, h), min(mw, w))
    sft = (0 if h <= mh else sh, 0 if w <= mw else sw)
    if not (0 <= sft[0] < win[0] and 0 <= sft[1] < win[1]):
        raise ValueError(f"shift must be in [0, window), got shift={shift!r} for window={win}")
    return win, sft


def padded_size(grid: int | Pair, window: int | Pair) -> Pair:
    """``(Hp, Wp)``: the grid padded (bottom/right) up to whole windows, as timm pads."""
    (h, w), (mh, mw) = _pair(grid), _pair(window)
    return math.ceil(h / mh) * mh, math.ceil(w / mw) * mw


@dataclass(frozen=True)
class StageGeometry:
    """Window geometry of one Swin stage.

    Attributes:
        stage: 1-based stage number.
        grid: token grid ``(H, W)`` of the stage.
        dim: channels ``C``.
        num_heads: attention heads.
        depth: blocks in the stage; blocks with an odd index are shifted (when the
            resolution allows; see :func:`effective_window`).
        window: effective window ``(Mh, Mw)``.
        shift: shift of the shifted blocks ``(sh, sw)``; ``(0, 0)`` if none.
        padded: padded grid ``(Hp, Wp)``.
        token_pixels: side of one token in input pixels (``patch * 2**(stage-1)``).
    """

    stage: int
    grid: Pair
    dim: int
    num_heads: int
    depth: int
    window: Pair
    shift: Pair
    padded: Pair
    token_pixels: int

    @property
    def num_tokens(self) -> int:
        """``H * W``."""
        return self.grid[0] * self.grid[1]

    @property
    def window_area(self) -> int:
        """Tokens per window, ``Mh * Mw``."""
        return self.window[0] * self.window[1]

    @property
    def windows_hw(self) -> Pair:
        """Windows along each axis."""
        return self.padded[0] // self.window[0], self.padded[1] // self.window[1]

    @property
    def num_windows(self) -> int:
        """Windows per image."""
        a, b = self.windows_hw
        return a * b

    @property
    def has_shift(self) -> bool:
        """Whether the stage's odd blocks are shifted."""
        return any(self.shift)

    def block_shift(self, block: int) -> Pair:
        """Shift used by ``block`` (0-based within the stage): odd blocks are shifted."""
        if not 0 <= block < self.depth:
            raise ValueError(f"stage {self.stage} has blocks 0..{self.depth - 1}, got block {block}")
        return self.shift if block % 2 == 1 else (0, 0)

    def describe(self) -> str:
        """One line, e.g. ``'stage 1: 56x56 tokens (4 px), 8x8 windows of 7x7, shift 3'``."""
        wh, ww = self.windows_hw
        s = f"shift {self.shift[0]}" if self.has_shift else "no shift (one window covers the map)"
        return (
            f"stage {self.stage}: {self.grid[0]}x{self.grid[1]} tokens ({self.token_pixels} px each), "
            f"{wh}x{ww} windows of {self.window[0]}x{self.window[1]}, {s}"
        )


def stage_geometry(
    img_size: int | Pair = 224,
    patch_size: int = 4,
    window_size: int = 7,
    embed_dim: int = 96,
    depths: Sequence[int] = (2, 2, 6, 2),
    num_heads: Sequence[int] = (3, 6, 12, 24),
) -> list[StageGeometry]:
    """Per-stage window geometry of a Swin (defaults: Swin-T at 224).

    Stage 1 sees the ``img/patch`` grid; each later stage halves it (patch merging,
    odd sizes padded up as timm does) and doubles the channels. For Swin-T at 224:
    56x56 tokens in 8x8 windows, then 28 (4x4), 14 (2x2) and 7 (1x1, unshifted).

    Returns:
        One :class:`StageGeometry` per stage.
    """
    if len(depths) != len(num_heads):
        raise ValueError("depths and num_heads must have the same length")
    h, w = _pair(img_size)
    if h < patch_size or w < patch_size:
        raise ValueError(f"image {h}x{w} is smaller than one patch of {patch_size}")
    gh, gw = h // patch_size, w // patch_size
    out = []
    for i, (depth, heads) in enumerate(zip(depths, num_heads)):
        if i > 0:
            gh, gw = math.ceil(gh / 2), math.ceil(gw / 2)
        win, sft = effective_window((gh, gw), window_size, window_size // 2)
        out.append(
            StageGeometry(
                stage=i + 1,
                grid=(gh, gw),
                dim=embed_dim * 2**i,
                num_heads=int(heads),
                depth=int(depth),
                window=win,
                shift=sft,
                padded=padded_size((gh, gw), win),
                token_pixels=patch_size * 2**i,
            )
        )
    return out


def region_labels(grid: int | Pair, window: int | Pair, shift: int | Pair) -> np.ndarray:
    """Region id of every position of the *rolled* (and padded) map, as timm's mask uses.

    After rolling by ``-shift`` the map splits into three bands per axis:
    ``[0, Hp-M)`` (tokens that were already together), ``[Hp-M, Hp-s)`` and
    ``[Hp-s, Hp)`` (the rows that wrapped around from the top). Crossing the bands
    gives nine regions, numbered 0..8 row-major. Two tokens of one window may attend
    to each other only if they share a region. With ``shift == 0`` every position is 0.

    Args:
        grid: token grid ``(H, W)``; ``window`` and ``shift`` should already be the
            effective ones (:func:`effective_window`).

    Returns:
        ``(Hp, Wp)`` int64 array of region ids.
    """
    (mh, mw), (sh, sw) = _pair(window), _pair(shift)
    hp, wp = padded_size(grid, (mh, mw))
    labels = np.zeros((hp, wp), dtype=np.int64)
    if sh == 0 and sw == 0:
        return labels
    cnt = 0
    for r0, r1 in ((0, hp - mh), (hp - mh, hp - sh), (hp - sh, hp)):
        for c0, c1 in ((0, wp - mw), (wp - mw, wp - sw), (wp - sw, wp)):
            labels[r0:r1, c0:c1] = cnt
            cnt += 1
    return labels


def window_partition(x: torch.Tensor, window: int | Pair) -> torch.Tensor:
    """Cut a feature map into non-overlapping windows.

    Args:
        x: ``(B, H, W, C)`` with ``H % Mh == W % Mw == 0``.
        window: ``M`` or ``(Mh, Mw)``.

    Returns:
        ``(B * nW, Mh, Mw, C)``, windows row-major per image (``nW = H/Mh * W/Mw``).
    """
    mh, mw = _pair(window)
    b, h, w, c = x.shape
    if h % mh or w % mw:
        raise ValueError(f"a {h}x{w} map does not split into {mh}x{mw} windows; pad it first")
    x = x.view(b, h // mh, mh, w // mw, mw, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, mh, mw, c)


def window_reverse(windows: torch.Tensor, window: int | Pair, height: int, width: int) -> torch.Tensor:
    """Inverse of :func:`window_partition`.

    Args:
        windows: ``(B * nW, Mh, Mw, C)``.
        window: ``M`` or ``(Mh, Mw)``.
        height, width: size ``H, W`` of the map.

    Returns:
        ``(B, H, W, C)``.
    """
    mh, mw = _pair(window)
    c = windows.shape[-1]
    x = windows.reshape(-1, height // mh, width // mw, mh, mw, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, height, width, c)


def cyclic_shift(x: torch.Tensor, shift: int | Pair, reverse: bool = False) -> torch.Tensor:
    """Roll a ``(B, H, W, C)`` map by ``-shift`` (``+shift`` when ``reverse``) along H and W.

    ``cyclic_shift(x, s)[:, i, j] == x[:, (i + s) % H, (j + s) % W]``: the top ``s``
    rows and left ``s`` columns move to the bottom and right.
    """
    sh, sw = _pair(shift)
    sign = 1 if reverse else -1
    return torch.roll(x, shifts=(sign * sh, sign * sw), dims=(1, 2))


def shifted_window_mask(
    grid: int | Pair,
    window: int | Pair,
    shift: int | Pair,
    masked_value: float = MASK_VALUE,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor | None:
    """The additive attention mask of a shifted-window block, equal to timm's ``attn_mask``.

    Derivation: label every position of the rolled, padded map with its region
    (:func:`region_labels`), partition the labels into windows, and compare every
    pair of positions inside a window: different regions -> ``masked_value``,
    same region -> 0. The mask is added to the ``(M^2, M^2)`` logits of each window.

    Args:
        grid: token grid ``(H, W)``.
        window, shift: the *effective* window and shift (:func:`effective_window`).

    Returns:
        ``(nW, Mh*Mw, Mh*Mw)`` tensor, or ``None`` when ``shift`` is 0 (timm's buffer is
        ``None`` for regular blocks).
    """
    mh, mw = _pair(window)
    if not any(_pair(shift)):
        return None
    ids = torch.from_numpy(region_labels(grid, (mh, mw), shift))
    win = window_partition(ids[None, :, :, None], (mh, mw)).reshape(-1, mh * mw)
    diff = win.unsqueeze(1) - win.unsqueeze(2)
    zero = torch.zeros((), dtype=dtype)
    return torch.where(diff != 0, torch.full((), masked_value, dtype=dtype), zero)


def blocked_pairs(grid: int | Pair, window: int | Pair, shift: int | Pair) -> np.ndarray:
    """Boolean form of the mask: ``True`` where a (query, key) pair may not attend.

    Returns:
        ``(nW, Mh*Mw, Mh*Mw)`` bool; all ``False`` for an unshifted block.
    """
    (mh, mw) = _pair(window)
    hp, wp = padded_size(grid, (mh, mw))
    n_win = (hp // mh) * (wp // mw)
    mask = shifted_window_mask(grid, (mh, mw), shift)
    if mask is None:
        return np.zeros((n_win, mh * mw, mh * mw), dtype=bool)
    return (mask != 0).numpy()


def rolled_position(geom: StageGeometry, block: int, row: int, col: int) -> Pair:
    """Where the token at original ``(row, col)`` sits in ``block``'s rolled map."""
    h, w = geom.grid
    if not (0 <= row < h and 0 <= col < w):
        raise ValueError(f"token ({row}, {col}) is outside the {h}x{w} grid of stage {geom.stage}")
    sh, sw = geom.block_shift(block)
    return (row - sh) % h, (col - sw) % w


def original_position(geom: StageGeometry, block: int, rolled_row: int, rolled_col: int) -> Pair | None:
    """Original ``(row, col)`` of a rolled-map position, or ``None`` for a padding position."""
    h, w = geom.grid
    if rolled_row >= h or rolled_col >= w:
        return None
    sh, sw = geom.block_shift(block)
    return (rolled_row + sh) % h, (rolled_col + sw) % w


def token_window(geom: StageGeometry, block: int, row: int, col: int) -> Pair:
    """``(window_index, index_in_window)`` of original token ``(row, col)`` in ``block``."""
    rr, rc = rolled_position(geom, block, row, col)
    mh, mw = geom.window
    _, n_wc = geom.windows_hw
    return (rr // mh) * n_wc + rc // mw, (rr % mh) * mw + rc % mw


def window_id_map(geom: StageGeometry, block: int) -> np.ndarray:
    """Window index of every token, in the original frame.

    Returns:
        ``(H, W)`` int64. For a shifted block, the windows at the bottom/right edge of
        the rolled map show up here split into pieces at opposite image edges.
    """
    h, w = geom.grid
    sh, sw = geom.block_shift(block)
    rows = (np.arange(h) - sh) % h
    cols = (np.arange(w) - sw) % w
    mh, mw = geom.window
    _, n_wc = geom.windows_hw
    return (rows[:, None] // mh) * n_wc + (cols[None, :] // mw)


def region_map(geom: StageGeometry, block: int) -> np.ndarray:
    """Region id (0..8) of every token in the original frame; all 0 for unshifted blocks.

    Returns:
        ``(H, W)`` int64.
    """
    h, w = geom.grid
    labels = region_labels(geom.grid, geom.window, geom.block_shift(block))
    sh, sw = geom.block_shift(block)
    rows = (np.arange(h) - sh) % h
    cols = (np.arange(w) - sw) % w
    return labels[rows[:, None], cols[None, :]]


def token_at_pixel(geom: StageGeometry, x: float, y: float, size: int = 224, rolled_block: int | None = None) -> Pair:
    """Original ``(row, col)`` of the token under pixel ``(x, y)`` of a ``size``-px view.

    Args:
        geom: the stage.
        x, y: pixel column and row (clamped into the image).
        size: side of the view in pixels (the view shows the whole grid).
        rolled_block: if given, the view is that block's rolled map
            (:func:`vitviz.render.windows.rolled_overlay`) and the position is un-rolled.

    Returns:
        ``(row, col)`` on the stage's grid, original frame.
    """
    row, col = pixel_to_patch(x, y, geom.grid, size)
    if rolled_block is None:
        return row, col
    pos = original_position(geom, rolled_block, row, col)
    assert pos is not None  # rows/cols are clamped to the unpadded grid
    return pos


def token_center_pixel(geom: StageGeometry, token: Pair, size: int = 224) -> Pair:
    """``(x, y)`` pixel at the centre of a token in a ``size``-px view of the original frame."""
    x, y = patch_center(token[0], token[1], geom.grid, size)
    return int(x), int(y)


def window_token_positions(geom: StageGeometry, block: int, window_index: int) -> np.ndarray:
    """Original ``(row, col)`` of each position of a window (``-1, -1`` for padding).

    Returns:
        ``(Mh*Mw, 2)`` int64, row-major over the window.
    """
    if not 0 <= window_index < geom.num_windows:
        raise ValueError(f"stage {geom.stage} has windows 0..{geom.num_windows - 1}, got {window_index}")
    mh, mw = geom.window
    _, n_wc = geom.windows_hw
    r0, c0 = (window_index // n_wc) * mh, (window_index % n_wc) * mw
    out = np.full((mh * mw, 2), -1, dtype=np.int64)
    for i in range(mh):
        for j in range(mw):
            pos = original_position(geom, block, r0 + i, c0 + j)
            if pos is not None:
                out[i * mw + j] = pos
    return out


def window_regions(geom: StageGeometry, block: int, window_index: int) -> np.ndarray:
    """Region id of each position of a window, row-major: ``(Mh*Mw,)`` int64."""
    mh, mw = geom.window
    _, n_wc = geom.windows_hw
    r0, c0 = (window_index // n_wc) * mh, (window_index % n_wc) * mw
    labels = region_labels(geom.grid, geom.window, geom.block_shift(block))
    return labels[r0:r0 + mh, c0:c0 + mw].reshape(-1)
