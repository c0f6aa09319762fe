"""Decoding untrusted image bytes and arrays into RGB, with the limits checked before decoding.

Every check that guards memory (file size, pixel count, per-mode decoding cost, aspect ratio) runs on the
header, before a pixel is decoded; :func:`decode` then decodes fully, applies the EXIF orientation and
converts any mode to RGB (transparency on mid grey). Reading files and keeping what was decoded is
:mod:`vitviz.core.handle`'s; the model's view of a photo is :mod:`vitviz.core.images`'.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError

from .. import settings
from ..errors import ImageError

# Size limits are settings (``VITVIZ_MAX_UPLOAD``, ``VITVIZ_MAX_PIXELS``), read at each call.
#: Extreme aspect ratios beyond this are refused (the centre crop would show a sliver).
MAX_ASPECT = 50.0

#: Peak bytes per pixel of decoding an image of each mode to RGB (:func:`to_rgb`): the decoded image, the
#: intermediate conversions (palette -> RGBA -> composited RGBA -> RGB; float/int -> float64 -> uint8) and
#: the result. Modes not listed count 4.
DECODE_BYTES_PER_PIXEL = {"1": 4, "L": 4, "RGB": 6, "YCbCr": 6, "CMYK": 7, "LA": 14, "RGBA": 15, "P": 16,
                          "PA": 17, "I;16": 22, "I;16B": 22, "I;16L": 22, "I;16N": 22, "I": 28, "F": 28}


def check_bytes(n: int) -> None:
    """Refuse ``n`` bytes of encoded image over ``VITVIZ_MAX_UPLOAD`` (read now)."""
    max_bytes = settings.max_upload_bytes()
    if n > max_bytes:
        raise ImageError(f"the file is {n / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.0f} MB")


def open_checked(data: bytes) -> Image.Image:
    """The image in ``data``, opened lazily (header read, nothing decoded) after every limit is checked.

    Raises:
        ImageError: too many bytes, empty, not an image, too many pixels for its mode, extreme aspect.
    """
    MAX_PIXELS = settings.max_pixels()
    check_bytes(len(data))
    if not data:
        raise ImageError("the file is empty")
    try:
        img = Image.open(io.BytesIO(data))
    except UnidentifiedImageError:
        raise ImageError("this file is not an image in a format vitviz can read (JPEG, PNG, WebP, GIF, BMP, TIFF)") from None
    except Image.DecompressionBombError:
        raise ImageError(f"the image has too many pixels; the limit is {MAX_PIXELS / 1e6:.0f} megapixels") from None
    except Exception as exc:  # noqa: BLE001 - PIL raises many types on bad headers
        raise ImageError(f"the image header could not be read ({type(exc).__name__})") from None
    w, h = img.size
    if w < 1 or h < 1:
        raise ImageError("the image has no pixels")
    if w * h > MAX_PIXELS:
        raise ImageError(f"the image is {w}x{h} pixels; the limit is {MAX_PIXELS / 1e6:.0f} megapixels")
    # What decoding costs depends on the mode, not only the pixels: a palette PNG of 54 KB or a float TIFF
    # becomes 12-21 bytes per pixel on its way to RGB. Each mode gets the pixels a largest RGB photo's
    # memory allows, checked before decoding.
    cost = DECODE_BYTES_PER_PIXEL.get(img.mode, 4)
    limit = MAX_PIXELS * DECODE_BYTES_PER_PIXEL["RGB"] // cost
    if w * h > limit:
        raise ImageError(f"the image is {w}x{h} pixels in mode {img.mode}; the limit for this kind of image is "
                         f"{limit / 1e6:.0f} megapixels ({MAX_PIXELS / 1e6:.0f} for an RGB photo)")
    if max(w, h) / min(w, h) > MAX_ASPECT:
        raise ImageError(f"the image is {w}x{h}: its aspect ratio is more extreme than {MAX_ASPECT:.0f}:1")
    return img


def to_rgb(img: Image.Image) -> Image.Image:
    """Decode fully and convert any mode to RGB (alpha composited on mid grey)."""
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        img.seek(0)
    except EOFError:
        pass
    try:
        img.load()
        img = ImageOps.exif_transpose(img)
    except Exception as exc:  # noqa: BLE001 - truncated or corrupt data
        raise ImageError(f"the image data is truncated or corrupt ({type(exc).__name__})") from None
    mode = img.mode
    if mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        img = Image.fromarray(scale_to_uint8(np.asarray(img), mode), "L")
        mode = "L"
    if mode == "P" or mode == "PA":
        img = img.convert("RGBA")
    if img.mode in ("RGBA", "LA", "RGBa", "La"):
        rgba = img.convert("RGBA")
        bg = Image.new("RGBA", rgba.size, (128, 128, 128, 255))
        return Image.alpha_composite(bg, rgba).convert("RGB")
    return img.convert("RGB")


def scale_to_uint8(arr: np.ndarray, mode: str) -> np.ndarray:
    """Scale a single-channel high-bit-depth image to ``uint8``.

    16-bit modes divide by 65535; 32-bit integer images whose values fit 8 or 16 bits
    are scaled by that range; float images in [0, 1] are taken as they are; anything
    else is stretched from its minimum to its maximum. NaN becomes 0.
    """
    a = np.asarray(arr, dtype=np.float64)
    finite = a[np.isfinite(a)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if mode.startswith("I;16"):
        lo, hi = 0.0, 65535.0
    elif mode == "I" and lo >= 0 and hi <= 255:
        lo, hi = 0.0, 255.0
    elif mode == "I" and lo >= 0 and hi <= 65535:
        lo, hi = 0.0, 65535.0
    elif mode == "F" and lo >= 0 and hi <= 1:
        lo, hi = 0.0, 1.0
    scaled = np.nan_to_num((a - lo) / max(hi - lo, 1e-12), nan=0.0, posinf=1.0, neginf=0.0).clip(0, 1)
    return (scaled * 255 + 0.5).astype(np.uint8)


def from_array(arr: np.ndarray) -> Image.Image:
    """An RGB image of an ``(H, W)``, ``(H, W, 1|3|4)`` array (uint8, or float in [0, 1]: scaled to 0..255)."""
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise ImageError(f"an image array must be (H, W), (H, W, 3) or (H, W, 4); got {arr.shape}")
    if arr.shape[0] * arr.shape[1] > settings.max_pixels() or arr.size == 0:
        raise ImageError(f"the image is {arr.shape[1]}x{arr.shape[0]} pixels, outside the limits")
    if arr.dtype != np.uint8:
        a = np.nan_to_num(arr.astype(np.float64))
        if a.max(initial=0) <= 1.0:
            a = a * 255.0
        arr = (a.clip(0, 255) + 0.5).astype(np.uint8)
    return to_rgb(Image.fromarray(arr))


def decode(data: bytes) -> Image.Image:
    """The RGB image encoded in ``data``: the limits checked on the header (:func:`open_checked`), then decoded
    fully (:func:`to_rgb`).

    Raises:
        ImageError: as :func:`open_checked`, or truncated or corrupt data.
    """
    return to_rgb(open_checked(data))
