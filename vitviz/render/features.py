"""Images of the Features tab: PCA feature maps beside their photos.

A feature map is a ``(gh, gw, 3)`` colour per patch (from :mod:`vitviz.features.pca`)
drawn as blocks, so each block is exactly one token's colour.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._draw import check_image, expand, panel_row, to_uint8, upscale

#: Grey of the background patches in the foreground view.
BACKGROUND = 0.0


def feature_map(rgb: np.ndarray, size: int | tuple[int, int]) -> np.ndarray:
    """``(gh, gw, 3)`` colours in [0, 1] -> ``(size, size, 3)`` (or ``size = (h, w)``) uint8, one block per patch."""
    c = np.asarray(rgb, dtype=np.float64)
    if c.ndim != 3 or c.shape[2] != 3:
        raise ValueError(f"a feature map must be (gh, gw, 3), got {c.shape}")
    return to_uint8(np.stack([expand(c[..., k], size) for k in range(3)], axis=-1) * 255.0)


def pca_grid(items: Sequence[tuple[str, np.ndarray, np.ndarray]], size: int = 224, gap: int = 12) -> np.ndarray:
    """Photos on the top row, their feature maps below, one column per image.

    Args:
        items: ``(title, (S, S, 3) uint8 photo, (gh, gw, 3) colours)`` per image.
        size: side of each panel.

    Returns:
        ``(2 * (24 + size), n * size + (n - 1) * gap, 3)`` uint8 on white.
    """
    if not items:
        raise ValueError("no images to draw")
    photos = panel_row([(t, to_uint8(upscale(check_image(p), size))) for t, p, _ in items], gap)
    maps = panel_row([("PCA of its tokens" if i == 0 else "", feature_map(c, size))
                      for i, (_, _, c) in enumerate(items)], gap)
    return np.concatenate([photos, maps], axis=0)


def pca_pair(photo_title: str, photo: np.ndarray, map_title: str, rgb: np.ndarray,
             size: int | tuple[int, int]) -> np.ndarray:
    """One photo and its feature map side by side (a photo at its own shape).

    Args:
        photo: ``(H, W, 3)`` uint8.
        rgb: ``(gh, gw, 3)`` colours in [0, 1].
        size: each panel's side, or ``(h, w)``.

    Returns:
        ``(24 + h, 2 * w + 12, 3)`` uint8 on white.
    """
    return panel_row([(photo_title, to_uint8(upscale(check_image(photo), size))), (map_title, feature_map(rgb, size))])
