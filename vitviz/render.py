"""Image panels as ``uint8`` arrays (no plotting library, no global state)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

HIDDEN_GREY = 128


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


def grid_overlay(image: np.ndarray, patch_size: int, color: tuple[int, int, int] = (255, 255, 255), alpha: float = 0.45) -> np.ndarray:
    """Draw the patch grid as 1-px lines blended over the image. ``(H, W, 3)`` uint8."""
    out = np.array(image, dtype=np.float32, copy=True)
    h, w = out.shape[:2]
    lines = np.zeros((h, w), dtype=bool)
    lines[::patch_size, :] = True
    lines[:, ::patch_size] = True
    lines[-1, :] = True
    lines[:, -1] = True
    out[lines] = (1 - alpha) * out[lines] + alpha * np.asarray(color, dtype=np.float32)
    return out.round().astype(np.uint8)


def label_row(panels: list[tuple[str, np.ndarray]], gap: int = 8, title_height: int = 22) -> np.ndarray:
    """Place equally sized panels side by side with a title above each.

    Args:
        panels: ``(title, (H, W, 3) uint8)`` pairs.

    Returns:
        ``(title_height + H, n*W + (n-1)*gap, 3)`` uint8 on white.
    """
    h, w = panels[0][1].shape[:2]
    width = len(panels) * w + (len(panels) - 1) * gap
    canvas = Image.new("RGB", (width, h + title_height), (255, 255, 255))
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default()
    for i, (title, arr) in enumerate(panels):
        x = i * (w + gap)
        canvas.paste(Image.fromarray(np.asarray(arr, dtype=np.uint8)), (x, title_height))
        draw.text((x + 2, 4), title, fill=(20, 20, 20), font=font)
    return np.asarray(canvas)
