"""Patch arithmetic: cutting images into non-overlapping square patches and back.

The patch order is raster order (row by row, left to right), and the pixel order
inside a flattened patch is (row, column, channel), exactly as in
facebookresearch/mae ``models_mae.py`` (``'nchpwq->nhwpqc'``), so predictions of
published MAE checkpoints unpatchify correctly.
"""

from __future__ import annotations

import torch


def grid_size(height: int, width: int, patch_size: int) -> tuple[int, int]:
    """Number of patches along each axis.

    Args:
        height: image height in pixels; must be a multiple of ``patch_size``.
        width: image width in pixels; must be a multiple of ``patch_size``.
        patch_size: side of a square patch in pixels.

    Returns:
        ``(gh, gw)``: patches per column and per row.

    Raises:
        ValueError: if a side is not a positive multiple of the patch size.
    """
    if patch_size <= 0:
        raise ValueError(f"patch_size must be positive, got {patch_size}")
    if height <= 0 or width <= 0 or height % patch_size or width % patch_size:
        raise ValueError(
            f"image size {height}x{width} is not a positive multiple of patch size {patch_size}"
        )
    return height // patch_size, width // patch_size


def patchify(imgs: torch.Tensor, patch_size: int) -> torch.Tensor:
    """Cut images into flattened patches.

    Args:
        imgs: ``(N, C, H, W)`` images; H and W multiples of ``patch_size``.
        patch_size: side ``p`` of a square patch.

    Returns:
        ``(N, L, p*p*C)`` with ``L = (H/p) * (W/p)`` patches in raster order.
    """
    n, c, h, w = imgs.shape
    gh, gw = grid_size(h, w, patch_size)
    p = patch_size
    x = imgs.reshape(n, c, gh, p, gw, p)
    x = torch.einsum("nchpwq->nhwpqc", x)
    return x.reshape(n, gh * gw, p * p * c)


def unpatchify(x: torch.Tensor, patch_size: int, grid: tuple[int, int], channels: int = 3) -> torch.Tensor:
    """Inverse of :func:`patchify`.

    Args:
        x: ``(N, L, p*p*C)`` flattened patches in raster order.
        patch_size: side ``p`` of a square patch.
        grid: ``(gh, gw)`` with ``gh * gw == L``.
        channels: ``C``.

    Returns:
        ``(N, C, gh*p, gw*p)`` images.
    """
    n, length, dim = x.shape
    gh, gw = grid
    p = patch_size
    if gh * gw != length or dim != p * p * channels:
        raise ValueError(
            f"cannot unpatchify {tuple(x.shape)} into grid {grid} of {p}px patches with {channels} channels"
        )
    x = x.reshape(n, gh, gw, p, p, channels)
    x = torch.einsum("nhwpqc->nchpwq", x)
    return x.reshape(n, channels, gh * p, gw * p)
