"""BEiT's blockwise masking (Bao et al., 2021, algorithm 1), with an exact count.

Rectangles of at least ``min_patches`` patches with aspect ratio in
``[min_aspect, 1/min_aspect]`` are placed at random until ``round(ratio * L)``
patches are hidden. As in BEiT's ``MaskingGenerator``, a rectangle is accepted only
if it hides at least one new patch and no more than the patches still to hide.
BEiT stops after ten failed tries, which can leave the mask short of the target;
here, when random tries fail, an exhaustive search over every allowed rectangle
finishes the mask, so the hidden share is exactly the requested one (every hidden
patch still lies in a fully hidden rectangle of ``>= min_patches`` patches).
"""

from __future__ import annotations

import math

import numpy as np

MIN_PATCHES = 16
MIN_ASPECT = 0.3


def _rect_shapes(gh: int, gw: int, min_patches: int, min_aspect: float) -> list[tuple[int, int]]:
    """Every allowed ``(h, w)``: area >= min_patches, aspect h/w in [min_aspect, 1/min_aspect]."""
    out = []
    for h in range(1, gh + 1):
        for w in range(1, gw + 1):
            if h * w >= min_patches and min_aspect - 1e-9 <= h / w <= 1 / min_aspect + 1e-9:
                out.append((h, w))
    return out


def _window_counts(free: np.ndarray, h: int, w: int) -> np.ndarray:
    """Number of ``free`` cells in every ``h x w`` window: ``(gh-h+1, gw-w+1)`` int."""
    s = np.pad(free.astype(np.int64).cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    return s[h:, w:] - s[:-h, w:] - s[h:, :-w] + s[:-h, :-w]


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
    shapes = _rect_shapes(gh, gw, min_patches, min_aspect)
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
            area = rng.uniform(min_patches, max(min_patches, left))
            aspect = math.exp(rng.uniform(math.log(min_aspect), math.log(1 / min_aspect)))
            h = int(round(math.sqrt(area * aspect)))
            w = int(round(math.sqrt(area / aspect)))
            if h * w < min_patches or h > gh or w > gw or not min_aspect - 1e-9 <= h / w <= 1 / min_aspect + 1e-9:
                continue  # rounding can leave the allowed area or aspect
            top = int(rng.integers(0, gh - h + 1))
            lft = int(rng.integers(0, gw - w + 1))
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
            counts = _window_counts(free, h, w)
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


def covered_by_rectangles(mask: np.ndarray, min_patches: int = MIN_PATCHES,
                          min_aspect: float = MIN_ASPECT) -> bool:
    """True if every hidden patch lies in some fully hidden allowed rectangle (a check for tests)."""
    gh, gw = mask.shape
    covered = np.zeros_like(mask)
    for h, w in _rect_shapes(gh, gw, min_patches, min_aspect):
        full = _window_counts(mask, h, w) == h * w
        for y, x in zip(*np.nonzero(full)):
            covered[y : y + h, x : x + w] = True
    return bool((covered | ~mask).all())
