"""Probe targets that need no labels: where a patch is and what its pixels look like.

Every target is computed from the model's view of the image alone, one row per patch
in raster order:

- ``row`` and ``column``: the patch's grid position, scaled to [0, 1];
- ``colour``: the mean RGB of its pixels, in [0, 1] (three columns);
- ``edges``: its edge energy, the log of the mean gradient magnitude of the grey
  image inside it (central differences, grey in [0, 1]; ``log(g + 0.001)``), a measure
  of texture. The log makes the target's spread comparable between smooth and busy
  photos (gradient magnitudes are heavy-tailed).

Shapes: ``(S, S, 3)`` uint8 image, ``p`` patch side, ``(gh, gw)`` grid, ``P = gh * gw``.
"""

from __future__ import annotations

import numpy as np

#: Probe targets, in chart order.
TARGETS: tuple[str, ...] = ("row", "column", "colour", "edges")
#: Readable names.
TARGET_NAMES = {"row": "row (position)", "column": "column (position)", "colour": "mean colour",
                "edges": "edge energy (texture)"}
#: Added to the mean gradient magnitude before the log (flat patches stay finite).
EDGE_FLOOR = 1e-3
#: ITU-R BT.601 luma weights for the grey image.
LUMA = np.array([0.299, 0.587, 0.114])


def check_target(name: str) -> str:
    """Validate a target name."""
    if name not in TARGETS:
        raise ValueError(f"unknown probe target {name!r}; choose one of {', '.join(TARGETS)}")
    return name


def _patch_means(values: np.ndarray, p: int) -> np.ndarray:
    """``(H, W, C)`` -> ``(P, C)`` mean over each ``p x p`` patch, raster order."""
    h, w, c = values.shape
    gh, gw = h // p, w // p
    return values[: gh * p, : gw * p].reshape(gh, p, gw, p, c).mean(axis=(1, 3)).reshape(gh * gw, c)


def edge_energy(image: np.ndarray) -> np.ndarray:
    """Gradient magnitude of the grey image: ``(H, W, 3)`` uint8 -> ``(H, W)`` float64."""
    grey = (np.asarray(image, dtype=np.float64) / 255.0) @ LUMA
    gy, gx = np.gradient(grey)
    return np.hypot(gx, gy)


def patch_targets(image: np.ndarray, patch_size: int) -> dict[str, np.ndarray]:
    """Every label-free target of every patch.

    Args:
        image: ``(H, W, 3)`` uint8, sides multiples of ``patch_size``.
        patch_size: ``p``.

    Returns:
        ``{name: (P, k) float64}`` in :data:`TARGETS` order; ``k`` is 3 for ``colour``,
        1 otherwise. ``edges`` is ``log(mean gradient magnitude + EDGE_FLOOR)``.
    """
    img = np.asarray(image)
    p = int(patch_size)
    if img.ndim != 3 or img.shape[2] != 3 or p <= 0 or img.shape[0] % p or img.shape[1] % p:
        raise ValueError(f"image must be (H, W, 3) with sides multiples of the patch size {patch_size}, "
                         f"got {img.shape}")
    gh, gw = img.shape[0] // p, img.shape[1] // p
    rows, cols = np.divmod(np.arange(gh * gw), gw)
    return {
        "row": (rows / max(gh - 1, 1)).astype(np.float64)[:, None],
        "column": (cols / max(gw - 1, 1)).astype(np.float64)[:, None],
        "colour": _patch_means(img.astype(np.float64) / 255.0, p),
        "edges": np.log(_patch_means(edge_energy(img)[..., None], p) + EDGE_FLOOR),
    }
