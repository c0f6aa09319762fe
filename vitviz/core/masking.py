"""Mask generators for masked image modeling.

Every mask is a boolean ``(gh, gw)`` tensor in which ``True`` means *hidden from
the encoder*. Randomness always comes from a ``torch.Generator`` seeded per call,
never from the global RNG, so a result depends only on its arguments.

Patterns:
    * ``random`` -- MAE's per-sample random masking: each patch gets a uniform
      noise value and the highest-noise patches are hidden. With the same seed the
      noise is the same, so masks are *nested*: every patch hidden at ratio r1 is
      hidden at every r2 > r1.
    * ``block`` -- BEiT's block-wise masking: random rectangles (area >= 16 patches
      where the grid allows, aspect ratio 0.3..1/0.3). The rectangles of one seed are
      drawn in a fixed order and a ratio hides a prefix of it, so masks are nested too:
      raising the ratio grows the same blocks (:func:`block_order`).
    * ``grid`` -- a regular pattern keeping one patch in every k, as in MAE's
      "grid-wise sampling" ablation (k = 4 keeps the top-left patch of every 2x2). It is
      recomputed for each ratio, and is *not* nested: the kept patches are re-spaced.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .blocks import sample_rectangle
from .mask_names import MAX_RATIO, NESTED_PATTERNS, PATTERNS

#: The mask names and limits are re-exported from :mod:`.mask_names` (their home, free of torch).
__all__ = ["BLOCK_MAX_SHARE", "HIDDEN_GREY", "MAX_RATIO", "NESTED_PATTERNS", "PATTERNS", "block_order", "check_mask",
           "check_pattern", "grid_mask", "make_mask", "mask_to_ids", "masked_image", "nested_block_mask",
           "num_hidden", "paste_visible", "random_mask", "random_noise", "upsample_mask", "validate_ratio"]

#: Grey of hidden patches in the encoder's view.
HIDDEN_GREY = 128


def _generator(seed: int) -> torch.Generator:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    if not 0 <= seed < 2**63:
        raise ValueError(f"seed must be in [0, 2**63), got {seed}")
    return torch.Generator(device="cpu").manual_seed(seed)


def check_mask(mask: np.ndarray | torch.Tensor, grid: tuple[int, int]) -> torch.Tensor:
    """Validate a user mask: ``(gh, gw)`` booleans with at least one visible patch."""
    m = torch.as_tensor(np.asarray(mask)).bool()
    if tuple(m.shape) != tuple(grid):
        raise ValueError(f"the mask must be {grid[0]}x{grid[1]} patches, got {tuple(m.shape)}")
    if bool(m.all()):
        raise ValueError("the mask hides every patch; leave at least one visible")
    return m


def check_pattern(pattern: str) -> str:
    """Validate a pattern name (:data:`PATTERNS`)."""
    if pattern not in PATTERNS:
        raise ValueError(f"unknown mask pattern {pattern!r}; choose one of {', '.join(PATTERNS)}")
    return pattern


def validate_ratio(mask_ratio: float) -> float:
    """Return ``mask_ratio`` as a float or raise ``ValueError`` if outside [0, 0.95]."""
    try:
        r = float(mask_ratio)
    except (TypeError, ValueError):
        raise ValueError(f"mask ratio must be a number, got {mask_ratio!r}") from None
    if not math.isfinite(r) or r < 0.0 or r > MAX_RATIO + 1e-9:
        raise ValueError(f"mask ratio must be between 0 and {MAX_RATIO}, got {mask_ratio!r}")
    return min(r, MAX_RATIO)


def num_hidden(num_patches: int, mask_ratio: float) -> int:
    """Number of hidden patches for a ratio: ``round(ratio * L)``, leaving at least one visible."""
    r = validate_ratio(mask_ratio)
    return min(int(round(r * num_patches)), num_patches - 1)


def random_noise(num_patches: int, seed: int) -> torch.Tensor:
    """Per-patch uniform noise ``(L,)`` from a generator seeded with ``seed``."""
    return torch.rand(num_patches, generator=_generator(seed))


def random_mask(grid: tuple[int, int], mask_ratio: float, seed: int) -> torch.Tensor:
    """MAE random masking: hide the ``round(ratio*L)`` patches with the highest noise.

    Args:
        grid: ``(gh, gw)``.
        mask_ratio: fraction of patches to hide, in [0, 0.95].
        seed: generator seed; the same seed gives nested masks across ratios.

    Returns:
        ``(gh, gw)`` bool, True = hidden.
    """
    gh, gw = grid
    length = gh * gw
    k = num_hidden(length, mask_ratio)
    noise = random_noise(length, seed)
    # Stable sort: ties (vanishingly rare) resolve by index, keeping nesting exact.
    order = torch.sort(noise, descending=True, stable=True).indices
    mask = torch.zeros(length, dtype=torch.bool)
    mask[order[:k]] = True
    return mask.reshape(gh, gw)


#: Largest block, as a share of the grid. BEiT draws each rectangle no larger than the
#: patches still to hide, within a budget of about 40% (75 of 196 patches); a fixed cap of
#: that size keeps blocks BEiT-sized at every ratio while the order stays one sequence.
BLOCK_MAX_SHARE = 0.4


def block_order(grid: tuple[int, int], seed: int, min_block: int = 16) -> torch.Tensor:
    """The order in which block masking hides patches: a permutation ``(L,)`` of patch indices.

    Rectangles with area in ``[min_block, BLOCK_MAX_SHARE * L]`` and log-uniform aspect
    ratio in [0.3, 1/0.3] (BEiT's blockwise masking, drawn by
    :func:`vitviz.core.blocks.sample_rectangle`) are placed at random positions one
    after another; each appends the patches it covers that are not yet hidden, row by row.
    After ten draws in a row add nothing (or no rectangle fits the grid), the remaining
    patches follow in growth order: visible 4-neighbours of hidden patches, in random
    order, ring after ring.

    :func:`nested_block_mask` hides a prefix of this order, so for one seed the masks of all
    ratios are nested: raising the ratio grows the same rectangles (the last one of a
    prefix may be cut part-way, row by row).

    Args:
        grid: ``(gh, gw)``.
        seed: generator seed.
        min_block: smallest rectangle, in patches (BEiT: 16), capped by the grid size.

    Returns:
        ``(L,)`` long, every patch index exactly once.
    """
    gh, gw = grid
    length = gh * gw
    g = _generator(seed)

    def rand() -> float:
        return float(torch.rand((), generator=g))

    hi = max(min_block, int(round(BLOCK_MAX_SHARE * length)))
    lo = min(min_block, hi)
    mask = torch.zeros(gh, gw, dtype=torch.bool)
    order: list[int] = []
    misses = 0
    while len(order) < length and misses < 10:
        rect = sample_rectangle(grid, (lo, hi), lambda a, b: a + rand() * (b - a), lambda n: int(rand() * n))
        if rect is None:
            misses += 1
            continue
        top, left, h, w = rect
        region = mask[top : top + h, left : left + w]
        new = (~region).nonzero()
        if new.numel() == 0:
            misses += 1
            continue
        misses = 0
        order.extend(((new[:, 0] + top) * gw + new[:, 1] + left).tolist())
        region[:] = True
    while len(order) < length:
        cand = _frontier(mask).view(-1).nonzero().flatten()
        if cand.numel() == 0:
            cand = (~mask).view(-1).nonzero().flatten()
        pick = cand[torch.randperm(cand.numel(), generator=g)]
        order.extend(pick.tolist())
        mask.view(-1)[pick] = True
    return torch.tensor(order, dtype=torch.long)


def nested_block_mask(grid: tuple[int, int], mask_ratio: float, seed: int, min_block: int = 16) -> torch.Tensor:
    """Block-wise masking (BEiT's rectangles) with an exact hidden count, nested across ratios.

    Hides the first ``round(ratio*L)`` patches of :func:`block_order`: the same seed's
    rectangles grow as the ratio rises, so every patch hidden at a lower ratio stays
    hidden at a higher one (BEiT redraws its blocks for each mask; this order is
    vitviz's choice, made for the slider).

    Returns:
        ``(gh, gw)`` bool, True = hidden, with exactly ``round(ratio*L)`` True values.
    """
    gh, gw = grid
    k = num_hidden(gh * gw, mask_ratio)
    mask = torch.zeros(gh * gw, dtype=torch.bool)
    mask[block_order(grid, seed, min_block)[:k]] = True
    return mask.reshape(gh, gw)


def _frontier(mask: torch.Tensor) -> torch.Tensor:
    """Visible patches with at least one hidden 4-neighbour. ``(gh, gw)`` bool."""
    near = torch.zeros_like(mask)
    near[1:, :] |= mask[:-1, :]
    near[:-1, :] |= mask[1:, :]
    near[:, 1:] |= mask[:, :-1]
    near[:, :-1] |= mask[:, 1:]
    return near & ~mask


def grid_mask(grid: tuple[int, int], mask_ratio: float) -> torch.Tensor:
    """Regular masking that keeps ``L - round(ratio*L)`` evenly spaced patches.

    When the kept fraction is ``1/s**2`` and ``s`` divides both sides, the kept patches
    form the 2-D lattice of the top-left patch of every ``s x s`` cell (MAE's grid
    sampling at 75% is ``s = 2``). Otherwise kept patches are spaced evenly in raster
    order, which makes a regular staggered lattice.

    Returns:
        ``(gh, gw)`` bool, True = hidden.
    """
    gh, gw = grid
    length = gh * gw
    keep = length - num_hidden(length, mask_ratio)
    s = int(round(math.sqrt(length / keep)))
    if s >= 1 and s * s * keep == length and gh % s == 0 and gw % s == 0:
        mask = torch.ones(gh, gw, dtype=torch.bool)
        mask[::s, ::s] = False
        return mask
    kept = torch.floor(torch.arange(keep, dtype=torch.float64) * length / keep).long()
    mask = torch.ones(length, dtype=torch.bool)
    mask[kept] = False
    return mask.reshape(gh, gw)


def make_mask(grid: tuple[int, int], mask_ratio: float, seed: int = 0, pattern: str = "random") -> torch.Tensor:
    """Build a mask by pattern name.

    Args:
        grid: ``(gh, gw)``.
        mask_ratio: fraction hidden, in [0, 0.95].
        seed: generator seed (ignored by ``grid``, which is deterministic).
        pattern: one of :data:`PATTERNS`.

    Returns:
        ``(gh, gw)`` bool, True = hidden.

    Raises:
        ValueError: unknown pattern, bad ratio or bad seed.
    """
    if pattern == "random":
        return random_mask(grid, mask_ratio, seed)
    if pattern == "block":
        return nested_block_mask(grid, mask_ratio, seed)
    if pattern == "grid":
        _generator(seed)  # validate the seed even though the pattern ignores it
        return grid_mask(grid, mask_ratio)
    raise ValueError(f"unknown mask pattern {pattern!r}; choose one of {', '.join(PATTERNS)}")


def mask_to_ids(mask: torch.Tensor) -> torch.Tensor:
    """Indices of visible patches in raster order.

    Args:
        mask: ``(gh, gw)`` bool, True = hidden (or ``(N, gh, gw)`` with equal counts).

    Returns:
        ``(K,)`` (or ``(N, K)``) long indices of visible patches.
    """
    flat = mask.reshape(mask.shape[0], -1) if mask.dim() == 3 else mask.reshape(1, -1)
    counts = (~flat).sum(dim=1)
    if not bool((counts == counts[0]).all()):
        raise ValueError("every mask in a batch must hide the same number of patches")
    ids = torch.stack([(~row).nonzero().flatten() for row in flat])
    return ids if mask.dim() == 3 else ids[0]


def upsample_mask(mask: np.ndarray, patch_size: int) -> np.ndarray:
    """``(gh, gw)`` bool -> ``(gh*p, gw*p)`` bool, each patch a ``p x p`` block."""
    m = np.asarray(mask, dtype=bool)
    return np.repeat(np.repeat(m, patch_size, axis=0), patch_size, axis=1)


def masked_image(image: np.ndarray, mask: np.ndarray, patch_size: int, fill: int = HIDDEN_GREY) -> np.ndarray:
    """The encoder's view: hidden patches painted grey.

    Args:
        image: ``(H, W, 3)`` uint8.
        mask: ``(gh, gw)`` bool, True = hidden.
        patch_size: patch side ``p``.

    Returns:
        ``(H, W, 3)`` uint8 copy.
    """
    out = np.array(image, dtype=np.uint8, copy=True)
    out[upsample_mask(mask, patch_size)] = fill
    return out


def paste_visible(reconstruction: np.ndarray, image: np.ndarray, mask: np.ndarray, patch_size: int) -> np.ndarray:
    """Reconstruction with the visible patches replaced by the original pixels. ``(H, W, 3)`` uint8."""
    hidden = upsample_mask(mask, patch_size)
    return np.where(hidden[..., None], reconstruction, image).astype(np.uint8)
