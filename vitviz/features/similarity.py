"""Patch correspondence: cosine similarity of one patch token to the patch tokens of a layer.

Within an image the map says which patches the layer represents alike; across images
(DINO-style correspondence) the best match is the patch of the other image whose
token points the most the same way.

Shapes: ``D`` channels, ``P`` patch tokens (raster order), ``(gh, gw)`` a patch grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Norms below this count as zero (a zero token has similarity 0 to everything).
EPS = 1e-12


def _unit(tokens: np.ndarray) -> np.ndarray:
    t = np.asarray(tokens, dtype=np.float64)
    n = np.linalg.norm(t, axis=-1, keepdims=True)
    return t / np.where(n > EPS, n, 1.0)


def cosine_similarity(query: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """Cosine of one token with many.

    Args:
        query: ``(D,)``.
        tokens: ``(..., D)``.

    Returns:
        ``(...)`` float64 in [-1, 1] (clipped against rounding); 0 where either
        vector is zero.
    """
    q = np.asarray(query, dtype=np.float64)
    t = np.asarray(tokens, dtype=np.float64)
    if q.ndim != 1 or t.shape[-1] != q.shape[0]:
        raise ValueError(f"query must be (D,) and tokens (..., D); got {q.shape} and {t.shape}")
    return np.clip(_unit(t) @ _unit(q), -1.0, 1.0)


def check_patch(grid: tuple[int, int], row: int, col: int) -> int:
    """Raster index of patch ``(row, col)`` in a ``(gh, gw)`` grid.

    Raises:
        ValueError: naming the valid range, for a patch outside the grid.
    """
    gh, gw = (int(v) for v in grid)
    r, c = int(row), int(col)
    if not (0 <= r < gh and 0 <= c < gw):
        raise ValueError(f"patch (row {r}, col {c}) is outside the {gh}x{gw} grid: row 0..{gh - 1}, col 0..{gw - 1}")
    return r * gw + c


@dataclass(frozen=True, eq=False)
class Correspondence:
    """Similarity of one patch to its own image and to a second image.

    Attributes:
        query: ``(row, col)`` of the clicked patch in the first image.
        same: ``(gh, gw)`` float64 cosine to every patch of the first image (1 at ``query``).
        other: ``(gh2, gw2)`` float64 cosine to every patch of the second image.
        best: ``(row, col)`` of the best match in the second image (first on ties).
        best_score: cosine at ``best``.
    """

    query: tuple[int, int]
    same: np.ndarray
    other: np.ndarray
    best: tuple[int, int]
    best_score: float


def best_match(similarity: np.ndarray) -> tuple[int, int]:
    """``(row, col)`` of the largest value of a ``(gh, gw)`` map (NaN ignored; first in raster order on ties)."""
    s = np.asarray(similarity, dtype=np.float64)
    if s.ndim != 2 or s.size == 0 or np.isnan(s).all():
        raise ValueError(f"a similarity map must be a non-empty (gh, gw) array with a value, got {s.shape}")
    i = int(np.nanargmax(s))
    return divmod(i, s.shape[1])


def correspondence(grid_a: np.ndarray, row: int, col: int, grid_b: np.ndarray, center: bool = True
                   ) -> Correspondence:
    """Cosine maps of patch ``(row, col)`` of image A within A and across to image B.

    Args:
        grid_a: ``(gh, gw, D)`` patch tokens of image A at one layer.
        row, col: the query patch in A.
        grid_b: ``(gh2, gw2, D)`` patch tokens of image B at the same layer.
        center: subtract the mean patch token of both images first. Tokens of one layer
            share a large common direction (every cosine near 1 without this); centring
            compares what is particular to each patch.

    Returns:
        :class:`Correspondence`.
    """
    a = np.asarray(grid_a, dtype=np.float64)
    b = np.asarray(grid_b, dtype=np.float64)
    if a.ndim != 3 or b.ndim != 3 or a.shape[-1] != b.shape[-1]:
        raise ValueError(f"token grids must be (gh, gw, D) with one D, got {a.shape} and {b.shape}")
    if center:
        d = a.shape[-1]
        mean = np.concatenate([a.reshape(-1, d), b.reshape(-1, d)]).mean(axis=0)
        a, b = a - mean, b - mean
    check_patch(a.shape[:2], row, col)
    q = a[int(row), int(col)]
    same = cosine_similarity(q, a)
    same[int(row), int(col)] = 1.0 if np.linalg.norm(q) > EPS else same[int(row), int(col)]
    other = cosine_similarity(q, b)
    br, bc = best_match(other)
    return Correspondence((int(row), int(col)), same, other, (br, bc), float(other[br, bc]))
