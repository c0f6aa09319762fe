"""Images of Swin's windows: partitions, the cyclic shift, per-window attention.

Every function takes and returns ``uint8`` RGB arrays ``(H, W, 3)``; drawing is
numpy plus PIL (text only). Geometry comes from :mod:`vitviz.swin`; nothing here
decides which tokens share a window.

Colours: windows are tinted with four colours by the parity of their window row
and column, so neighbouring windows always differ and the pieces of one wrapped
window share a colour. Region seams of a shifted layout are yellow, regions are
lettered A..I in timm's order.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .images import load_image, square_resize, to_uint8
from .render import colormap
from .swin import (
    REGION_LETTERS,
    StageGeometry,
    WindowAttentionCapture,
    blocked_pairs,
    region_labels,
    region_map,
    stage_geometry,
    token_window,
    window_id_map,
    window_regions,
    window_token_positions,
)

#: Window tints by (row parity, col parity).
WINDOW_COLORS = np.array([[230, 75, 75], [60, 130, 235], [70, 190, 105], [240, 175, 40]], dtype=np.float32)
REGION_SEAM = np.array([255, 230, 0], dtype=np.float32)
WHITE = np.array([255, 255, 255], dtype=np.float32)
BLACK = np.array([0, 0, 0], dtype=np.float32)

def synthetic_image(size: int = 224) -> Image.Image:
    """A neutral test picture (no file, no randomness): soft gradient, a sun, hills, a grid of dots.

    The shapes are asymmetric so that the cyclic shift is easy to follow: the sun in
    the top-left corner ends up split across the corners of the rolled map.

    Returns:
        RGB ``PIL.Image`` of ``size x size``.
    """
    if size < 8:
        raise ValueError(f"size must be at least 8, got {size}")
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / (size - 1)
    sky = np.stack([150 + 60 * yy, 185 + 40 * yy, 230 - 20 * yy], axis=-1)
    img = sky.copy()
    sun = (xx - 0.08) ** 2 + (yy - 0.08) ** 2 < 0.13**2
    img[sun] = [250, 200, 70]
    hill1 = yy > 0.62 + 0.12 * np.sin(2 * np.pi * (xx * 0.9 + 0.1))
    hill2 = yy > 0.78 + 0.07 * np.cos(2 * np.pi * xx * 1.6)
    img[hill1] = np.stack([70 + 40 * xx, 140 + 30 * yy, 80 + 0 * xx], axis=-1)[hill1]
    img[hill2] = np.stack([40 + 30 * xx, 100 + 20 * yy, 60 + 0 * xx], axis=-1)[hill2]
    house = (xx > 0.62) & (xx < 0.80) & (yy > 0.46) & (yy < 0.64)
    img[house] = [190, 70, 60]
    roof = (yy > 0.34) & (yy <= 0.46) & (np.abs(xx - 0.71) < (yy - 0.34) * 0.9)
    img[roof] = [120, 50, 45]
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")


@lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _as_float(image: np.ndarray) -> np.ndarray:
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"expected a (H, W, 3) uint8 image, got {image.shape} {image.dtype}")
    return image.astype(np.float32)


def _upscale(image: np.ndarray, size: int) -> np.ndarray:
    """Resize an image to ``size x size`` (bicubic), returning float32."""
    if image.shape[0] == size and image.shape[1] == size:
        return _as_float(image)
    return np.asarray(Image.fromarray(image).resize((size, size), Image.BICUBIC), dtype=np.float32)


def _token_pixels(geom: StageGeometry, size: int) -> int:
    if size % geom.grid[0] or size % geom.grid[1] or geom.grid[0] != geom.grid[1]:
        raise ValueError(f"display size {size} is not a multiple of the {geom.grid} grid")
    return size // geom.grid[0]


def _expand(ids: np.ndarray, tp: int) -> np.ndarray:
    """Token map ``(h, w)`` -> pixel map ``(h*tp, w*tp)``."""
    return np.repeat(np.repeat(ids, tp, axis=0), tp, axis=1)


def _edges(ids_px: np.ndarray, thickness: int = 2, frame: bool = True) -> np.ndarray:
    """Boolean mask of pixels on a border between different ids (1..3 px), plus the image frame."""
    e = np.zeros(ids_px.shape, dtype=bool)
    dv = ids_px[:, 1:] != ids_px[:, :-1]
    dh = ids_px[1:, :] != ids_px[:-1, :]
    e[:, 1:] |= dv
    e[1:, :] |= dh
    if thickness >= 2:
        e[:, :-1] |= dv
        e[:-1, :] |= dh
    if thickness >= 3:
        e[:, 2:] |= dv[:, :-1]
        e[2:, :] |= dh[:-1, :]
    if frame:
        t = max(1, thickness)
        e[:t, :] = e[-t:, :] = True
        e[:, :t] = e[:, -t:] = True
    return e


def _token_grid(shape: tuple[int, int], tp: int) -> np.ndarray:
    """Thin lines between tokens."""
    g = np.zeros(shape, dtype=bool)
    g[::tp, :] = True
    g[:, ::tp] = True
    return g


def _blend(img: np.ndarray, mask: np.ndarray, color: np.ndarray, alpha: float) -> None:
    img[mask] = img[mask] * (1 - alpha) + color * alpha


def _label(img: np.ndarray, texts: list[tuple[float, float, str]], size: int) -> np.ndarray:
    """Draw centred labels ``(x, y, text)`` with a dark outline."""
    pil = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(pil)
    font = _font(size)
    for x, y, text in texts:
        draw.text((x, y), text, fill=(255, 255, 255), font=font, anchor="mm", stroke_width=max(1, size // 7),
                  stroke_fill=(0, 0, 0))
    return np.asarray(pil)


def _corner_text(img: np.ndarray, text: str, size: int) -> np.ndarray:
    """Draw ``text`` in the top-left corner with a dark outline."""
    pil = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))
    ImageDraw.Draw(pil).text((4, 3), text, fill=(255, 255, 255), font=_font(size), anchor="la",
                             stroke_width=max(1, size // 7), stroke_fill=(0, 0, 0))
    return np.asarray(pil)


def _window_colors(geom: StageGeometry, ids: np.ndarray) -> np.ndarray:
    _, n_wc = geom.windows_hw
    wr, wc = np.divmod(ids, n_wc)
    return WINDOW_COLORS[(wr % 2) * 2 + (wc % 2)]


def _rect(mask: np.ndarray, top: int, left: int, size: int, thickness: int) -> None:
    h, w = mask.shape
    b, r = min(top + size, h), min(left + size, w)
    mask[top:top + thickness, left:r] = True
    mask[max(b - thickness, 0):b, left:r] = True
    mask[top:b, left:left + thickness] = True
    mask[top:b, max(r - thickness, 0):r] = True


def partition_overlay(
    image: np.ndarray,
    geom: StageGeometry,
    block: int = 0,
    size: int = 448,
    selected_window: int | None = None,
    token: tuple[int, int] | None = None,
    label_regions: bool = True,
) -> np.ndarray:
    """The image with the windows of one block drawn in the *original* frame.

    For a shifted block the window grid is offset by the shift; the windows that the
    cyclic shift assembles at the bottom/right of the rolled map appear as pieces at
    opposite edges, in one colour, and the regions of the mask are lettered.

    Args:
        image: ``(S, S, 3)`` uint8.
        geom: the stage.
        block: 0-based block (odd = shifted when the stage has a shift).
        size: output side in pixels (a multiple of the stage's grid).
        selected_window: window index to highlight (others are dimmed).
        token: ``(row, col)`` to outline.
        label_regions: letter the regions of a shifted block.

    Returns:
        ``(size, size, 3)`` uint8.
    """
    tp = _token_pixels(geom, size)
    img = _upscale(image, size)
    ids = window_id_map(geom, block)
    ids_px = _expand(ids, tp)
    img = img * 0.72 + _window_colors(geom, ids_px) * 0.28
    if selected_window is not None:
        outside = ids_px != selected_window
        img[outside] = img[outside] * 0.55
    if tp >= 8:
        _blend(img, _token_grid(ids_px.shape, tp), WHITE, 0.18)
    shifted = any(geom.block_shift(block))
    regions = region_map(geom, block)
    if shifted:
        _blend(img, _edges(_expand(regions, tp), 2, frame=False), REGION_SEAM, 0.9)
    img[_edges(ids_px, 2)] = WHITE
    if selected_window is not None:
        sel = _edges(np.where(ids_px == selected_window, 1, 0), 3) & (ids_px == selected_window)
        img[sel] = BLACK
        img[_edges(np.where(ids_px == selected_window, 1, 0), 1) & (ids_px == selected_window)] = WHITE
    if token is not None:
        m = np.zeros(ids_px.shape, dtype=bool)
        _rect(m, token[0] * tp, token[1] * tp, tp, max(1, tp // 6))
        img[m] = WHITE
    if shifted and label_regions:
        texts = []
        for reg in range(9):
            rr, cc = np.nonzero(regions == reg)
            if rr.size:
                texts.append(((cc.min() + cc.max() + 1) / 2 * tp, (rr.min() + rr.max() + 1) / 2 * tp,
                              REGION_LETTERS[reg]))
        return _label(img, texts, max(10, min(22, size // 24)))
    return np.clip(img, 0, 255).astype(np.uint8)


def rolled_overlay(
    image: np.ndarray,
    geom: StageGeometry,
    block: int = 1,
    size: int = 448,
    selected_window: int | None = None,
    token: tuple[int, int] | None = None,
) -> np.ndarray:
    """The cyclic shift: the image rolled by ``-shift`` tokens, on the regular window grid.

    This is the map the shifted block actually partitions. The top ``s`` rows and left
    ``s`` columns of tokens have moved to the bottom and right; the nine regions (seams
    in yellow, letters A..I in timm's order) show which tokens the mask keeps apart.

    Args:
        image: ``(S, S, 3)`` uint8; ``S`` a multiple of the stage grid.
        geom, block: the stage and a block (its shift is used; 0 shows no roll).
        size: output side in pixels.
        selected_window: window index (row-major over the rolled map) to highlight.
        token: original ``(row, col)`` of a token to outline at its rolled position.

    Returns:
        ``(size, size, 3)`` uint8.
    """
    tp = _token_pixels(geom, size)
    sh, sw = geom.block_shift(block)
    img = np.roll(_upscale(image, size), shift=(-sh * tp, -sw * tp), axis=(0, 1))
    h, w = geom.grid
    mh, mw = geom.window
    _, n_wc = geom.windows_hw
    rows, cols = np.arange(h), np.arange(w)
    ids = (rows[:, None] // mh) * n_wc + cols[None, :] // mw
    ids_px = _expand(ids, tp)
    img = img * 0.72 + _window_colors(geom, ids_px) * 0.28
    if selected_window is not None:
        outside = ids_px != selected_window
        img[outside] = img[outside] * 0.55
    if tp >= 8:
        _blend(img, _token_grid(ids_px.shape, tp), WHITE, 0.18)
    regions = region_labels(geom.grid, geom.window, (sh, sw))[:h, :w]
    img[_edges(ids_px, 2)] = WHITE
    if sh or sw:
        img[_edges(_expand(regions, tp), 2, frame=False)] = REGION_SEAM
    if selected_window is not None:
        sel = ids_px == selected_window
        img[_edges(sel.astype(np.int64), 3) & sel] = BLACK
    if token is not None:
        rr, rc = (token[0] - sh) % h, (token[1] - sw) % w
        m = np.zeros(ids_px.shape, dtype=bool)
        _rect(m, rr * tp, rc * tp, tp, max(1, tp // 6))
        img[m] = WHITE
    if sh or sw:
        texts = []
        for reg in range(9):
            rr_, cc_ = np.nonzero(regions == reg)
            if rr_.size:
                texts.append(((cc_.min() + cc_.max() + 1) / 2 * tp, (rr_.min() + rr_.max() + 1) / 2 * tp,
                              REGION_LETTERS[reg]))
        return _label(img, texts, max(10, min(22, size // 24)))
    return np.clip(img, 0, 255).astype(np.uint8)


def stage_partitions(image: np.ndarray, geoms: list[StageGeometry], size: int = 224) -> list[np.ndarray]:
    """The regular (unshifted) window partition of every stage, one image each.

    Returns:
        One ``(size, size, 3)`` uint8 per stage.
    """
    return [partition_overlay(image, g, 0, size, label_regions=False) for g in geoms]


def window_attention_tiles(
    image: np.ndarray, capture: WindowAttentionCapture, size: int = 196, label: bool = True
) -> list[np.ndarray]:
    """Per head: the query's window as the block sees it (rolled), coloured by attention.

    Each tile is the window's ``Mh x Mw`` tokens cut from the rolled image, blended with
    the colour map of the head's weights (scaled to the head's maximum); keys the mask
    hides are crossed out in grey, the query is outlined in white and region seams are
    yellow.

    Args:
        image: ``(S, S, 3)`` uint8 at the model's input size.
        capture: from :func:`vitviz.swin.capture_window_attention`.
        size: tile side in pixels.
        label: write ``head k`` in the top-left corner.

    Returns:
        One ``(cell * Mh, cell * Mh, 3)`` uint8 tile per head, ``cell = size // Mh``.
    """
    geom = capture.geometry
    mh, mw = geom.window
    if mh != mw:
        raise ValueError("tiles are drawn for square windows")
    s_img = image.shape[0]
    tp_img = s_img // geom.grid[0]
    sh, sw = capture.shift
    rolled = np.roll(image, shift=(-sh * tp_img, -sw * tp_img), axis=(0, 1))
    _, n_wc = geom.windows_hw
    r0, c0 = (capture.window_index // n_wc) * mh, (capture.window_index % n_wc) * mw
    crop = np.zeros((mh * tp_img, mw * tp_img, 3), dtype=np.uint8)
    part = rolled[r0 * tp_img:(r0 + mh) * tp_img, c0 * tp_img:(c0 + mw) * tp_img]
    crop[: part.shape[0], : part.shape[1]] = part  # padding positions stay black
    cell = max(1, size // mh)
    side = cell * mh
    base = _upscale(crop, side)
    regions = window_regions(geom, capture.block, capture.window_index).reshape(mh, mw)
    seams = _edges(_expand(regions, cell), 2, frame=False)
    blocked = _expand(capture.blocked.reshape(mh, mw).astype(np.int64), cell).astype(bool)
    qr, qc = divmod(capture.query_index, mw)
    qmask = np.zeros((side, side), dtype=bool)
    _rect(qmask, qr * cell, qc * cell, cell, max(2, cell // 8))
    grid = _token_grid((side, side), cell)
    tiles = []
    for head in range(capture.weights.shape[0]):
        w = capture.weights[head]
        vmax = float(w.max()) if w.max() > 0 else 1.0
        heat = colormap(_expand(w / vmax, cell))
        t = base * 0.35 + heat * 0.65
        diag = (np.add.outer(np.arange(side), np.arange(side)) % 10) < 2
        t[blocked] = base[blocked] * 0.25 + 40
        _blend(t, blocked & diag, np.array([150, 150, 150], dtype=np.float32), 0.8)
        _blend(t, grid, BLACK, 0.25)
        t[seams] = REGION_SEAM
        t[qmask] = WHITE
        tile = np.clip(t, 0, 255).astype(np.uint8)
        tiles.append(_corner_text(tile, f"head {head}", max(10, side // 12)) if label else tile)
    return tiles


def attention_overlay(image: np.ndarray, capture: WindowAttentionCapture, size: int = 448,
                      head: int | None = None) -> np.ndarray:
    """Where the query's keys are in the image: weights (mean over heads, or one head).

    Tokens outside the query's window are dimmed; inside, the colour map shows the
    weight (scaled to the maximum). For a shifted block the window may appear in up to
    four pieces at the image's edges.

    Returns:
        ``(size, size, 3)`` uint8.
    """
    geom = capture.geometry
    tp = _token_pixels(geom, size)
    grid = capture.weights_on_grid()  # (heads, H, W), NaN outside
    inside = ~np.isnan(grid[0])
    w = np.where(inside, np.nan_to_num(grid).mean(axis=0), np.nan) if head is None else grid[head]
    vmax = float(np.nanmax(w)) if inside.any() and np.nanmax(w) > 0 else 1.0
    img = _upscale(image, size)
    inside_px = _expand(inside, tp)
    heat = colormap(_expand(np.where(inside, w / vmax, 0.0), tp))
    out = img * 0.45
    out[inside_px] = img[inside_px] * 0.35 + heat[inside_px] * 0.65
    out[_edges(inside_px.astype(np.int64), 2) & inside_px] = WHITE
    m = np.zeros(inside_px.shape, dtype=bool)
    _rect(m, capture.token[0] * tp, capture.token[1] * tp, tp, max(1, tp // 6))
    out[m] = WHITE
    return np.clip(out, 0, 255).astype(np.uint8)


def input_image(source: object | None, size: int = 224) -> np.ndarray:
    """The picture a Swin view starts from: ``(size, size, 3)`` uint8.

    Args:
        source: anything :func:`vitviz.images.load_image` reads (path, bytes, PIL,
            array), or ``None`` for :func:`synthetic_image`.

    Raises:
        vitviz.ImageError: unreadable input.
    """
    img = synthetic_image(size) if source is None else load_image(source)
    return to_uint8(square_resize(img, size))


@dataclass(frozen=True)
class SwinViews:
    """Everything the Swin tab draws for one stage and one clicked token.

    Attributes:
        geometry: the stage.
        token: original ``(row, col)`` of the clicked token.
        shifted_block: the block whose shifted layout is shown (1, or 0 if the stage
            has a single block); its shift may be ``(0, 0)`` (e.g. Swin-T stage 4).
        regular, shifted, rolled: ``(size, size, 3)`` uint8 views (see
            :func:`partition_overlay`, :func:`rolled_overlay`).
        stages: the regular partition of every stage, ``(stage_size, stage_size, 3)``.
        window_regular, window_shifted: the token's window in each layout.
        query_index: the token's position in its shifted window.
        blocked: ``(A, A)`` bool mask of the shifted window (rows = queries).
        regions: ``(A,)`` region ids of the shifted window's positions.
        positions: ``(A, 2)`` original ``(row, col)`` of the shifted window's positions.
    """

    geometry: StageGeometry
    token: tuple[int, int]
    shifted_block: int
    regular: np.ndarray
    shifted: np.ndarray
    rolled: np.ndarray
    stages: list[np.ndarray]
    window_regular: int
    window_shifted: int
    query_index: int
    blocked: np.ndarray
    regions: np.ndarray
    positions: np.ndarray


def swin_views(
    image: np.ndarray,
    stage: int,
    token: tuple[int, int],
    geometries: list[StageGeometry] | None = None,
    size: int = 448,
    stage_size: int = 224,
) -> SwinViews:
    """Compute the Swin tab's pictures and the clicked window's mask.

    Args:
        image: ``(S, S, 3)`` uint8 at the model's input size.
        stage: 1-based stage.
        token: original ``(row, col)`` on the stage's grid.
        geometries: per-stage geometry (default: Swin-T at 224, :func:`vitviz.swin.stage_geometry`).
        size: side of the three main views; ``stage_size``: side of the per-stage views.
    """
    geoms = stage_geometry(image.shape[0]) if geometries is None else geometries
    if not 1 <= int(stage) <= len(geoms):
        raise ValueError(f"stage must be 1..{len(geoms)}, got {stage!r}")
    g = geoms[int(stage) - 1]
    row, col = int(token[0]), int(token[1])
    if not (0 <= row < g.grid[0] and 0 <= col < g.grid[1]):
        raise ValueError(f"token ({row}, {col}) is outside the {g.grid[0]}x{g.grid[1]} grid of stage {g.stage}")
    sb = 1 if g.depth > 1 else 0
    w_reg, _ = token_window(g, 0, row, col)
    w_sh, q_idx = token_window(g, sb, row, col)
    blocked = blocked_pairs(g.grid, g.window, g.block_shift(sb))[w_sh]
    return SwinViews(
        geometry=g,
        token=(row, col),
        shifted_block=sb,
        regular=partition_overlay(image, g, 0, size, selected_window=w_reg, token=(row, col)),
        shifted=partition_overlay(image, g, sb, size, selected_window=w_sh, token=(row, col)),
        rolled=rolled_overlay(image, g, sb, size, selected_window=w_sh, token=(row, col)),
        stages=stage_partitions(image, geoms, stage_size),
        window_regular=w_reg,
        window_shifted=w_sh,
        query_index=q_idx,
        blocked=blocked,
        regions=window_regions(g, sb, w_sh),
        positions=window_token_positions(g, sb, w_sh),
    )
