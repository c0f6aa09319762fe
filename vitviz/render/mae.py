"""Image panels as ``uint8`` arrays (no plotting library, no global state)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

HIDDEN_GREY = 128

# A perceptually ordered colour map (anchors of matplotlib's "viridis", public domain data).
_VIRIDIS = np.array(
    [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142], [31, 158, 137],
     [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]],
    dtype=np.float32,
)


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


def colormap(values: np.ndarray) -> np.ndarray:
    """Map values in [0, 1] to viridis colours (10 anchors, linear between them).

    Args:
        values: any shape ``S``; NaN maps to 0.

    Returns:
        ``S + (3,)`` float32 in [0, 255].
    """
    v = np.nan_to_num(np.clip(np.asarray(values, dtype=np.float32), 0.0, 1.0)) * (len(_VIRIDIS) - 1)
    lo = np.floor(v).astype(int).clip(0, len(_VIRIDIS) - 2)
    t = (v - lo)[..., None]
    return _VIRIDIS[lo] * (1 - t) + _VIRIDIS[lo + 1] * t


def error_heatmap(error_map: np.ndarray, mask: np.ndarray, patch_size: int, vmax: float | None = None,
                  bar_width: int = 44) -> np.ndarray:
    """Per-patch error of the hidden patches as a heatmap with a colour bar.

    Visible patches are drawn light grey (they are not predicted). The colour scale
    runs from 0 to ``vmax`` (default: the largest hidden-patch error).

    Args:
        error_map: ``(gh, gw)`` per-patch MSE.
        mask: ``(gh, gw)`` bool, True = hidden.
        patch_size: output pixels per patch.
        vmax: top of the colour scale.

    Returns:
        ``(gh*p, gw*p + bar_width, 3)`` uint8.
    """
    err = np.asarray(error_map, dtype=np.float32)
    m = np.asarray(mask, dtype=bool)
    top = float(vmax) if vmax is not None else float(err[m].max()) if m.any() else 1.0
    top = top if top > 0 else 1.0
    cells = colormap(err / top).round().astype(np.uint8)
    cells[~m] = 225
    img = np.repeat(np.repeat(cells, patch_size, 0), patch_size, 1)
    h = img.shape[0]
    bar = np.full((h, bar_width, 3), 255, dtype=np.uint8)
    ramp = colormap(np.linspace(1, 0, h - 20)).round().astype(np.uint8)[:, None, :]
    bar[10 : h - 10, 4:14] = ramp
    canvas = Image.fromarray(np.concatenate([img, bar], axis=1))
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default()
    x = img.shape[1] + 16
    draw.text((x, 4), f"{top:.3f}", fill=(30, 30, 30), font=font)
    draw.text((x, h // 2 - 6), f"{top / 2:.3f}", fill=(30, 30, 30), font=font)
    draw.text((x, h - 16), "0", fill=(30, 30, 30), font=font)
    return np.asarray(canvas)
