"""Images of Swin's windows: partitions, the cyclic shift, per-window attention.

Every function takes and returns ``uint8`` RGB arrays ``(H, W, 3)``; drawing is
numpy plus PIL (text only). Geometry comes from :mod:`vitviz.core.windows`; nothing here
decides which tokens share a window.

Colours: windows are tinted with four colours by the parity of their window row
and column, so neighbouring windows always differ and the pieces of one wrapped
window share a colour. Region seams of a shifted layout are yellow, regions are
lettered A..I in timm's order.
"""

from __future__ import annotations

import numpy as np

from ..core.windows import REGION_LETTERS, StageGeometry, region_labels, region_map, window_id_map, window_regions
from ..explain.windows import WindowAttentionCapture
from ._draw import BLACK, WHITE, blend, blocks, colormap, edges, outline_mask, text, upscale

#: Window tints by (row parity, col parity).
WINDOW_COLORS = np.array([[230, 75, 75], [60, 130, 235], [70, 190, 105], [240, 175, 40]], dtype=np.float32)
REGION_SEAM = np.array([255, 230, 0], dtype=np.float32)


def _token_pixels(geom: StageGeometry, size: int) -> int:
    if size % geom.grid[0] or size % geom.grid[1] or geom.grid[0] != geom.grid[1]:
        raise ValueError(f"display size {size} is not a multiple of the {geom.grid} grid")
    return size // geom.grid[0]


def _token_grid(shape: tuple[int, int], tp: int) -> np.ndarray:
    """Thin lines between tokens."""
    g = np.zeros(shape, dtype=bool)
    g[::tp, :] = True
    g[:, ::tp] = True
    return g


def _window_colors(geom: StageGeometry, ids: np.ndarray) -> np.ndarray:
    _, n_wc = geom.windows_hw
    wr, wc = np.divmod(ids, n_wc)
    return WINDOW_COLORS[(wr % 2) * 2 + (wc % 2)]


def _tint(img: np.ndarray, geom: StageGeometry, ids_px: np.ndarray, selected_window: int | None,
          tp: int) -> np.ndarray:
    """Windows tinted by their colour, the others dimmed when one is selected, thin token lines."""
    img = img * 0.72 + _window_colors(geom, ids_px) * 0.28
    if selected_window is not None:
        outside = ids_px != selected_window
        img[outside] = img[outside] * 0.55
    if tp >= 8:
        blend(img, _token_grid(ids_px.shape, tp), WHITE, 0.18)
    return img


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
    img = upscale(image, size)
    ids = window_id_map(geom, block)
    ids_px = blocks(ids, tp)
    img = _tint(img, geom, ids_px, selected_window, tp)
    shifted = any(geom.block_shift(block))
    regions = region_map(geom, block)
    if shifted:
        blend(img, edges(blocks(regions, tp), 2, frame=False), REGION_SEAM, 0.9)
    img[edges(ids_px, 2)] = WHITE
    if selected_window is not None:
        sel = edges(np.where(ids_px == selected_window, 1, 0), 3) & (ids_px == selected_window)
        img[sel] = BLACK
        img[edges(np.where(ids_px == selected_window, 1, 0), 1) & (ids_px == selected_window)] = WHITE
    if token is not None:
        m = np.zeros(ids_px.shape, dtype=bool)
        _square(m, token[0] * tp, token[1] * tp, tp, max(1, tp // 6))
        img[m] = WHITE
    return _finish(img, regions if shifted and label_regions else None, tp, size)


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
    img = np.roll(upscale(image, size), shift=(-sh * tp, -sw * tp), axis=(0, 1))
    h, w = geom.grid
    mh, mw = geom.window
    _, n_wc = geom.windows_hw
    rows, cols = np.arange(h), np.arange(w)
    ids = (rows[:, None] // mh) * n_wc + cols[None, :] // mw
    ids_px = blocks(ids, tp)
    img = _tint(img, geom, ids_px, selected_window, tp)
    regions = region_labels(geom.grid, geom.window, (sh, sw))[:h, :w]
    img[edges(ids_px, 2)] = WHITE
    if sh or sw:
        img[edges(blocks(regions, tp), 2, frame=False)] = REGION_SEAM
    if selected_window is not None:
        sel = ids_px == selected_window
        img[edges(sel.astype(np.int64), 3) & sel] = BLACK
    if token is not None:
        rr, rc = (token[0] - sh) % h, (token[1] - sw) % w
        m = np.zeros(ids_px.shape, dtype=bool)
        _square(m, rr * tp, rc * tp, tp, max(1, tp // 6))
        img[m] = WHITE
    return _finish(img, regions if sh or sw else None, tp, size)


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
        capture: from :func:`vitviz.explain.windows.window_attention`.
        size: tile side in pixels.
        label: write ``head k`` (counted from 1) in the top-left corner.

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
    base = upscale(crop, side)
    regions = window_regions(geom, capture.block, capture.window_index).reshape(mh, mw)
    seams = edges(blocks(regions, cell), 2, frame=False)
    blocked = blocks(capture.blocked.reshape(mh, mw).astype(np.int64), cell).astype(bool)
    qr, qc = divmod(capture.query_index, mw)
    qmask = np.zeros((side, side), dtype=bool)
    _square(qmask, qr * cell, qc * cell, cell, max(2, cell // 8))
    grid = _token_grid((side, side), cell)
    tiles = []
    for head in range(capture.weights.shape[0]):
        w = capture.weights[head]
        vmax = float(w.max()) if w.max() > 0 else 1.0
        heat = colormap(blocks(w / vmax, cell))
        t = base * 0.35 + heat * 0.65
        diag = (np.add.outer(np.arange(side), np.arange(side)) % 10) < 2
        t[blocked] = base[blocked] * 0.25 + 40
        blend(t, blocked & diag, np.array([150, 150, 150], dtype=np.float32), 0.8)
        blend(t, grid, BLACK, 0.25)
        t[seams] = REGION_SEAM
        t[qmask] = WHITE
        tile = np.clip(t, 0, 255).astype(np.uint8)
        tiles.append(text(tile, [(4, 3, f"head {head + 1}")], max(10, side // 12), anchor="la") if label else tile)
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
    img = upscale(image, size)
    inside_px = blocks(inside, tp)
    heat = colormap(blocks(np.where(inside, w / vmax, 0.0), tp))
    out = img * 0.45
    out[inside_px] = img[inside_px] * 0.35 + heat[inside_px] * 0.65
    out[edges(inside_px.astype(np.int64), 2) & inside_px] = WHITE
    m = np.zeros(inside_px.shape, dtype=bool)
    _square(m, capture.token[0] * tp, capture.token[1] * tp, tp, max(1, tp // 6))
    out[m] = WHITE
    return np.clip(out, 0, 255).astype(np.uint8)


def _square(mask: np.ndarray, top: int, left: int, size: int, thickness: int) -> None:
    outline_mask(mask, top, left, size, size, thickness)


def _finish(img: np.ndarray, regions: np.ndarray | None, tp: int, size: int) -> np.ndarray:
    """uint8 image, with the regions lettered A..I at their centres when ``regions`` is given."""
    if regions is None:
        return np.clip(img, 0, 255).astype(np.uint8)
    texts = []
    for reg in range(9):
        rr, cc = np.nonzero(regions == reg)
        if rr.size:
            texts.append(((cc.min() + cc.max() + 1) / 2 * tp, (rr.min() + rr.max() + 1) / 2 * tp, REGION_LETTERS[reg]))
    return text(img, texts, max(10, min(22, size // 24)))
