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
import os
from dataclasses import dataclass
from typing import Union

import numpy as np
import torch
from PIL import Image

from .. import settings
from ..errors import ImageError
from .decode import from_array, open_checked, to_rgb
from .handle import ImageHandle, open_image, read_file

ImageInput = Union[str, os.PathLike, bytes, ImageHandle, Image.Image, np.ndarray]

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


def load_image(source: ImageInput) -> Image.Image:
    """Read an image from a path, bytes, a PIL image or an array.

    Args:
        source: a file path, the file's bytes, an :class:`~vitviz.core.handle.ImageHandle`, a ``PIL.Image``, or
            an ``(H, W)``, ``(H, W, 3)`` or ``(H, W, 4)`` array (uint8, or float in [0, 1]).

    Returns:
        An RGB ``PIL.Image`` (EXIF orientation applied, transparency on grey), the caller's own copy.
        A file or bytes go through their handle (:func:`~vitviz.core.handle.open_image`): read, hashed and
        decoded once per content and file version.

    Raises:
        ImageError: unreadable, corrupt, too large or otherwise unusable input.
    """
    if isinstance(source, Image.Image):
        MAX_PIXELS = settings.max_pixels()
        w, h = source.size
        if w * h > MAX_PIXELS or w < 1 or h < 1:
            raise ImageError(f"the image is {w}x{h} pixels; the limit is {MAX_PIXELS / 1e6:.0f} megapixels")
        return to_rgb(source.copy())
    if isinstance(source, np.ndarray):
        return from_array(source)
    return open_image(source).image()


def image_size(source: ImageInput) -> tuple[int, int]:
    """``(width, height)`` of an image as :func:`load_image` reads it (a file's from its handle: no copy).

    Raises:
        ImageError: as :func:`load_image`.
    """
    if isinstance(source, (Image.Image, np.ndarray)):
        return load_image(source).size
    return open_image(source).size


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


def check_image_file(source: str | os.PathLike) -> tuple[int, int]:
    """Check, from its header and without decoding, that a file is an image :func:`load_image` reads.

    Same checks and messages as :func:`load_image` (size, format, pixel count, aspect
    ratio); the app runs it before Gradio decodes an upload.

    Returns:
        ``(width, height)``.

    Raises:
        ImageError: a missing, too large, non-image or oversized file.
    """
    return open_checked(read_file(source)).size


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

    An ``(size, size, 3)`` uint8 array is taken as the view already and returned as it is. A file's or bytes'
    view is made once per content and size (:meth:`~vitviz.core.handle.ImageHandle.view`) and shared: read-only,
    as every view from a decoded image is.
    """
    if isinstance(image, np.ndarray) and image.shape == (size, size, 3) and image.dtype == np.uint8:
        return image
    if isinstance(image, (Image.Image, np.ndarray)):
        return to_uint8(square_resize(load_image(image), size))
    size = int(size)
    return open_image(image).view(("square", size), lambda img: to_uint8(square_resize(img, size)))


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

    An ``(H, W, 3)`` uint8 array already at its own native size is returned as it is. A file's or bytes'
    view is made once per content, side and patch and shared (read-only).
    """
    if isinstance(image, np.ndarray) and image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8:
        if native_size(image.shape[1], image.shape[0], max_side, patch) == image.shape[:2]:
            return image
    if isinstance(image, (Image.Image, np.ndarray)):
        return _native_pixels(load_image(image), max_side, patch)
    side, p = int(max_side), int(patch)
    return open_image(image).view(("native", side, p), lambda img: _native_pixels(img, side, p))


def _native_pixels(img: Image.Image, max_side: int, patch: int) -> np.ndarray:
    """``img`` resized to its native size (:func:`native_size`), ``(H, W, 3)`` uint8."""
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
