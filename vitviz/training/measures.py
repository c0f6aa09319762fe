"""Held-out measures of an MAE beyond the hidden-patch MSE.

- :func:`mosaic_factor`: how much a reconstruction looks like a mosaic of flat tiles.
  The mean absolute difference between neighbouring pixels that straddle a patch
  border, divided by the same for neighbours inside one patch, counting only pairs
  that touch a hidden patch. A photograph scores about 1.0 (patch borders are
  invisible lines); flat tiles with jumps between them score far above 1.
- :func:`most_local_head`: the attention locality of an encoder's early layers. The
  smallest mean attention distance of any head of the given layers (at 0% masking),
  divided by the distance of uniform attention. 1.0 is uniform attention; a head that
  looks at its neighbours scores well below 1. The distances come from
  :func:`vitviz.explain.rollout.mean_attention_distance` (the library's one definition).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _pair_masks(hidden: np.ndarray, patch: int, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """``(border, inside)`` masks of neighbouring pixel pairs along ``axis`` that touch a hidden patch.

    Args:
        hidden: ``(gh, gw)`` bool, True = hidden patch.
        patch: patch side in pixels.
        axis: 0 for vertical pairs (row i and i+1), 1 for horizontal pairs.

    Returns:
        Two bool arrays of the pair grid: ``(H-1, W)`` for axis 0, ``(H, W-1)`` for axis 1.
    """
    px = np.repeat(np.repeat(np.asarray(hidden, dtype=bool), patch, 0), patch, 1)  # (H, W)
    n = px.shape[axis]
    first = np.take(px, np.arange(n - 1), axis=axis)
    second = np.take(px, np.arange(1, n), axis=axis)
    touches = first | second
    shape = [1, 1]
    shape[axis] = n - 1
    crosses = ((np.arange(n - 1) + 1) % patch == 0).reshape(shape)  # pair (i, i+1) with i+1 on a border
    return touches & crosses, touches & ~crosses


def mosaic_factor(image: np.ndarray, hidden: np.ndarray, patch: int) -> float:
    """Mean |difference| of neighbours across patch borders ÷ the same inside patches.

    Only pairs with at least one pixel in a hidden patch count (both directions,
    all channels).

    Args:
        image: ``(H, W, 3)`` (or ``(H, W)``) image, e.g. a reconstruction with the
            visible patches pasted back; ``H = gh * patch``, ``W = gw * patch``.
        hidden: ``(gh, gw)`` bool, True = hidden patch.
        patch: patch side in pixels.

    Returns:
        The ratio (about 1.0 for a photograph; ``inf`` when every patch is flat but
        borders differ; ``nan`` when no hidden patch exists or the image is constant).
    """
    img = np.asarray(image, dtype=np.float64)
    if img.ndim == 2:
        img = img[..., None]
    hid = np.asarray(hidden, dtype=bool)
    if img.shape[0] != hid.shape[0] * patch or img.shape[1] != hid.shape[1] * patch:
        raise ValueError(f"image {img.shape[:2]} does not match a {hid.shape} grid of {patch}-px patches")
    border_sum = inside_sum = 0.0
    border_n = inside_n = 0
    for axis in (0, 1):
        border, inside = _pair_masks(hid, patch, axis)
        diff = np.abs(np.diff(img, axis=axis)).mean(axis=-1)  # (pairs...)
        border_sum += float(diff[border].sum())
        inside_sum += float(diff[inside].sum())
        border_n += int(border.sum())
        inside_n += int(inside.sum())
    if border_n == 0 or inside_n == 0:
        return float("nan")
    b, i = border_sum / border_n, inside_sum / inside_n
    if i == 0.0:
        return float("nan") if b == 0.0 else float("inf")
    return b / i


def most_local_head(distance: np.ndarray, uniform: float, layers: Sequence[int] = (0, 1)) -> float:
    """Smallest mean attention distance among the heads of ``layers``, ÷ ``uniform``.

    Args:
        distance: ``(L, H)`` mean attention distance in pixels
            (:func:`vitviz.explain.rollout.mean_attention_distance`, or the mean of it over images).
        uniform: the distance of uniform attention (:func:`vitviz.explain.rollout.uniform_distance`).
        layers: 0-based layer indices (the default is layers 1 and 2).

    Returns:
        The ratio; 1.0 for uniform attention, lower for local heads.
    """
    d = np.asarray(distance, dtype=np.float64)
    if uniform <= 0:
        raise ValueError(f"uniform distance must be positive, got {uniform!r}")
    bad = [i for i in layers if not 0 <= i < d.shape[0]]
    if bad:
        raise ValueError(f"layers {bad} out of range; the model has layers 0..{d.shape[0] - 1}")
    return float(d[list(layers)].min() / uniform)
