"""Panels of the MAE explorer: the patch grid over an image, the error heatmap."""

from __future__ import annotations

import numpy as np

from ._draw import blocks, colorbar, colormap, text


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


#: The error map's colour bar: its strip starts :data:`BAR_GAP` px right of the map, its values are written at
#: :data:`BAR_TEXT` px (read where the panel is shown at about 3/4 of its size), and the strip, the gap and the
#: widest value ("0.065", 39 px) leave 8 px clear at the right edge: nothing touches the map or the panel's edge.
BAR_GAP, BAR_TEXT, BAR_WIDTH = 8, 15, 68


def error_heatmap(error_map: np.ndarray, mask: np.ndarray, patch_size: int, vmax: float | None = None,
                  bar_width: int = BAR_WIDTH) -> np.ndarray:
    """Per-patch error of the hidden patches as a heatmap with a colour bar.

    Visible patches are drawn light grey (they are not predicted). The colour scale
    runs from 0 to ``vmax`` (default: the largest hidden-patch error).

    Args:
        error_map: ``(gh, gw)`` per-patch MSE.
        mask: ``(gh, gw)`` bool, True = hidden.
        patch_size: output pixels per patch.
        vmax: top of the colour scale.

    Returns:
        ``(gh*p, gw*p + bar_width, 3)`` uint8; with nothing hidden, a panel that says so
        (there is no error to show, and a 0..1 colour bar would suggest one).
    """
    err = np.asarray(error_map, dtype=np.float32)
    m = np.asarray(mask, dtype=bool)
    if not m.any():
        return nothing_hidden_panel((m.shape[0] * patch_size, m.shape[1] * patch_size + bar_width))
    top = float(vmax) if vmax is not None else float(err[m].max()) if m.any() else 1.0
    top = top if top > 0 else 1.0
    cells = colormap(err / top).round().astype(np.uint8)
    cells[~m] = 225
    img = blocks(cells, patch_size)
    bar = colorbar(img.shape[0], 0.0, top, width=bar_width, top=12, bottom=12, fmt="{:.3f}", left=BAR_GAP,
                   size=BAR_TEXT)
    return np.concatenate([img, bar], axis=1)


def nothing_hidden_panel(shape: tuple[int, int]) -> np.ndarray:
    """A light panel saying that nothing is hidden. ``(H, W, 3)`` uint8."""
    h, w = shape
    img = np.full((h, w, 3), 236, dtype=np.uint8)
    size = max(10, min(h, w) // 12)
    return text(img, [(w / 2, h / 2 - size, "nothing is hidden:"), (w / 2, h / 2 + size, "no error to show")],
                size, outlined=False, fill=(60, 60, 60))


def shade_hidden(image: np.ndarray, mask: np.ndarray, patch_size: int, alpha: float = 0.62) -> np.ndarray:
    """Darken the hidden patches of an image, so a painted mask shows on the photo itself.

    Args:
        image: ``(H, W, 3)`` uint8 with ``H = gh * patch_size``, ``W = gw * patch_size``.
        mask: ``(gh, gw)`` bool, True = hidden.

    Returns:
        ``(H, W, 3)`` uint8: hidden patches blended towards dark grey.
    """
    out = np.array(image, dtype=np.float32, copy=True)
    m = blocks(np.asarray(mask, dtype=bool), patch_size)[: out.shape[0], : out.shape[1]]
    out[m] = (1 - alpha) * out[m] + alpha * 40.0
    return out.round().astype(np.uint8)
