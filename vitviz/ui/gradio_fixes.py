"""Process-wide settings for serving: an image-cache race fix and PIL's pixel limit.

``gradio.processing_utils.save_pil_to_cache`` (6.31) names each output image by the
hash of its bytes and rewrites the file in place on every call. When two requests
produce the same image at once (two visitors on the same example and ratio, which
is common), one client can download the file while the other request is
truncating and rewriting it, and receives a cut-off image. Gradio's own
``save_file_to_cache`` already writes through a staging file and ``os.replace``;
this applies the same pattern to images.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from PIL import Image

_INSTALLED = False


def _atomic_save_pil_to_cache(img: Image.Image, cache_dir: str, name: str = "image", format: str = "webp") -> str:
    from gradio import processing_utils as pu

    data = pu.encode_pil_to_bytes(img, format)
    folder = Path(cache_dir) / pu.hash_bytes(data)
    folder.mkdir(exist_ok=True, parents=True)
    final = (folder / f"{name}.{format}").resolve()
    if final.exists() and final.stat().st_size == len(data):
        try:
            os.utime(final)  # keep it young for delete_cache
        except OSError:
            pass
        return str(final)
    fd, staging = tempfile.mkstemp(dir=folder, prefix=f".{name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(staging, final)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
    return str(final)


def install() -> None:
    """Replace Gradio's image-cache writer with the atomic one (idempotent)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from gradio import processing_utils

    processing_utils.save_pil_to_cache = _atomic_save_pil_to_cache
    # Gradio opens every uploaded image with PIL before vitviz sees it; make PIL's own
    # decompression-bomb check use vitviz's pixel limit (it raises above twice the value).
    from ..images import MAX_PIXELS

    Image.MAX_IMAGE_PIXELS = MAX_PIXELS
    _INSTALLED = True
