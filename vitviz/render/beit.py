"""Drawings for visual tokens: token maps, the codebook mosaic, code highlights and
the correctness and confidence overlays of BEiT's predictions.

Images are ``(H, W, 3)`` uint8; per-patch maps are ``(gh, gw)``.
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..core.masking import upsample_mask
from ._draw import INK, blend, blocks, check_image, colormap, edges, text, to_uint8

#: Overlay colours of :func:`correctness_overlay`: top-1 right, in the top 5, wrong.
RIGHT, TOP5, WRONG = (40, 170, 70), (240, 180, 20), (220, 40, 40)
HIGHLIGHT = (255, 140, 0)
#: Grey of the patches a token map leaves out (:func:`token_map`'s ``where``).
OFF_GREY = 215


@lru_cache(maxsize=8)
def code_palette(k: int) -> np.ndarray:
    """``(k, 3)`` uint8: one distinct colour per code (golden-angle hues, three lightness levels)."""
    out = np.empty((k, 3), dtype=np.uint8)
    for i in range(k):
        h = (i * 0.6180339887) % 1.0
        lightness = (0.42, 0.58, 0.72)[i % 3]
        saturation = (0.85, 0.65, 0.75)[(i // 3) % 3]
        out[i] = np.round(np.array(colorsys.hls_to_rgb(h, lightness, saturation)) * 255)
    out.setflags(write=False)
    return out


def id_font_size(cell: int, digits: int) -> int:
    """Font size of the ids written in a token map's cells: as large as the widest id allows (a digit is
    about 0.6 of the font size wide, the id fills at most 90% of its cell). The map is drawn at about 260 px
    in the page, where a third of a cell would be a 6-px font."""
    return max(8, min(int(cell * 0.55), int(0.9 * cell / (0.6 * max(1, digits)))))


def token_map(ids: np.ndarray, size: int, codebook_size: int, show_ids: bool = True,
              where: np.ndarray | None = None) -> np.ndarray:
    """Each patch filled with its code's colour, with the id written in it.

    Args:
        ids: ``(gh, gw)`` int code ids.
        size: output side in pixels (a multiple of ``gh``).
        codebook_size: number of codes (fixes the palette).
        show_ids: write each id in its cell.
        where: ``(gh, gw)`` bool, the patches to draw (e.g. the hidden ones of a
            prediction); the others are left plain grey, without an id. None: all.

    Returns:
        ``(size, size, 3)`` uint8.
    """
    ids = np.asarray(ids, dtype=np.int64)
    gh, gw = ids.shape
    shown = np.ones((gh, gw), dtype=bool) if where is None else np.asarray(where, dtype=bool)
    cell = size // gh
    colours = np.where(shown[..., None], code_palette(codebook_size)[ids], np.uint8(OFF_GREY))
    img = blocks(colours, cell).astype(np.float32)
    cells = blocks(np.arange(gh * gw).reshape(gh, gw), cell)
    img[edges(cells, thickness=1)] = 255
    out = to_uint8(img)
    if show_ids and cell >= 20:
        items = [((c + 0.5) * cell, (r + 0.5) * cell, str(int(ids[r, c])))
                 for r in range(gh) for c in range(gw) if shown[r, c]]
        digits = max((len(t) for _, _, t in items), default=1)
        out = text(out, items, size=id_font_size(cell, digits))
    return out


def highlight_code(image: np.ndarray, ids: np.ndarray, code: int, patch_size: int) -> np.ndarray:
    """The image with the patches whose token is ``code`` outlined and every other patch dimmed.

    Returns:
        ``(H, W, 3)`` uint8 (same size as ``image``).
    """
    img = check_image(image).astype(np.float32)
    hit = np.asarray(ids) == int(code)
    px = upsample_mask(hit, patch_size)
    blend(img, ~px, np.array([20, 20, 20], dtype=np.float32), 0.7)
    cells = blocks(np.where(hit, 1, 0), patch_size)
    border = edges(cells, thickness=2, frame=False) & px
    img[border] = HIGHLIGHT
    return to_uint8(img)


def correctness_overlay(image: np.ndarray, correctness: np.ndarray, patch_size: int, alpha: float = 0.55
                        ) -> np.ndarray:
    """Hidden patches tinted green (top-1 right), amber (in the top 5) or red (wrong); visible ones faded.

    Args:
        image: ``(H, W, 3)`` uint8 (the decoded prediction or the original).
        correctness: ``(gh, gw)`` int: 2, 1, 0 for hidden patches, -1 for visible ones.

    Returns:
        ``(H, W, 3)`` uint8.
    """
    img = check_image(image).astype(np.float32)
    c = np.asarray(correctness)
    blend(img, upsample_mask(c < 0, patch_size), np.array([255, 255, 255], dtype=np.float32), 0.6)
    for value, colour in ((2, RIGHT), (1, TOP5), (0, WRONG)):
        blend(img, upsample_mask(c == value, patch_size), np.array(colour, dtype=np.float32), alpha)
    return to_uint8(img)


def confidence_map(confidence: np.ndarray, mask: np.ndarray, patch_size: int) -> np.ndarray:
    """Viridis blocks of the top-1 probability on hidden patches; visible patches light grey.

    Returns:
        ``(gh*p, gw*p, 3)`` uint8.
    """
    conf = np.asarray(confidence, dtype=np.float32)
    img = blocks(colormap(conf), patch_size)
    img[~upsample_mask(mask, patch_size)] = 225
    return to_uint8(img)


@dataclass(frozen=True)
class CodebookLayout:
    """Where each code sits in a :func:`codebook_mosaic` (for clicks)."""

    order: tuple[int, ...]
    cols: int
    tile: int
    gap: int

    def code_at(self, x: float, y: float) -> int | None:
        """The code under pixel ``(x, y)`` of the mosaic, or None (a gap or outside)."""
        step = self.tile + self.gap
        col, row = int(x // step), int(y // step)
        if x < 0 or y < 0 or col >= self.cols or x - col * step >= self.tile or y - row * step >= self.tile:
            return None
        i = row * self.cols + col
        return self.order[i] if i < len(self.order) else None


def codebook_mosaic(patches: np.ndarray, order: list[int] | np.ndarray, cols: int = 32, scale: int = 2,
                    gap: int = 2, selected: int | None = None) -> tuple[np.ndarray, CodebookLayout]:
    """Every code's decoded patch as a tile, in ``order`` (e.g. most used first).

    Args:
        patches: ``(K, p, p, 3)`` uint8.
        order: code ids, the order of the tiles (row by row).
        cols: tiles per row.
        scale: each patch pixel becomes ``scale x scale`` pixels.
        gap: white pixels between tiles.
        selected: a code to outline.

    Returns:
        ``(image uint8, layout)``.
    """
    order = [int(i) for i in order]
    p = patches.shape[1]
    tile = p * scale
    rows = -(-len(order) // cols)
    step = tile + gap
    out = np.full((rows * step - gap, cols * step - gap, 3), 255, dtype=np.uint8)
    for i, code in enumerate(order):
        r, c = divmod(i, cols)
        out[r * step : r * step + tile, c * step : c * step + tile] = blocks(patches[code], scale)
        if code == selected:
            m = np.zeros(out.shape[:2], dtype=bool)
            y0, x0 = r * step, c * step
            m[max(0, y0 - gap) : y0 + tile + gap, max(0, x0 - gap) : x0 + tile + gap] = True
            m[y0 : y0 + tile, x0 : x0 + tile] = False
            out[m] = INK
    return out, CodebookLayout(tuple(order), cols, tile, gap)
