"""Gradio's image-cache writer made race-free and fast (the contact :data:`.contacts.IMAGE_WRITER`, which says why
Gradio's own is not); PIL's pixel limit set to vitviz's.

Each output image is written once, through a staging file and ``os.replace`` as Gradio's own ``save_file_to_cache``
writes (:func:`.files.write_once`), so a visitor downloading it never gets a cut-off picture. PNGs are encoded at
zlib level 1 (3.4 ms for a 224-pixel panel against 14 ms at level 6, files 3% larger: level 6 cost 65 ms of a
slider move for the MAE tab's five panels), and a content memo maps the exact pixels of an image already written
to its file, so showing the same panel again (a cached slider stop, a second visitor on an example) encodes nothing.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PIL import Image

from ... import settings
from ...cache import LRU
from . import files

if TYPE_CHECKING:
    import numpy as np

#: zlib level of PNG outputs (1: fastest that still compresses; level 6 is 4x slower for 3% less).
PNG_LEVEL = 1


#: Salt of the folder names (as Gradio's own: a path cannot be guessed from an image another visitor may have).
_SALT = secrets.token_bytes(16)
#: Pixel digest -> path of the file already written for those pixels.
_MEMO: LRU[str, str] = LRU(4096)


def pixel_key(img: Image.Image, cache_dir: str, name: str, format: str) -> str | None:
    """Digest of an image's exact pixels and how it is saved; None for images it cannot cover."""
    if getattr(img, "n_frames", 1) != 1 or img.info:
        return None  # animations and images with metadata go the plain way
    h = hashlib.blake2b(img.tobytes(), digest_size=16)
    h.update(f"|{img.mode}|{img.size}|{format}|{name}|{cache_dir}".encode())
    return h.hexdigest()


def encode(img: Image.Image, format: str) -> bytes:
    """Encode as Gradio does (its own metadata carried over in a PNG), PNGs at :data:`PNG_LEVEL`."""
    from PIL import PngImagePlugin

    with io.BytesIO() as out:
        if format.lower() == "png":
            info = PngImagePlugin.PngInfo()
            for key, value in img.info.items():
                if isinstance(key, str) and isinstance(value, str):
                    info.add_text(key, value)
            img.save(out, "png", pnginfo=info, compress_level=PNG_LEVEL)
        elif getattr(img, "n_frames", 1) > 1:  # an animation keeps its frames
            img.save(out, format, save_all=True, loop=0)
        else:
            img.save(out, format)
        return out.getvalue()


def save_pil(img: Image.Image, cache_dir: str, name: str = "image", format: str = "webp") -> str:
    """Write ``img`` to ``cache_dir`` as Gradio names an output image (``<hash of its bytes>/<name>.<format>``),
    once, atomically, memoised by its pixels; returns the path."""
    key = pixel_key(img, cache_dir, name, format)
    known = _MEMO.get(key) if key is not None else None
    if known is not None:
        try:
            os.utime(known)  # still there: made young again for the cleaners
            return files.record(known)
        except OSError:
            pass  # deleted meanwhile: written again
    data = encode(img, format)
    final = files.write_once(Path(cache_dir) / hashlib.sha256(_SALT + data).hexdigest(), f"{name}.{format}",
                             data).resolve()
    if key is not None:
        _MEMO.put(key, str(final))
    return files.record(final)


def writer(original: Callable[..., str]) -> Callable[..., str]:
    """Gradio's image writer ``original(img, cache_dir, name, format)`` replaced by :func:`save_pil` (a contact,
    :mod:`.contacts`); PIL's own decompression-bomb check set to vitviz's pixel limit (Gradio opens every
    uploaded image with PIL before vitviz sees it; PIL raises above twice the value)."""
    Image.MAX_IMAGE_PIXELS = settings.max_pixels()
    return functools.wraps(original)(lambda img, cache_dir, name="image", format="webp": save_pil(
        img, cache_dir, name, format))


def save_array(arr: "np.ndarray", cache_dir: str, format: str = "png") -> str:
    """Write an image array (H x W x 3, uint8) to Gradio's cache as Gradio would show it; its path."""
    return save_pil(Image.fromarray(arr), cache_dir, "image", format)
