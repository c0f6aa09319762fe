"""Rectangles for block masking (BEiT, Bao et al., 2021, §2.3 and Algorithm 1): the one home.

BEiT hides patches in random rectangles: an area drawn uniformly, an aspect ratio
drawn log-uniformly in ``[min_aspect, 1/min_aspect]`` (0.3 in BEiT), the sides rounded
from ``sqrt(area * aspect)`` and ``sqrt(area / aspect)``, and a uniform position.
:func:`sample_rectangle` draws one such rectangle from any source of random numbers,
so both block-mask generators use it and keep their own generators:

* :func:`vitviz.core.masking.block_order` (the MAE tab's nested masks: a torch
  generator, one order of rectangles whose prefixes are the masks of every ratio);
* :func:`vitviz.beit.masking.block_mask` (BEiT's Algorithm 1 with an exact count: a
  numpy generator, redrawn per mask), which also searches every allowed rectangle
  (:func:`rect_shapes`, :func:`window_counts`) when random tries fail.

All masks are ``(gh, gw)`` bool arrays, True = hidden.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

#: BEiT's smallest rectangle, in patches.
MIN_PATCHES = 16
#: BEiT's smallest aspect ratio h/w (the largest is its inverse).
MIN_ASPECT = 0.3
#: Slack on the aspect bounds (rounded sides give exact ratios such as 0.3 = 3/10).
_EPS = 1e-9

#: ``uniform(lo, hi)``: a float in [lo, hi).
Uniform = Callable[[float, float], float]
#: ``integer(n)``: an int in [0, n).
Integer = Callable[[int], int]


def aspect_ok(h: int, w: int, min_aspect: float = MIN_ASPECT) -> bool:
    """True if ``h / w`` lies in ``[min_aspect, 1 / min_aspect]``."""
    return min_aspect - _EPS <= h / w <= 1 / min_aspect + _EPS


def sample_rectangle(grid: tuple[int, int], area: tuple[float, float], uniform: Uniform, integer: Integer,
                     min_aspect: float = MIN_ASPECT, exact: bool = False) -> tuple[int, int, int, int] | None:
    """Draw one BEiT rectangle: ``(top, left, h, w)``, or None when the drawn shape is refused.

    Takes two numbers from ``uniform`` (the area in ``area``, then the log-aspect), and
    two from ``integer`` (top, then left) only when the shape is accepted, so a caller's
    generator advances exactly as BEiT's loop does.

    Args:
        grid: ``(gh, gw)``.
        area: ``(lo, hi)`` of the uniform area draw, in patches.
        uniform: ``uniform(lo, hi)`` from the caller's generator.
        integer: ``integer(n)`` in ``[0, n)`` from the caller's generator.
        min_aspect: smallest aspect ratio h/w.
        exact: also refuse a shape whose rounded sides left the allowed area
            (``h * w < area[0]``) or aspect range (BEiT's Algorithm 1); otherwise only a
            shape that does not fit the grid is refused.
    """
    gh, gw = grid
    a = uniform(area[0], area[1])
    aspect = math.exp(uniform(math.log(min_aspect), math.log(1 / min_aspect)))
    h = int(round(math.sqrt(a * aspect)))
    w = int(round(math.sqrt(a / aspect)))
    if not (1 <= h <= gh and 1 <= w <= gw):
        return None
    if exact and (h * w < area[0] or not aspect_ok(h, w, min_aspect)):
        return None
    top = integer(gh - h + 1)
    left = integer(gw - w + 1)
    return top, left, h, w


def rect_shapes(grid: tuple[int, int], min_patches: int = MIN_PATCHES,
                min_aspect: float = MIN_ASPECT) -> list[tuple[int, int]]:
    """Every allowed ``(h, w)`` on the grid: area >= ``min_patches``, aspect in range."""
    gh, gw = grid
    return [(h, w) for h in range(1, gh + 1) for w in range(1, gw + 1)
            if h * w >= min_patches and aspect_ok(h, w, min_aspect)]


def window_counts(cells: np.ndarray, h: int, w: int) -> np.ndarray:
    """Number of True ``cells`` in every ``h x w`` window: ``(gh-h+1, gw-w+1)`` int64."""
    s = np.pad(cells.astype(np.int64).cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    return s[h:, w:] - s[:-h, w:] - s[h:, :-w] + s[:-h, :-w]


def covered_by_rectangles(mask: np.ndarray, min_patches: int = MIN_PATCHES,
                          min_aspect: float = MIN_ASPECT) -> bool:
    """True if every hidden patch of ``mask`` ``(gh, gw)`` lies in a fully hidden allowed rectangle."""
    covered = np.zeros_like(mask, dtype=bool)
    for h, w in rect_shapes(mask.shape, min_patches, min_aspect):
        full = window_counts(mask, h, w) == h * w
        for y, x in zip(*np.nonzero(full)):
            covered[y : y + h, x : x + w] = True
    return bool((covered | ~mask).all())
