"""Reading untrusted images safely and preparing them for a model.

Policy (stated once, used everywhere): an image is resized so that its *shorter*
side equals the model's input size (bicubic, antialiased), then centre-cropped to
a square. Panels are shown at the model's input size. Images smaller than the
input size are upscaled the same way; a 1x1 image works.

The *native* policy, for models that accept any grid (:data:`ASPECTS`): the photo keeps
its shape and is never cropped. Its longer side becomes ``max_side`` rounded to a multiple
of the patch size, the shorter side the nearest multiple in proportion (at least one
patch); both are resized bicubically, so the shape changes by at most half a patch per
side (:func:`native_size`, :func:`native_view`).
"""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import numpy as np
import torch
from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError

from .. import settings
from ..cache import LRU
from ..errors import ImageError

ImageInput = Union[str, os.PathLike, bytes, Image.Image, np.ndarray]

# Size limits are settings (``VITVIZ_MAX_UPLOAD``, ``VITVIZ_MAX_PIXELS``), read at each call.
#: Extreme aspect ratios beyond this are refused (the centre crop would show a sliver).
MAX_ASPECT = 50.0

#: Peak bytes per pixel of decoding an image of each mode to RGB (:func:`_to_rgb`): the decoded image, the
#: intermediate conversions (palette -> RGBA -> composited RGBA -> RGB; float/int -> float64 -> uint8) and
#: the result. Modes not listed count 4.
DECODE_BYTES_PER_PIXEL = {"1": 4, "L": 4, "RGB": 6, "YCbCr": 6, "CMYK": 7, "LA": 14, "RGBA": 15, "P": 16,
                          "PA": 17, "I;16": 22, "I;16B": 22, "I;16L": 22, "I;16N": 22, "I": 28, "F": 28}

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class DataConfig:
    """A model's preprocessing: input size and normalisation (as timm's data config)."""

    input_size: int = 224
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD

    def to_dict(self) -> dict:
        """timm-style dict: ``input_size`` is ``(3, S, S)``."""
        return {"input_size": (3, self.input_size, self.input_size), "mean": self.mean, "std": self.std}


def _open(data: bytes) -> Image.Image:
    MAX_BYTES, MAX_PIXELS = settings.max_upload_bytes(), settings.max_pixels()
    if len(data) > MAX_BYTES:
        raise ImageError(f"the file is {len(data) / 1e6:.1f} MB; the limit is {MAX_BYTES / 1e6:.0f} MB")
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


def _to_rgb(img: Image.Image) -> Image.Image:
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
        img = Image.fromarray(_scale_to_uint8(np.asarray(img), mode), "L")
        mode = "L"
    if mode == "P" or mode == "PA":
        img = img.convert("RGBA")
    if img.mode in ("RGBA", "LA", "RGBa", "La"):
        rgba = img.convert("RGBA")
        bg = Image.new("RGBA", rgba.size, (128, 128, 128, 255))
        return Image.alpha_composite(bg, rgba).convert("RGB")
    return img.convert("RGB")


def _scale_to_uint8(arr: np.ndarray, mode: str) -> np.ndarray:
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


def load_image(source: ImageInput) -> Image.Image:
    """Read an image from a path, bytes, a PIL image or an array.

    Args:
        source: a file path, the file's bytes, a ``PIL.Image``, or an ``(H, W)``,
            ``(H, W, 3)`` or ``(H, W, 4)`` array (uint8, or float in [0, 1]).

    Returns:
        An RGB ``PIL.Image`` (EXIF orientation applied, transparency on grey), the caller's own copy.
        A file is decoded once per content (:func:`file_digest`): the same photo under another
        path, or uploaded twice, is not decoded again.

    Raises:
        ImageError: unreadable, corrupt, too large or otherwise unusable input.
    """
    MAX_PIXELS = settings.max_pixels()
    if isinstance(source, Image.Image):
        w, h = source.size
        if w * h > MAX_PIXELS or w < 1 or h < 1:
            raise ImageError(f"the image is {w}x{h} pixels; the limit is {MAX_PIXELS / 1e6:.0f} megapixels")
        return _to_rgb(source.copy())
    if isinstance(source, np.ndarray):
        return _from_array(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > settings.max_upload_bytes():
            return _to_rgb(_open(data))  # raises the size sentence, memo hit or not
    elif isinstance(source, (str, os.PathLike)):
        data = _read_file(source)  # the size limit is checked here, so a memo hit obeys today's limit too
    else:
        raise ImageError(f"cannot read an image from a {type(source).__name__}")
    img = _DECODED.get_or_compute(bytes_digest(data), lambda: _to_rgb(_open(data)))
    if img.size[0] * img.size[1] > MAX_PIXELS:
        raise ImageError(f"the image is {img.size[0]}x{img.size[1]} pixels; the limit is "
                         f"{MAX_PIXELS / 1e6:.0f} megapixels")
    return img.copy()


def image_size(source: ImageInput) -> tuple[int, int]:
    """``(width, height)`` of an image as :func:`load_image` reads it (a file is decoded once: the memo below).

    Raises:
        ImageError: as :func:`load_image`.
    """
    return load_image(source).size


#: Image files and byte strings already decoded, by content (:func:`bytes_digest`) -> their RGB image: one
#: upload is decoded once, however many views and caches read it (the MAE tab's view, sweep and slider stops
#: used to decode it four times: ``bench/decodes.py``). Entries count against the one cache budget
#: (``VITVIZ_CACHE_BUDGET``).
_DECODED: LRU[str, Image.Image] = LRU(8, name="core.images.decoded")


def bytes_digest(data: bytes) -> str:
    """The content key of an encoded image: BLAKE2b-128 of its bytes, hex (32 characters)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def pixels_digest(pixels: np.ndarray) -> str:
    """The content key of decoded pixels, the one image key of every cache below the UI.

    Args:
        pixels: any array, typically a model's ``(S, S, 3)`` uint8 view.

    Returns:
        BLAKE2b-128 of the array's bytes, shape and dtype, hex (32 characters).
    """
    a = np.ascontiguousarray(pixels)
    h = hashlib.blake2b(a.tobytes(), digest_size=16)
    h.update(f"|{a.shape}|{a.dtype}".encode())
    return h.hexdigest()


def file_digest(source: str | os.PathLike) -> str:
    """The content key of an image file (:func:`bytes_digest` of its bytes), after the size check.

    Raises:
        ImageError: a missing file or one over ``VITVIZ_MAX_UPLOAD``.
    """
    return bytes_digest(_read_file(source))


def _read_file(source: str | os.PathLike) -> bytes:
    """The bytes of an image file, after checking it exists and is within ``VITVIZ_MAX_UPLOAD``."""
    path, max_bytes = Path(source), settings.max_upload_bytes()
    try:
        size = path.stat().st_size
    except OSError:
        raise ImageError(f"no readable file at {os.fspath(source)!r}") from None
    if size > max_bytes:
        raise ImageError(f"the file is {size / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.0f} MB")
    return path.read_bytes()


def check_image_file(source: str | os.PathLike) -> tuple[int, int]:
    """Check, from its header and without decoding, that a file is an image :func:`load_image` reads.

    Same checks and messages as :func:`load_image` (size, format, pixel count, aspect
    ratio); the app runs it before Gradio decodes an upload.

    Returns:
        ``(width, height)``.

    Raises:
        ImageError: a missing, too large, non-image or oversized file.
    """
    return _open(_read_file(source)).size


def _from_array(arr: np.ndarray) -> Image.Image:
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
    return _to_rgb(Image.fromarray(arr))


def square_resize(img: Image.Image, size: int) -> Image.Image:
    """Resize the shorter side to ``size`` and centre-crop to ``size x size``."""
    w, h = img.size
    scale = size / min(w, h)
    nw, nh = max(size, round(w * scale)), max(size, round(h * scale))
    img = img.resize((nw, nh), Image.BICUBIC, reducing_gap=None)
    left, top = (nw - size) // 2, (nh - size) // 2
    return img.crop((left, top, left + size, top + size))


def to_uint8(img: Image.Image) -> np.ndarray:
    """``(H, W, 3)`` uint8 array of an RGB image."""
    return np.asarray(img.convert("RGB"), dtype=np.uint8)


def uint8_to_unit(arr: np.ndarray) -> torch.Tensor:
    """``(H, W, 3)`` uint8 -> ``(3, H, W)`` float32 in [0, 1]."""
    return torch.from_numpy(np.array(arr, dtype=np.uint8, copy=True)).permute(2, 0, 1).float().div_(255.0)


def unit_to_uint8(x: torch.Tensor) -> np.ndarray:
    """``(3, H, W)`` float in [0, 1] -> ``(H, W, 3)`` uint8 (rounded, clipped)."""
    return x.clamp(0, 1).mul(255).round().to(torch.uint8).permute(1, 2, 0).cpu().numpy()


def normalize(x: torch.Tensor, cfg: DataConfig) -> torch.Tensor:
    """``(..., 3, H, W)`` in [0, 1] -> model space ``(x - mean) / std``."""
    mean = torch.tensor(cfg.mean, dtype=x.dtype, device=x.device).view(3, 1, 1)
    std = torch.tensor(cfg.std, dtype=x.dtype, device=x.device).view(3, 1, 1)
    return (x - mean) / std


def denormalize(x: torch.Tensor, cfg: DataConfig) -> torch.Tensor:
    """Inverse of :func:`normalize`: model space -> [0, 1] (not clipped)."""
    mean = torch.tensor(cfg.mean, dtype=x.dtype, device=x.device).view(3, 1, 1)
    std = torch.tensor(cfg.std, dtype=x.dtype, device=x.device).view(3, 1, 1)
    return x * std + mean



def square_view(image: ImageInput, size: int) -> np.ndarray:
    """The ``(size, size, 3)`` uint8 view a model sees (the policy above).

    An ``(size, size, 3)`` uint8 array is taken as the view already and returned as it is.
    """
    if isinstance(image, np.ndarray) and image.shape == (size, size, 3) and image.dtype == np.uint8:
        return image
    return to_uint8(square_resize(load_image(image), size))


#: How a photo becomes a model's view: ``square`` (shorter side to the input size, centre crop) or
#: ``native`` (its own shape, longer side ``max_side``, never cropped).
ASPECTS: tuple[str, ...] = ("square", "native")


def check_aspect(aspect: str) -> str:
    """Validate an aspect name (:data:`ASPECTS`)."""
    if aspect not in ASPECTS:
        raise ValueError(f"unknown aspect {aspect!r}; choose one of {', '.join(ASPECTS)}")
    return aspect


def native_size(width: int, height: int, max_side: int, patch: int) -> tuple[int, int]:
    """``(H, W)`` in pixels of a ``width x height`` photo's native view.

    The longer side becomes ``max_side`` rounded to the nearest multiple of ``patch``; the
    shorter side ``round(short / long * L / patch) * patch``, at least one patch. A 16:9
    photo at ``max_side=644``, ``patch=14``: ``(364, 644)``, a 26x46 grid.

    Raises:
        ValueError: ``max_side`` below one patch, or a non-positive size.
    """
    w, h, m, p = int(width), int(height), int(max_side), int(patch)
    if p < 1 or w < 1 or h < 1:
        raise ValueError(f"sizes must be positive, got {width}x{height} with patch {patch}")
    if m < p:
        raise ValueError(f"max_side must be at least one patch ({p} px), got {max_side}")
    long_side = max(p, int(round(m / p)) * p)
    short = max(1, int(round(min(w, h) / max(w, h) * long_side / p))) * p
    return (short, long_side) if w >= h else (long_side, short)


def native_view(image: ImageInput, max_side: int, patch: int) -> np.ndarray:
    """The ``(H, W, 3)`` uint8 native view (the policy above, :func:`native_size`), never cropped.

    An ``(H, W, 3)`` uint8 array already at its own native size is returned as it is.
    """
    if isinstance(image, np.ndarray) and image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8:
        if native_size(image.shape[1], image.shape[0], max_side, patch) == image.shape[:2]:
            return image
    img = load_image(image)
    h, w = native_size(img.size[0], img.size[1], max_side, patch)
    if (w, h) == img.size:
        return to_uint8(img)
    return to_uint8(img.resize((w, h), Image.BICUBIC, reducing_gap=None))


def model_view(image: ImageInput, size: int, patch: int, aspect: str = "square",
               max_side: int | None = None) -> np.ndarray:
    """A model's view of an image by aspect: :func:`square_view` at ``size``, or :func:`native_view` at
    ``max_side`` (default ``size``) rounded to ``patch``.

    Returns:
        ``(S, S, 3)`` or ``(H, W, 3)`` uint8.
    """
    if check_aspect(aspect) == "square":
        return square_view(image, size)
    return native_view(image, size if max_side is None else int(max_side), patch)


def model_input(view: np.ndarray, cfg: DataConfig, device: torch.device | str | None = None) -> torch.Tensor:
    """``(H, W, 3)`` uint8 view -> ``(1, 3, H, W)`` normalised float32 on ``device``."""
    x = normalize(uint8_to_unit(view), cfg).unsqueeze(0)
    return x if device is None else x.to(device)


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


def view_or_synthetic(source: ImageInput | None, size: int = 224) -> np.ndarray:
    """:func:`square_view` of ``source``, or of :func:`synthetic_image` when ``source`` is None.

    Raises:
        vitviz.ImageError: unreadable input.
    """
    return square_view(synthetic_image(size) if source is None else source, size)
