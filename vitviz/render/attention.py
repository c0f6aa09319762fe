"""Images of attention: heat overlays on the photo and grids of per-head maps.

Every function takes per-patch maps ``(gh, gw)`` (from :mod:`vitviz.explain`) and
returns ``uint8`` RGB arrays ``(H, W, 3)``; drawing is numpy plus PIL (text only).
Patches are drawn as blocks (nearest neighbour), so what you see is exactly the
per-token number, not an interpolation of it.

Conventions: colours are viridis (dark = low, yellow = high); each map is scaled to
its own maximum unless a ``vmax`` is given (the caption says which); NaN cells are
tokens that do not exist in the sequence (patches hidden from the MAE encoder) and
are drawn grey with hatching; the query patch is outlined in red.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from ._draw import (WHITE, cell_box, check_image, colormap, drawable, expand, font, hw, outline_mask, panel_row,
                    upscale)

#: Outline of the query patch.
QUERY_COLOR = np.array([255, 40, 40], dtype=np.float32)
#: Fill of tokens absent from the sequence.
ABSENT_GREY = np.array([128, 128, 128], dtype=np.float32)


def _region_edges(region_px: np.ndarray, thickness: int) -> np.ndarray:
    """Pixels inside ``region_px`` that touch its border (``thickness`` px wide)."""
    inside = region_px.astype(bool)
    edge = np.zeros_like(inside)
    padded = np.pad(inside, thickness, constant_values=False)
    h, w = inside.shape
    for dy in range(-thickness, thickness + 1):
        for dx in range(-thickness, thickness + 1):
            edge |= ~padded[thickness + dy:thickness + dy + h, thickness + dx:thickness + dx + w]
    return edge & inside


def heat_overlay(
    image: np.ndarray,
    heat: np.ndarray,
    size: int | tuple[int, int] = 448,
    vmax: float | None = None,
    alpha: float = 0.6,
    query: tuple[int, int] | None = None,
    region: np.ndarray | None = None,
    label: str | None = None,
    absent: np.ndarray | None = None,
    hatch: np.ndarray | None = None,
) -> np.ndarray:
    """A per-patch map blended over the photo.

    Args:
        image: ``(S, S, 3)`` uint8 model view.
        heat: ``(gh, gw)`` non-negative values; NaN = no token there (drawn grey, hatched).
        size: side of the output in pixels, or ``(H, W)`` for a photo at its own shape
            (:func:`vitviz.render._draw.panel_size`).
        vmax: top of the colour scale; default the map's maximum.
        alpha: weight of the colour over the photo.
        query: grid ``(row, col)`` to outline (the query patch).
        region: optional ``(gh, gw)`` bool; cells outside are dimmed and the region is
            outlined in white (e.g. :func:`vitviz.explain.rollout.mass_region`).
        label: text drawn along the bottom edge, on a dark band.
        absent: optional ``(gh, gw)`` bool, more cells drawn as absent (as NaN ones).
        hatch: optional ``(gh, gw)`` bool, cells lightly hatched over their colour (e.g. the
            positions of mask tokens in an MAE decoder).

    Returns:
        ``(size, size, 3)`` (or ``(H, W, 3)``) uint8.
    """
    h = np.asarray(heat, dtype=np.float64)
    absent = np.isnan(h) if absent is None else np.isnan(h) | np.asarray(absent, dtype=bool)
    finite = h[~absent]
    top = float(vmax) if vmax is not None else (float(finite.max()) if finite.size else 1.0)
    top = top if top > 0 else 1.0
    img = upscale(image, size)
    colours = colormap(expand(np.where(absent, 0.0, h / top), size))
    out = img * (1 - alpha) + colours * alpha
    absent_px = expand(absent, size)
    height, width = hw(size)
    yy, xx = np.mgrid[0:height, 0:width]
    size = max(height, width)  # the scale of strokes and text below
    stripes = ((xx + yy) // max(2, size // 64)) % 3 == 0
    if absent_px.any():
        out[absent_px] = img[absent_px] * 0.25 + ABSENT_GREY * 0.75
        out[absent_px & stripes] = out[absent_px & stripes] * 0.6 + WHITE * 0.4
    if hatch is not None:
        light = expand(np.asarray(hatch, dtype=bool), size) & ~absent_px & (((xx - yy) // max(2, size // 64)) % 4 == 0)
        out[light] = out[light] * 0.55 + WHITE * 0.45
    if region is not None:
        reg_px = expand(np.asarray(region, dtype=bool), size)
        out[~reg_px] = out[~reg_px] * 0.35
        out[_region_edges(reg_px, max(1, size // 160))] = WHITE
    if query is not None:
        m = np.zeros((height, width), dtype=bool)
        top, left, bottom, right = cell_box(h.shape, (height, width), int(query[0]), int(query[1]))
        outline_mask(m, top, left, bottom - top, right - left, max(2, size // 112))
        out[m] = QUERY_COLOR
    if label:
        band = max(12, size // 32) + 8
        out[-band:] = out[-band:] * 0.3
    arr = np.clip(out, 0, 255).round().astype(np.uint8)
    if label:
        arr = bottom_text(arr, label, max(12, size // 32))
    return arr


def bottom_text(image: np.ndarray, text: str, font_size: int = 14) -> np.ndarray:
    """``text`` in white at the bottom-left corner (drawn over a dark band). ``(H, W, 3)`` uint8."""
    pil = Image.fromarray(check_image(image))
    ImageDraw.Draw(pil).text((5, pil.height - 4), drawable(text, font(font_size)), fill=(255, 255, 255), font=font(font_size), anchor="ld")
    return np.asarray(pil)


def head_grid(
    image: np.ndarray,
    maps: np.ndarray,
    tile: int | tuple[int, int] = 168,
    cols: int | None = None,
    titles: list[str] | None = None,
    query: tuple[int, int] | None = None,
    regions: np.ndarray | None = None,
    vmax: float | None = None,
    hatch: np.ndarray | None = None,
    gap: int = 6,
    title_height: int = 20,
) -> np.ndarray:
    """One overlay per head, in a grid with a title above each tile.

    Args:
        image: ``(S, S, 3)`` uint8 model view.
        maps: ``(H, gh, gw)`` per-head maps (NaN = no token).
        tile: side of each tile in pixels, or ``(h, w)`` for a photo at its own shape.
        cols: tiles per row (default: ``ceil(sqrt(H))``).
        titles: one title per head (default ``head 1``... with the map's maximum).
        query: grid ``(row, col)`` outlined on every tile.
        regions: optional ``(H, gh, gw)`` bool regions (see :func:`heat_overlay`).
        vmax: shared top of the colour scale; default each tile its own maximum.
        hatch: optional ``(gh, gw)`` bool cells hatched on every tile (see :func:`heat_overlay`).

    Returns:
        ``(rows * (title_height + tile) + (rows-1) * gap, cols * tile + (cols-1) * gap, 3)`` uint8 on white.
    """
    m = np.asarray(maps, dtype=np.float64)
    if m.ndim != 3:
        raise ValueError(f"maps must be (heads, gh, gw), got {m.shape}")
    n = m.shape[0]
    if cols is None:
        cols = int(np.ceil(np.sqrt(n)))
    cols = max(1, min(int(cols), n))
    rows = -(-n // cols)
    if titles is None:
        titles = [f"head {i + 1} · max {np.nanmax(m[i]) if np.isfinite(m[i]).any() else 0:.3f}" for i in range(n)]
    th, tw = hw(tile)
    width = cols * tw + (cols - 1) * gap
    height = rows * (th + title_height) + (rows - 1) * gap
    canvas = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(canvas)
    f = font(max(10, min(14, title_height - 6)))
    for i in range(n):
        r, c = divmod(i, cols)
        x, y = c * (tw + gap), r * (th + title_height + gap)
        over = heat_overlay(image, m[i], tile, vmax=vmax, query=query,
                            region=None if regions is None else regions[i], hatch=hatch)
        canvas.paste(Image.fromarray(over), (x, y + title_height))
        draw.text((x + 2, y + 3), drawable(titles[i], f), fill=(20, 20, 20), font=f)
    return np.asarray(canvas)


def side_by_side(panels: list[tuple[str, np.ndarray]], gap: int = 12, title_height: int = 24) -> np.ndarray:
    """Panels of any heights side by side, each with a title above (:func:`vitviz.render._draw.panel_row`)."""
    return panel_row(panels, gap, title_height, 15)
