"""Images of the token sequence: patch grids, the token strip, position-similarity maps.

Every function takes and returns ``uint8`` RGB arrays ``(H, W, 3)`` (numpy, and PIL for
text only). Each clickable image comes with a small frozen *layout* that maps a click
``(x, y)`` in the drawn image back to what was drawn there, so the UI never does
pixel arithmetic. Geometry comes from :mod:`vitviz.core.patches`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from ..core.patches import PatchGrid
from ._draw import blocks, check_image, colorbar, colormap, font, outline

#: Outline of the selected patch / token.
SELECT = (255, 140, 0)
#: Side the overlay is drawn at (integer upscaling of the model's view, nearest neighbour).
DISPLAY_SIDE = 448
#: Background of strips and mosaics.
PAPER = (255, 255, 255)
CLS_COLOR = (44, 62, 80)


# ----------------------------------------------------------------------------- the patch grid


@dataclass(frozen=True)
class OverlayLayout:
    """Where the model's square view sits in the drawn overlay.

    Attributes:
        scale: integer display magnification of the resized image.
        top, left: position of the square's top-left corner in the drawn image (px).
        side: the square's side in the drawn image (px), ``scale * S``.
    """

    scale: int
    top: int
    left: int
    side: int

    def point(self, x: float, y: float) -> tuple[float, float] | None:
        """A click at ``(x, y)`` as fractions ``(fx, fy)`` of the square, or None outside it."""
        fx, fy = (x - self.left) / self.side, (y - self.top) / self.side
        if 0.0 <= fy < 1.0 and 0.0 <= fx < 1.0:
            return fx, fy
        return None


def grid_alpha(patch_size: int) -> float:
    """Opacity of grid lines: lighter when patches are small, so the photo stays visible."""
    return 0.5 if patch_size >= 14 else 0.35 if patch_size >= 8 else 0.22


def patch_grid_overlay(grid: PatchGrid, resized: np.ndarray, selected: tuple[int, int] | None = None,
                       max_margin: float = 0.5, display_side: int = DISPLAY_SIDE) -> tuple[np.ndarray, OverlayLayout]:
    """The image with its patch grid, the cropped-away parts darkened.

    Args:
        grid: the geometry (:func:`vitviz.core.patches.patch_grid`).
        resized: ``(H', W', 3)`` uint8, the image after resizing its shorter side to ``S``
            (from :func:`vitviz.core.patches.grid_view`).
        selected: ``(row, col)`` of a patch to outline.
        max_margin: at most this fraction of ``S`` of each cropped margin is drawn.
        display_side: the square is magnified by ``max(1, display_side // S)`` (nearest
            neighbour, so each pixel the model sees stays a crisp block).

    Returns:
        ``(image, layout)``.
    """
    check_image(resized)
    s, p = grid.side, grid.patch_size
    keep_v = min(grid.crop_top, int(max_margin * s))
    keep_h = min(grid.crop_left, int(max_margin * s))
    top, left = grid.crop_top - keep_v, grid.crop_left - keep_h
    rh, rw = resized.shape[:2]
    bottom = min(rh, grid.crop_top + s + keep_v)
    right = min(rw, grid.crop_left + s + keep_h)
    k = max(1, display_side // s)
    img = blocks(resized[top:bottom, left:right], k).astype(np.float32)
    oy, ox, side = keep_v * k, keep_h * k, s * k
    kept = np.zeros(img.shape[:2], dtype=bool)
    kept[oy:oy + side, ox:ox + side] = True
    img[~kept] = img[~kept] * 0.35 + 0.65 * 40  # cropped away: dark
    lines = np.zeros(img.shape[:2], dtype=bool)
    sq = lines[oy:oy + side, ox:ox + side]
    sq[:: p * k, :] = True
    sq[:, :: p * k] = True
    sq[-1, :] = True
    sq[:, -1] = True
    a = grid_alpha(p)
    img[lines] = (1 - a) * img[lines] + a * 255.0
    out = img.round().clip(0, 255).astype(np.uint8)
    if selected is not None:
        r, c = selected
        out = outline(out, oy + r * p * k, ox + c * p * k, p * k + 1, p * k + 1, thickness=2 if p * k >= 12 else 1)
    return out, OverlayLayout(k, oy, ox, side)


# ----------------------------------------------------------------------------- the token strip


@dataclass(frozen=True)
class StripLayout:
    """Tiles of the token strip: token ``t`` (0 = [CLS]) sits at row ``t // per_row``.

    Attributes:
        shown: tokens drawn (``[CLS]`` and the first ``shown - 1`` patches).
        total: ``N + 1``.
        per_row: tiles per line.
        tile: tile side (px).
        gap: space between tiles (px).
        label_width: left margin holding the index of each line's first token (px).
        pad_top: white band above the tiles (px), room for a UI label drawn over the image.
    """

    shown: int
    total: int
    per_row: int
    tile: int
    gap: int
    label_width: int
    pad_top: int = 0

    def origin(self, token: int) -> tuple[int, int]:
        """``(top, left)`` of a token's tile."""
        step = self.tile + self.gap
        return (self.pad_top + self.gap + (token // self.per_row) * step,
                self.label_width + (token % self.per_row) * step)

    def token_at(self, x: float, y: float) -> int | None:
        """The token under a click (0 = [CLS]), or None between tiles or past the end."""
        step = self.tile + self.gap
        top = self.pad_top + self.gap
        col, row = int((x - self.label_width) // step), int((y - top) // step)
        if x < self.label_width or y < top or col >= self.per_row:
            return None
        if (x - self.label_width) % step >= self.tile or (y - top) % step >= self.tile:
            return None
        t = row * self.per_row + col
        return t if t < self.shown else None


def _tile(patch: np.ndarray, tile: int) -> np.ndarray:
    p = patch.shape[0]
    if p == tile:
        return patch
    if tile % p == 0:
        f = tile // p
        return blocks(patch, f)
    method = Image.NEAREST if p < tile else Image.BOX
    return np.asarray(Image.fromarray(patch).resize((tile, tile), method))


def token_strip(patches: np.ndarray, selected: int | None = None, tile: int = 24, per_row: int = 28,
                max_tokens: int = 392, gap: int = 3, pad_top: int = 0) -> tuple[np.ndarray, StripLayout]:
    """The input sequence ``[CLS, p1, ..., pN]`` as thumbnails, in order, wrapped into lines.

    Args:
        patches: ``(N, P, P, 3)`` uint8 in sequence order (:func:`vitviz.core.patches.token_patches`).
        selected: a token to outline (0 = [CLS], ``i`` = patch ``i - 1``).
        tile: thumbnail side (px); patches are magnified (nearest) or averaged to it.
        per_row: thumbnails per line.
        max_tokens: at most this many tokens are drawn; a note says how many follow.
        gap: space between thumbnails (px).
        pad_top: white band above the tiles (px).

    Returns:
        ``(image, layout)``; the image is white with each line's first index on the left.
    """
    if patches.ndim != 4 or patches.shape[3] != 3 or patches.dtype != np.uint8:
        raise ValueError(f"expected (N, P, P, 3) uint8 patches, got {patches.shape} {patches.dtype}")
    total = patches.shape[0] + 1
    shown = min(total, max_tokens)
    label_width = 40
    layout = StripLayout(shown, total, per_row, tile, gap, label_width, pad_top)
    rows = -(-shown // per_row)
    note_h = 18 if shown < total else 0
    width = label_width + per_row * (tile + gap)
    height = pad_top + gap + rows * (tile + gap) + note_h
    canvas = np.full((height, width, 3), 255, dtype=np.uint8)
    cls = np.empty((tile, tile, 3), dtype=np.uint8)
    cls[:] = CLS_COLOR
    for t in range(shown):
        y, x = layout.origin(t)
        canvas[y:y + tile, x:x + tile] = cls if t == 0 else _tile(patches[t - 1], tile)
    if selected is not None and 0 <= selected < shown:
        y, x = layout.origin(selected)
        canvas = outline(canvas, y - 2, x - 2, tile + 4, tile + 4, thickness=2)
    pil = Image.fromarray(canvas)
    draw = ImageDraw.Draw(pil)
    small = font(10)
    y0, x0 = layout.origin(0)
    if tile >= 20:  # the label would spill onto the neighbouring tiles
        draw.text((x0 + tile // 2, y0 + tile // 2), "CLS", fill=(255, 255, 255), font=small, anchor="mm")
    for r in range(rows):
        y, _ = layout.origin(r * per_row)
        draw.text((label_width - 6, y + tile // 2), str(r * per_row), fill=(90, 90, 90), font=small, anchor="rm")
    if note_h:
        draw.text((label_width, height - note_h + 2),
                  f"... and {total - shown:,} more tokens (only the first {shown:,} of {total:,} are drawn)",
                  fill=(90, 90, 90), font=font(11))
    return np.asarray(pil), layout


# ----------------------------------------------------------------------------- similarity maps


def similarity_cells(sim: np.ndarray, vmin: float, vmax: float, cell: int) -> np.ndarray:
    """A ``(gh, gw)`` map as viridis cells of ``cell`` px: ``(gh*cell, gw*cell, 3)`` uint8."""
    span = max(vmax - vmin, 1e-6)
    rgb = colormap((np.asarray(sim, dtype=np.float32) - vmin) / span).round().astype(np.uint8)
    return blocks(rgb, cell)


def similarity_image(sim: np.ndarray, selected: tuple[int, int], vmin: float = -1.0, vmax: float = 1.0,
                     size: int = 280, pad_top: int = 0) -> np.ndarray:
    """One patch's similarity map, magnified, the patch outlined, with a colour bar.

    Args:
        sim: ``(gh, gw)`` cosine similarities.
        selected: ``(row, col)`` of the patch the map belongs to.
        vmin, vmax: colour scale.
        size: approximate side of the map (px).
        pad_top: white band above the map (px), room for a UI label drawn over the image.

    Returns:
        ``(pad_top + gh*cell, gw*cell + bar, 3)`` uint8.
    """
    gh, gw = sim.shape
    cell = max(2, size // max(gh, gw))
    img = similarity_cells(sim, vmin, vmax, cell)
    r, c = selected
    img = outline(img, r * cell, c * cell, cell, cell, color=(255, 60, 60), thickness=2 if cell >= 8 else 1)
    img = np.concatenate([np.full((pad_top, img.shape[1], 3), 255, dtype=np.uint8), img], axis=0)
    return np.concatenate([img, colorbar(img.shape[0], vmin, vmax, "cosine", top=pad_top + 14)], axis=1)


@dataclass(frozen=True)
class MosaicLayout:
    """Tiles of the full grid of maps: tile ``(r, c)`` is the map of patch ``(r, c)``.

    Attributes:
        grid: ``(gh, gw)``.
        cell: px per similarity value.
        gap: px between tiles.
        margin: px of the axis label on the left.
        top: px above the tiles (the column label, and room for a UI label).
    """

    grid: tuple[int, int]
    cell: int
    gap: int
    margin: int
    top: int = 22

    @property
    def tile(self) -> int:
        """Tile side in px (one map of ``gw`` cells)."""
        return self.grid[1] * self.cell

    def origin(self, row: int, col: int) -> tuple[int, int]:
        """``(top, left)`` of tile ``(row, col)``."""
        gh, gw = self.grid
        return (self.top + row * (gh * self.cell + self.gap), self.margin + col * (gw * self.cell + self.gap))

    def patch_at(self, x: float, y: float) -> tuple[int, int] | None:
        """The tile (hence patch) under a click, or None in a gap or the margin."""
        gh, gw = self.grid
        sy, sx = gh * self.cell + self.gap, gw * self.cell + self.gap
        if x < self.margin or y < self.top:
            return None
        r, c = int((y - self.top) // sy), int((x - self.margin) // sx)
        if r >= gh or c >= gw or (y - self.top) % sy >= gh * self.cell or (x - self.margin) % sx >= gw * self.cell:
            return None
        return r, c


def similarity_mosaic(sims: np.ndarray, vmin: float = -1.0, vmax: float = 1.0,
                      selected: tuple[int, int] | None = None, target: int = 640, pad_top: int = 0
                      ) -> tuple[np.ndarray, MosaicLayout]:
    """The ViT paper's figure: for every patch, its similarity map, placed at the patch's position.

    Args:
        sims: ``(gh, gw, gh, gw)`` from :func:`vitviz.core.pos_embed.similarity_grid`.
        vmin, vmax: colour scale shared by every tile.
        selected: a tile to outline.
        target: approximate side of the mosaic (px).
        pad_top: extra white band above (px), room for a UI label drawn over the image.

    Returns:
        ``(image, layout)``: tiles on white with 1-2 px gaps, row/column axis labels and a colour bar.
    """
    gh, gw = sims.shape[:2]
    cell = max(1, target // (gh * gw))
    gap = 2 if cell >= 2 else 1
    margin = 22
    top = margin + pad_top
    layout = MosaicLayout((gh, gw), cell, gap, margin, top)
    height = top + gh * (gh * cell + gap)
    width = margin + gw * (gw * cell + gap)
    canvas = np.full((height, width, 3), 255, dtype=np.uint8)
    for r in range(gh):
        for c in range(gw):
            y, x = layout.origin(r, c)
            canvas[y:y + gh * cell, x:x + gw * cell] = similarity_cells(sims[r, c], vmin, vmax, cell)
    if selected is not None:
        y, x = layout.origin(*selected)
        canvas = outline(canvas, y - gap, x - gap, gh * cell + 2 * gap, gw * cell + 2 * gap, color=(255, 60, 60),
                         thickness=max(1, gap))
    pil = Image.fromarray(canvas)
    draw = ImageDraw.Draw(pil)
    f = font(10)
    draw.text((margin, top - 17), "patch column ->", fill=(60, 60, 60), font=f)
    draw.text((1, top), "row", fill=(60, 60, 60), font=f)
    draw.line([(10, top + 14), (10, top + 34)], fill=(60, 60, 60), width=1)
    draw.polygon([(7, top + 30), (13, top + 30), (10, top + 36)], fill=(60, 60, 60))
    img = np.asarray(pil)
    return np.concatenate([img, colorbar(img.shape[0], vmin, vmax, "cosine", top=top)], axis=1), layout


def color_range(sims: np.ndarray) -> tuple[float, float]:
    """Colour scale for similarity maps: from the lowest value (rounded down to 0.1, at least -1) to 1."""
    lo = float(np.nanmin(sims)) if np.size(sims) else -1.0
    return max(-1.0, np.floor(lo * 10.0) / 10.0), 1.0


# ----------------------------------------------------------------------------- the shuffle


def shuffled_view(view: np.ndarray, patch_size: int, perm: np.ndarray) -> np.ndarray:
    """The view with its patches rearranged: position ``i`` shows patch ``perm[i]``. ``(S, S, 3)`` uint8."""
    check_image(view)
    h, w = view.shape[:2]
    p = patch_size
    gh, gw = h // p, w // p
    tiles = view[: gh * p, : gw * p].reshape(gh, p, gw, p, 3).transpose(0, 2, 1, 3, 4).reshape(gh * gw, p, p, 3)
    moved = tiles[np.asarray(perm)]
    return moved.reshape(gh, gw, p, p, 3).transpose(0, 2, 1, 3, 4).reshape(gh * p, gw * p, 3).copy()


def mark_patch(view: np.ndarray, patch_size: int, index: int, grid: tuple[int, int], scale: int = 1,
               color: tuple[int, int, int] = SELECT) -> np.ndarray:
    """Magnify ``view`` by ``scale`` (nearest) and outline patch ``index`` (raster order)."""
    img = blocks(check_image(view), scale) if scale > 1 else np.array(view)
    r, c = divmod(int(index), grid[1])
    p = patch_size * scale
    return outline(img, r * p, c * p, p, p, color=color, thickness=3 if p >= 24 else 2)
