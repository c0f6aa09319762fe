"""Photo cut-outs composited onto photographs: extra scenes for the training crops.

A composite is a square crop of a training photo with one to three RGBA cut-outs
(Tux Paint's photographic stamps) pasted at random places, sizes and flips. The cut-outs add
objects with sharp, real outlines (animals, fruit, tools) in front of real
backgrounds, which the wallpapers alone rarely show.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageOps


def _load_rgba(path: Path) -> Image.Image:
    with Image.open(path) as im:
        return im.convert("RGBA")


def composite_crops(backgrounds: list[Path], stamps: list[Path], count: int, size: int,
                    seed: int) -> np.ndarray:
    """``count`` composites of ``size`` px: a background crop with 1-3 stamps on it.

    Args:
        backgrounds: training photos (never held-out ones).
        stamps: RGBA cut-outs.
        count: number of composites.
        size: side of each composite.
        seed: seed of the numpy generator.

    Returns:
        ``(count, size, size, 3)`` uint8.
    """
    if not backgrounds or not stamps:
        return np.zeros((0, size, size, 3), dtype=np.uint8)
    rng = np.random.default_rng(seed)
    stamp_cache: dict[int, Image.Image] = {}
    out = np.empty((count, size, size, 3), dtype=np.uint8)
    order = rng.permutation(count) % len(backgrounds)
    for i in range(count):
        with Image.open(backgrounds[int(order[i])]) as im:
            im.draft("RGB", (size * 2, size * 2))
            bg = ImageOps.exif_transpose(im).convert("RGB")
        w, h = bg.size
        short = min(w, h)
        side = int(rng.uniform(0.4, 1.0) * short)
        x0, y0 = int(rng.integers(0, w - side + 1)), int(rng.integers(0, h - side + 1))
        canvas = bg.crop((x0, y0, x0 + side, y0 + side)).resize((size, size), Image.BICUBIC)
        for _ in range(int(rng.integers(1, 4))):
            k = int(rng.integers(0, len(stamps)))
            if k not in stamp_cache:
                stamp_cache[k] = _load_rgba(stamps[k])
            st = stamp_cache[k]
            scale = rng.uniform(0.3, 0.85) * size / max(st.size)
            sw, sh = max(8, int(st.size[0] * scale)), max(8, int(st.size[1] * scale))
            piece = st.resize((sw, sh), Image.BICUBIC)
            if rng.random() < 0.5:
                piece = piece.transpose(Image.FLIP_LEFT_RIGHT)
            px = int(rng.integers(-sw // 4, size - 3 * sw // 4 + 1))
            py = int(rng.integers(-sh // 4, size - 3 * sh // 4 + 1))
            canvas.paste(piece, (px, py), piece)
        out[i] = np.asarray(canvas, dtype=np.uint8)
    return out
