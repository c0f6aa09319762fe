"""Swin Transformer's windows: partition, cyclic shift, the shifted-window mask, attention.

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
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image
from torch import nn

from .images import DataConfig, normalize, square_resize, to_uint8, uint8_to_unit
from .seeding import isolated_seed

Pair = tuple[int, int]

#: timm name of the Swin model the app shows.
SWIN_TINY = "swin_tiny_patch4_window7_224"
#: Value timm adds to blocked logits (``exp(-100)`` is 0 in float32 after softmax).
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
            (:func:`vitviz.render_windows.rolled_overlay`) and the position is un-rolled.

    Returns:
        ``(row, col)`` on the stage's grid, original frame.
    """
    try:
        fx, fy = float(x), float(y)
    except (TypeError, ValueError):
        raise ValueError(f"a point needs numeric x and y, got ({x!r}, {y!r})") from None
    if not (math.isfinite(fx) and math.isfinite(fy)):
        raise ValueError(f"a point needs finite x and y, got ({x!r}, {y!r})")
    h, w = geom.grid
    row = min(max(int(fy * h // size), 0), h - 1)
    col = min(max(int(fx * w // size), 0), w - 1)
    if rolled_block is None:
        return row, col
    pos = original_position(geom, rolled_block, row, col)
    assert pos is not None  # rows/cols are clamped to the unpadded grid
    return pos


def token_center_pixel(geom: StageGeometry, token: Pair, size: int = 224) -> Pair:
    """``(x, y)`` pixel at the centre of a token in a ``size``-px view of the original frame."""
    h, w = geom.grid
    return int((token[1] + 0.5) * size / w), int((token[0] + 0.5) * size / h)


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


# --------------------------------------------------------------------------------------
# A timm Swin model and its within-window attention
# --------------------------------------------------------------------------------------

_MODEL_CACHE: dict[tuple[str, int], nn.Module] = {}
#: Guards the model cache.
_CACHE_LOCK = threading.Lock()
#: Serialises captures: hooks are registered on modules shared between requests.
_CAPTURE_LOCK = threading.Lock()


def create_swin(name: str = SWIN_TINY, seed: int = 0) -> nn.Module:
    """Build a timm Swin with random weights (never downloads), in eval mode.

    The initialisation runs inside ``torch.random.fork_rng`` with ``seed``, so the
    weights depend only on ``seed`` and the caller's global RNG state is untouched.
    Random weights are enough for the geometry: the mask, not training, decides which
    keys a token can see.
    """
    import timm  # heavy import kept out of module import

    with isolated_seed(seed):
        model = timm.create_model(name, pretrained=False)
    return model.eval()


def cached_swin(name: str = SWIN_TINY, seed: int = 0) -> nn.Module:
    """:func:`create_swin`, built once per ``(name, seed)`` and then shared read-only."""
    key = (name, seed)
    with _CACHE_LOCK:
        if key not in _MODEL_CACHE:
            _MODEL_CACHE[key] = create_swin(name, seed)
        return _MODEL_CACHE[key]


def model_geometry(model: nn.Module) -> list[StageGeometry]:
    """The :class:`StageGeometry` of each stage of a timm ``SwinTransformer``."""
    out = []
    for i, layer in enumerate(model.layers):
        blk = layer.blocks[0]
        shifted = [b.shift_size for b in layer.blocks if any(b.shift_size)]
        grid = tuple(blk.input_resolution)
        out.append(
            StageGeometry(
                stage=i + 1,
                grid=grid,
                dim=int(blk.dim),
                num_heads=int(blk.attn.num_heads),
                depth=len(layer.blocks),
                window=tuple(blk.window_size),
                shift=tuple(shifted[0]) if shifted else (0, 0),
                padded=padded_size(grid, tuple(blk.window_size)),
                token_pixels=int(model.patch_embed.patch_size[0]) * 2**i,
            )
        )
    return out


@dataclass(frozen=True)
class WindowAttentionCapture:
    """Within-window attention of one query token in one Swin block.

    Attributes:
        geometry: the stage's geometry.
        block: block index within the stage.
        shift: the block's shift (``(0, 0)`` for a regular block).
        token: original ``(row, col)`` of the query token.
        window_index: index of the query's window in the rolled map.
        query_index: the query's index inside its window (row-major).
        weights: ``(heads, Mh, Mw)`` float32 softmax weights of the query over the keys
            of its window, laid out as the window in the rolled map; rows sum to 1.
        window_attention: ``(heads, Mh*Mw, Mh*Mw)`` float32, all queries of the window.
        positions: ``(Mh*Mw, 2)`` original ``(row, col)`` of each key (``-1`` = padding).
        blocked: ``(Mh*Mw,)`` bool, keys the mask hides from this query.
    """

    geometry: StageGeometry
    block: int
    shift: Pair
    token: Pair
    window_index: int
    query_index: int
    weights: np.ndarray
    window_attention: np.ndarray
    positions: np.ndarray
    blocked: np.ndarray

    def weights_on_grid(self) -> np.ndarray:
        """The query's weights scattered to the stage grid (original frame).

        Returns:
            ``(heads, H, W)`` float32, ``NaN`` outside the query's window.
        """
        heads = self.weights.shape[0]
        h, w = self.geometry.grid
        out = np.full((heads, h, w), np.nan, dtype=np.float32)
        flat = self.weights.reshape(heads, -1)
        for k, (r, c) in enumerate(self.positions):
            if r >= 0:
                out[:, r, c] = flat[:, k]
        return out


class _CaptureDone(Exception):
    """Raised from the hook to stop the forward pass once the block has run."""


@contextmanager
def _unfused(attn: nn.Module) -> Iterator[None]:
    """Force timm's ``WindowAttention`` onto its explicit-softmax path, then restore."""
    had = hasattr(attn, "fused_attn")
    old = getattr(attn, "fused_attn", False)
    if had:
        attn.fused_attn = False
    try:
        yield
    finally:
        if had:
            attn.fused_attn = old


def image_tensor(image: Image.Image | np.ndarray, size: int = 224, config: DataConfig = DataConfig()) -> torch.Tensor:
    """``(1, 3, size, size)`` normalised model input.

    Args:
        image: an RGB ``PIL.Image`` (resized, shorter side, and centre-cropped), or a
            ``(size, size, 3)`` uint8 array already at the input size.
    """
    if isinstance(image, np.ndarray):
        if image.shape != (size, size, 3) or image.dtype != np.uint8:
            raise ValueError(f"expected a ({size}, {size}, 3) uint8 array, got {image.shape} {image.dtype}")
        arr = image
    else:
        arr = to_uint8(square_resize(image.convert("RGB"), size))
    return normalize(uint8_to_unit(arr), config).unsqueeze(0)


def capture_window_attention(
    model: nn.Module,
    x: torch.Tensor,
    stage: int,
    block: int,
    token: Pair,
) -> WindowAttentionCapture:
    """Run a timm Swin up to one block and return the attention of one token's window.

    A forward hook on the block's ``attn.softmax`` records the ``(nW, heads, A, A)``
    softmax output (mask already applied); the hook then stops the forward pass.
    timm's ``WindowAttention`` is unfused by default, but may be fused
    (``fused_attn``, which never forms the matrix); it is switched to the explicit
    path for this call and restored. Hooks are removed on exit, and captures are
    serialised because the model is shared.

    Args:
        model: a timm ``SwinTransformer`` in eval mode.
        x: ``(1, 3, H, W)`` normalised image.
        stage: 1-based stage.
        block: 0-based block within the stage (odd = shifted where the stage has a shift).
        token: original ``(row, col)`` of the query on the stage's grid.

    Returns:
        A :class:`WindowAttentionCapture`.
    """
    if x.dim() != 4 or x.shape[0] != 1:
        raise ValueError(f"expected one image (1, 3, H, W), got {tuple(x.shape)}")
    geoms = model_geometry(model)
    if not 1 <= stage <= len(geoms):
        raise ValueError(f"stage must be 1..{len(geoms)}, got {stage}")
    geom = geoms[stage - 1]
    geom.block_shift(block)  # validates the block index
    blk = model.layers[stage - 1].blocks[block]
    if tuple(blk.shift_size) != geom.block_shift(block):
        raise ValueError(f"unexpected shift {blk.shift_size} in stage {stage} block {block}")
    row, col = token
    win_idx, q_idx = token_window(geom, block, row, col)
    store: dict[str, torch.Tensor] = {}

    def hook(_module: nn.Module, _inp: tuple, out: torch.Tensor) -> None:
        store["attn"] = out.detach()
        raise _CaptureDone

    with _CAPTURE_LOCK, _unfused(blk.attn), torch.inference_mode():
        handle = blk.attn.softmax.register_forward_hook(hook)
        try:
            model(x)
        except _CaptureDone:
            pass
        finally:
            handle.remove()
    if "attn" not in store:
        raise RuntimeError(f"stage {stage} block {block} did not run its attention softmax")
    attn = store["attn"]  # (B*nW, heads, A, A)
    heads, area = attn.shape[1], attn.shape[-1]
    win_attn = attn[win_idx].float().cpu().numpy()
    mh, mw = geom.window
    weights = win_attn[:, q_idx, :].reshape(heads, mh, mw)
    regions = window_regions(geom, block, win_idx)
    return WindowAttentionCapture(
        geometry=geom,
        block=block,
        shift=geom.block_shift(block),
        token=(int(row), int(col)),
        window_index=int(win_idx),
        query_index=int(q_idx),
        weights=weights.astype(np.float32),
        window_attention=win_attn.astype(np.float32),
        positions=window_token_positions(geom, block, win_idx),
        blocked=(regions != regions[q_idx]).reshape(area),
    )


def swin_tiny_window_attention(
    image: Image.Image | np.ndarray, stage: int, block: int, token: Pair, seed: int = 0
) -> WindowAttentionCapture:
    """Within-window attention of a token for Swin-T (random weights, cached model).

    Args:
        image: an RGB image (resized, shorter side, and centre-cropped to 224) or a
            ``(224, 224, 3)`` uint8 array.
        stage, block, token: see :func:`capture_window_attention`.
        seed: seed of the random weights.
    """
    model = cached_swin(SWIN_TINY, seed)
    return capture_window_attention(model, image_tensor(image, 224), stage, block, token)
