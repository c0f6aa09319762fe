"""A corpus of odd and hostile image files, generated on the fly (nothing downloaded).

Each entry is ``(name, bytes, ok)``: ``ok`` tells whether vitviz should read it
(True) or refuse it with an :class:`~vitviz.ImageError` (False).
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import numpy as np
from PIL import Image


def _save(img: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


def _photo(w: int = 96, h: int = 64) -> Image.Image:
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:h, 0:w]
    arr = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) % 256], -1).astype(np.uint8)
    arr = (arr.astype(int) + rng.integers(-10, 10, arr.shape)).clip(0, 255).astype(np.uint8)
    return Image.fromarray(arr, "RGB")


def _png_header_only(w: int, h: int) -> bytes:
    """A PNG whose header claims ``w x h`` pixels, with almost no data (a decompression bomb)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")


def corpus() -> list[tuple[str, bytes, bool]]:
    """All entries, readable ones first."""
    photo = _photo()
    items: list[tuple[str, bytes, bool]] = [
        ("photo.jpg", _save(photo, "JPEG", quality=90), True),
        ("photo.png", _save(photo, "PNG"), True),
        ("photo.webp", _save(photo, "WEBP"), True),
        ("photo.bmp", _save(photo, "BMP"), True),
        ("photo.tiff", _save(photo, "TIFF"), True),
        ("grey_L.png", _save(photo.convert("L"), "PNG"), True),
        ("grey_alpha_LA.png", _save(photo.convert("LA"), "PNG"), True),
        ("rgba.png", _save(photo.convert("RGBA"), "PNG"), True),
        ("cmyk.jpg", _save(photo.convert("CMYK"), "JPEG"), True),
        ("cmyk.tiff", _save(photo.convert("CMYK"), "TIFF"), True),
        ("float_F.tiff", _save(Image.fromarray(np.asarray(photo.convert("L"), np.float32) / 255.0), "TIFF"), True),
        ("deep_I16.png", _save(Image.fromarray(np.asarray(photo.convert("L"), np.uint16) * 257), "PNG"), True),
        ("one_pixel.png", _save(Image.new("RGB", (1, 1), (200, 30, 30)), "PNG"), True),
        ("wide_5000x10.png", _save(Image.new("RGB", (5000, 10), (0, 90, 200)), "PNG"), False),
        ("tall_300x40.png", _save(_photo(40, 300), "PNG"), True),
        ("truncated.jpg", _save(_photo(256, 256), "JPEG", quality=95)[:900], False),
        ("zip_renamed.png", _zip(), False),
        ("bomb_20000x20000.png", _png_header_only(20000, 20000), False),
        ("empty.png", b"", False),
        ("text.png", b"hello, this is not an image\n" * 20, False),
    ]
    pal = photo.convert("P", palette=Image.ADAPTIVE, colors=16)
    pal.info["transparency"] = 0
    items.insert(9, ("palette_transparent.png", _save(pal, "PNG", transparency=0), True))
    frames = [_photo(), Image.new("RGB", (96, 64), (255, 0, 0))]
    items.insert(9, ("animated.gif", _gif(frames), True))
    items.insert(9, ("rotated_exif.jpg", _rotated_exif(), True))
    return items


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.txt", "not an image")
    return buf.getvalue()


def _gif(frames: list[Image.Image]) -> bytes:
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    return buf.getvalue()


def _rotated_exif() -> bytes:
    """A 96x64 landscape JPEG tagged 'rotate 90' (orientation 6): it must load as 64x96."""
    img = _photo()
    exif = Image.Exif()
    exif[0x0112] = 6
    return _save(img, "JPEG", exif=exif.tobytes())
