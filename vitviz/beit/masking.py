"""BEiT's blockwise masking (Bao et al., 2021, algorithm 1), with an exact count.

Rectangles of at least ``min_patches`` patches with aspect ratio in
``[min_aspect, 1/min_aspect]`` are placed at random until ``round(ratio * L)``
patches are hidden. As in BEiT's ``MaskingGenerator``, a rectangle is accepted only
if it hides at least one new patch and no more than the patches still to hide.
BEiT stops after ten failed tries, which can leave the mask short of the target;
here, when random tries fail, an exhaustive search over every allowed rectangle
finishes the mask, so the hidden share is exactly the requested one (every hidden
patch still lies in a fully hidden rectangle of ``>= min_patches`` patches).

The rectangles themselves (drawing one, the allowed shapes, the coverage check) live in
:mod:`vitviz.core.blocks`, shared with the MAE tab's nested block masks.
"""

from __future__ import annotations

import numpy as np

from ..core.blocks import MIN_ASPECT, MIN_PATCHES, covered_by_rectangles, rect_shapes, sample_rectangle, window_counts

__all__ = ["MIN_ASPECT", "MIN_PATCHES", "block_mask", "covered_by_rectangles", "random_patch_mask"]


def block_mask(grid: tuple[int, int], ratio: float, rng: np.random.Generator,
               min_patches: int = MIN_PATCHES, min_aspect: float = MIN_ASPECT, tries: int = 10,
               restarts: int = 50) -> np.ndarray:
    """A blockwise mask hiding exactly ``round(ratio * gh * gw)`` patches.

    Some partial masks cannot be completed exactly (no allowed rectangle adds the
    last one or two patches); the mask is then drawn again, up to ``restarts``
    times, after which the closest mask found is returned.

    Args:
        grid: ``(gh, gw)``.
        ratio: share of patches to hide, in [0, 1).
        rng: numpy generator (the only source of randomness).
        min_patches: smallest rectangle area, in patches.
        min_aspect: smallest aspect ratio h/w (the largest is its inverse).
        tries: random rectangles tried (as BEiT) before the exhaustive search takes over.
        restarts: new draws allowed when a mask cannot be completed exactly.

    Returns:
        ``(gh, gw)`` bool, True = hidden.
    """
    gh, gw = grid
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"mask ratio must be in [0, 1), got {ratio}")
    target = int(round(ratio * gh * gw))
    if target == 0:
        return np.zeros((gh, gw), dtype=bool)
    if 0 < target < min_patches:
        raise ValueError(f"a block mask hides at least {min_patches} patches; ratio {ratio} asks for {target}")
    shapes = rect_shapes((gh, gw), min_patches, min_aspect)
    if not shapes:
        raise ValueError(f"no rectangle of >= {min_patches} patches fits a {gh}x{gw} grid")
    best = np.zeros((gh, gw), dtype=bool)
    for _ in range(restarts + 1):
        mask = _draw(gh, gw, target, shapes, rng, min_patches, min_aspect, tries)
        if abs(int(mask.sum()) - target) < abs(int(best.sum()) - target):
            best = mask
        if int(best.sum()) == target:
            break
    return best


def _draw(gh: int, gw: int, target: int, shapes: list[tuple[int, int]], rng: np.random.Generator,
          min_patches: int, min_aspect: float, tries: int) -> np.ndarray:
    """One attempt of :func:`block_mask`; may end short of ``target``."""
    mask = np.zeros((gh, gw), dtype=bool)
    count = 0
    while count < target:
        left = target - count
        placed = False
        for _ in range(tries):  # BEiT's random rectangle
            rect = sample_rectangle((gh, gw), (min_patches, max(min_patches, left)), rng.uniform,
                                    lambda n: int(rng.integers(0, n)), min_aspect, exact=True)
            if rect is None:
                continue  # rounding can leave the grid, the allowed area or the aspect range
            top, lft, h, w = rect
            new = int((~mask[top : top + h, lft : lft + w]).sum())
            if 0 < new <= left:
                mask[top : top + h, lft : lft + w] = True
                count += new
                placed = True
                break
        if placed:
            continue
        # exhaustive: prefer rectangles that hide exactly what is left, else the most that fit
        best: list[tuple[int, int, int, int]] = []
        best_new = 0
        free = ~mask
        for h, w in shapes:
            counts = window_counts(free, h, w)
            ok = (counts > 0) & (counts <= left)
            if not ok.any():
                continue
            m = int(counts[ok].max())
            if m > best_new:
                best_new, best = m, []
            if m == best_new:
                ys, xs = np.nonzero(ok & (counts == m))
                best.extend((int(y), int(x), h, w) for y, x in zip(ys, xs))
        if not best:
            break  # cannot happen on grids with room for one rectangle; keeps the loop finite
        y, x, h, w = best[int(rng.integers(0, len(best)))]
        mask[y : y + h, x : x + w] = True
        count += best_new
    return mask


def random_patch_mask(grid: tuple[int, int], ratio: float, rng: np.random.Generator) -> np.ndarray:
    """Uniform random mask hiding exactly ``round(ratio * gh * gw)`` patches: ``(gh, gw)`` bool."""
    gh, gw = grid
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"mask ratio must be in [0, 1), got {ratio}")
    target = int(round(ratio * gh * gw))
    flat = np.zeros(gh * gw, dtype=bool)
    flat[rng.permutation(gh * gw)[:target]] = True
    return flat.reshape(gh, gw)

