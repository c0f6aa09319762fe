"""The drawing toolkit every renderer shares: fonts, checks, colours, resizing, cell
expansion, outlines, text and panel rows.

Conventions: images are ``(H, W, 3)`` uint8 on input and output; intermediate work is
float32 in [0, 255]. A per-cell map ``(gh, gw)`` is drawn as blocks with the package's
one pixel -> cell arithmetic (:func:`vitviz.core.patches.cell_rows_cols`).
"""

from __future__ import annotations

from functools import lru_cache

import unicodedata

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ..core.patches import cell_rows_cols

WHITE = np.array([255, 255, 255], dtype=np.float32)
BLACK = np.array([0, 0, 0], dtype=np.float32)
INK = (20, 20, 20)

_VIRIDIS = np.array(
    [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142], [31, 158, 137],
     [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]],
    dtype=np.float32,
)


@lru_cache(maxsize=16)
def font(size: int | None = None) -> ImageFont.ImageFont:
    """PIL's built-in font at ``size`` px (``None``: the small bitmap font)."""
    return ImageFont.load_default() if size is None else ImageFont.load_default(size=size)


#: What a character the drawing font lacks is written as (the font draws a box for it): spaces that only forbid a
#: line break become spaces, typographic signs their ASCII forms. Others lose their accents, or become "?".
SUBSTITUTES = {"\u00a0": " ", "\u202f": " ", "\u2009": " ", "\u2007": " ", "\u2011": "-", "\u2013": "-",
               "\u2014": "-", "\u2212": "-", "\u00d7": "x", "\u2248": "~", "\u2192": "->", "\u2190": "<-",
               "\u2264": "<=", "\u2265": ">=", "\u2026": "...", "\u2018": "'", "\u2019": "'", "\u201c": '"',
               "\u201d": '"'}


@lru_cache(maxsize=4096)
def _has_glyph(f: ImageFont.ImageFont, ch: str) -> bool:
    """Whether ``f`` draws ``ch`` as itself, not as its missing-glyph box (the box of a noncharacter)."""
    if ch.isascii():
        return True
    return bytes(f.getmask(ch)) != bytes(f.getmask("\uffff")) or f.getbbox(ch) != f.getbbox("\uffff")


def drawable(t: str, f: ImageFont.ImageFont) -> str:
    """``t`` with every character ``f`` lacks replaced (:data:`SUBSTITUTES`, else its letters without accents,
    else "?"): PIL's built-in font has no no-break space, "×" or "→", and draws a box for each."""
    out = []
    for ch in t:
        if _has_glyph(f, ch):
            out.append(ch)
        elif ch in SUBSTITUTES:
            out.append(SUBSTITUTES[ch])
        else:
            plain = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode()
            out.append(plain or "?")
    return "".join(out)


def check_image(image: np.ndarray) -> np.ndarray:
    """``image`` as an array, or ``ValueError`` unless it is ``(H, W, 3)`` uint8."""
    a = np.asarray(image)
    if a.ndim != 3 or a.shape[2] != 3 or a.dtype != np.uint8:
        raise ValueError(f"expected a (H, W, 3) uint8 image, got {a.shape} {a.dtype}")
    return a


def to_uint8(img: np.ndarray) -> np.ndarray:
    """Float pixels -> uint8 (clipped to [0, 255], rounded)."""
    return np.clip(img, 0, 255).round().astype(np.uint8)


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


def hw(size: int | tuple[int, int]) -> tuple[int, int]:
    """A panel size as ``(height, width)``: an int is a square's side, a pair is ``(H, W)`` (a photo at its own shape)."""
    if isinstance(size, (int, np.integer)):
        return int(size), int(size)
    return int(size[0]), int(size[1])


def panel_size(view_shape: tuple[int, ...], side: int) -> int | tuple[int, int]:
    """The panel of a model view: ``side`` for a square view, else ``(H, W)`` with the longer side ``side``
    and the view's proportions."""
    h, w = int(view_shape[0]), int(view_shape[1])
    if h == w:
        return int(side)
    return (int(side), max(1, round(side * w / h))) if h > w else (max(1, round(side * h / w)), int(side))


def upscale(image: np.ndarray, size: int | tuple[int, int]) -> np.ndarray:
    """``(H, W, 3)`` uint8 -> ``(size, size, 3)`` (or ``size = (h, w)``) float32 (bicubic; unchanged if already
    that size)."""
    a = check_image(image)
    h, w = hw(size)
    if a.shape[0] == h and a.shape[1] == w:
        return a.astype(np.float32)
    return np.asarray(Image.fromarray(a).resize((w, h), Image.BICUBIC), dtype=np.float32)


def expand(cells: np.ndarray, size: int | tuple[int, int]) -> np.ndarray:
    """``(gh, gw)`` per-cell values -> ``(size, size)`` (or ``size = (h, w)``) per-pixel values (blocks)."""
    rows, cols = cell_rows_cols(np.shape(cells)[:2], size)
    return np.asarray(cells)[rows[:, None], cols[None, :]]


def blocks(cells: np.ndarray, factor: int) -> np.ndarray:
    """Each cell of ``(h, w, ...)`` becomes a ``factor x factor`` block: ``(h*factor, w*factor, ...)``."""
    return np.repeat(np.repeat(np.asarray(cells), factor, axis=0), factor, axis=1)


def cell_box(grid: tuple[int, int], size: int | tuple[int, int], row: int, col: int) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` pixel box (exclusive end) of cell ``(row, col)`` in a ``size``-px view
    (or an ``(h, w)`` one)."""
    gh, gw = grid
    h, w = hw(size)
    top, bottom = -(-row * h // gh), -(-(row + 1) * h // gh)
    left, right = -(-col * w // gw), -(-(col + 1) * w // gw)
    return top, left, bottom, right


def outline_mask(mask: np.ndarray, top: int, left: int, height: int, width: int, thickness: int) -> None:
    """Mark, in place, the ``thickness``-px border inside a box of a boolean ``(H, W)`` mask (clipped)."""
    h, w = mask.shape
    y0, x0, y1, x1 = max(0, top), max(0, left), min(h, top + height), min(w, left + width)
    if y0 >= y1 or x0 >= x1:
        return
    t = max(1, thickness)
    mask[y0:y0 + t, x0:x1] = True
    mask[max(y1 - t, y0):y1, x0:x1] = True
    mask[y0:y1, x0:x0 + t] = True
    mask[y0:y1, max(x1 - t, x0):x1] = True


def outline(image: np.ndarray, top: int, left: int, height: int, width: int,
            color: tuple[int, int, int] = (255, 140, 0), thickness: int = 2) -> np.ndarray:
    """A copy of ``image`` with a rectangle outline drawn inside the box (clipped to the image)."""
    out = np.array(check_image(image), copy=True)
    m = np.zeros(out.shape[:2], dtype=bool)
    outline_mask(m, top, left, height, width, max(1, min(thickness, height // 2 or 1, width // 2 or 1)))
    out[m] = np.asarray(color, dtype=np.uint8)
    return out


def blend(img: np.ndarray, mask: np.ndarray, color: np.ndarray, alpha: float) -> None:
    """In place: pixels under ``mask`` move ``alpha`` of the way to ``color``."""
    img[mask] = img[mask] * (1 - alpha) + color * alpha


def edges(ids_px: np.ndarray, thickness: int = 2, frame: bool = True) -> np.ndarray:
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


def text(image: np.ndarray, items: list[tuple[float, float, str]], size: int, anchor: str = "mm",
         outlined: bool = True, fill: tuple[int, int, int] = (255, 255, 255)) -> np.ndarray:
    """Draw labels ``(x, y, text)`` (white with a dark outline by default). Returns a new uint8 image."""
    pil = Image.fromarray(to_uint8(image) if image.dtype != np.uint8 else image)
    draw = ImageDraw.Draw(pil)
    f = font(size)
    for x, y, t in items:
        kw = dict(stroke_width=max(1, size // 7), stroke_fill=(0, 0, 0)) if outlined else {}
        draw.text((x, y), drawable(t, f), fill=fill, font=f, anchor=anchor, **kw)
    return np.asarray(pil)


def panel_row(panels: list[tuple[str, np.ndarray]], gap: int = 12, title_height: int = 24,
              font_size: int | None = 15) -> np.ndarray:
    """Panels of any heights side by side, each with a title above, top-aligned on white.

    Args:
        panels: ``(title, (H, W, 3) uint8)`` pairs.
        font_size: title font size (``None``: PIL's small bitmap font).

    Returns:
        ``(title_height + max H, sum W + (n-1)*gap, 3)`` uint8.
    """
    if not panels:
        raise ValueError("no panels to place")
    width = sum(p.shape[1] for _, p in panels) + gap * (len(panels) - 1)
    height = max(p.shape[0] for _, p in panels) + title_height
    canvas = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(canvas)
    f = font(font_size)
    x = 0
    for title, p in panels:
        canvas.paste(Image.fromarray(check_image(p)), (x, title_height))
        draw.text((x + 2, 3 if font_size else 4), drawable(title, f), fill=INK, font=f)
        x += p.shape[1] + gap
    return np.asarray(canvas)


def label_row(panels: list[tuple[str, np.ndarray]], gap: int = 8, title_height: int = 22) -> np.ndarray:
    """Equally sized panels side by side with a small title above each (:func:`panel_row`'s compact form).

    Returns:
        ``(title_height + H, n*W + (n-1)*gap, 3)`` uint8 on white.
    """
    return panel_row([(t, np.asarray(a, dtype=np.uint8)) for t, a in panels], gap, title_height, None)


def colorbar(height: int, vmin: float, vmax: float, label: str = "", width: int = 56, top: int = 14,
             bottom: int = 14, fmt: str = "{:.2g}", left: int = 4, size: int = 11) -> np.ndarray:
    """A vertical viridis colour bar with its top, middle and bottom values: ``(height, width, 3)`` uint8.

    The bar (10 px wide) starts ``left`` px from the left edge and runs from ``top`` to ``bottom`` px above
    the lower edge; its values are written beside it at ``size`` px; ``label`` is written above it.
    """
    bar = np.full((height, width, 3), 255, dtype=np.uint8)
    top = max(10, min(int(top), height - 16))
    inner = max(1, height - top - bottom)
    bar[top:top + inner, left:left + 10] = colormap(np.linspace(1, 0, inner)).round().astype(np.uint8)[:, None, :]
    pil = Image.fromarray(bar)
    draw = ImageDraw.Draw(pil)
    f = font(size)
    for y, v in ((top, vmax), (top + inner // 2, (vmin + vmax) / 2), (top + inner - 1, vmin)):
        draw.text((left + 13, y), drawable(fmt.format(v), f), fill=(30, 30, 30), font=f, anchor="lm")
    if label:
        draw.text((2, top - 13), drawable(label, font(10)), fill=(30, 30, 30), font=font(10))
    return np.asarray(pil)
