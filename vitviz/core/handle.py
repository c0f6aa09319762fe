"""One handle per image: an upload read, hashed and decoded once, its views kept by content.

A photo dropped on a tab reaches several handlers (the view's cache key, the query view, the views beside
it, then every slider move), each given the file's path. :func:`open_image` turns a path or bytes into an
:class:`ImageHandle`: the content digest (BLAKE2b-128 of the encoded bytes, the image's key everywhere),
the decoded RGB image and the views computed from it, each kept once per content.

- A file is read, hashed and decoded on its first use. Later uses find its digest by the file's identity
  (path, size, modification and change times, inode): a ``stat``, no read. A file rewritten in place
  gets another identity, so it is read again (within the file system's time resolution: a rewrite of
  the same size in the same clock tick is not seen; uploads always arrive at new paths).
- Decoded images (by digest) and views (by digest and what the view is, e.g. ``("square", 224)``) live in
  the one cache (:class:`vitviz.cache.LRU`), in its byte budget (``VITVIZ_CACHE_BUDGET``).
- The limits (``VITVIZ_MAX_UPLOAD``, ``VITVIZ_MAX_PIXELS``) are checked on every use, cached or not.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Union

import numpy as np
from PIL import Image

from .. import settings
from ..cache import LRU
from ..errors import ImageError
from .decode import check_bytes, decode

#: What :func:`open_image` reads: a file path, the file's bytes, or a handle already open.
Source = Union[str, os.PathLike, bytes, bytearray, memoryview, "ImageHandle"]

#: A file version (path, size, mtime, ctime, inode, device) -> its content digest and ``(width, height)``
#: (None: the content did not decode).
_IDENTITY: LRU[tuple, tuple[str, tuple[int, int] | None]] = LRU(512, name="core.handle.identity")
#: Content digest -> the decoded RGB image (shared: never mutated; :meth:`ImageHandle.image` gives a copy).
_DECODED: LRU[str, Image.Image] = LRU(8, name="core.handle.decoded")
#: ``(digest, *what)`` -> a read-only view of that image (``(H, W, 3)`` uint8 for the model views).
_VIEWS: LRU[tuple, np.ndarray] = LRU(32, name="core.handle.views")


def bytes_digest(data: bytes | bytearray | memoryview) -> str:
    """The content key of an encoded image: BLAKE2b-128 of its bytes, hex (32 characters)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class ImageHandle:
    """One image by content: its digest, its size, and its decoded image and views, computed once.

    Handles are cheap (a digest, a size and where to read the content again if the cache let the decoded
    image go); what they give is shared between every handle of the same content.

    Attributes:
        digest: BLAKE2b-128 of the encoded bytes, hex (:func:`bytes_digest`).
        size: ``(width, height)`` of the decoded image (EXIF orientation applied).
    """

    __slots__ = ("digest", "size", "_source")

    def __init__(self, digest: str, source: Path | bytes, size: tuple[int, int] | None = None) -> None:
        """``digest`` of the content at ``source`` (a file, or the bytes themselves); without its ``size``
        (width, height), the content is decoded now unless it is decoded already."""
        self.digest = digest
        self._source = source
        self.size: tuple[int, int] = self.decoded().size if size is None else (int(size[0]), int(size[1]))

    def __repr__(self) -> str:
        return f"ImageHandle({self.digest[:12]}…, {self.size[0]}x{self.size[1]})"

    def decoded(self) -> Image.Image:
        """The decoded RGB image, shared: read it, never change it (:meth:`image` for a copy to change)."""
        return _DECODED.get_or_compute(self.digest, self._decode_again)

    def image(self) -> Image.Image:
        """The decoded RGB image, the caller's own copy."""
        return self.decoded().copy()

    def view(self, what: tuple, make: Callable[[Image.Image], np.ndarray]) -> np.ndarray:
        """The view ``what`` names (``("square", 224)``), made once per content by ``make(decoded image)``.

        Returns:
            The shared array, read-only (copy it to change it).
        """
        def compute() -> np.ndarray:
            arr = np.ascontiguousarray(make(self.decoded()))
            arr.setflags(write=False)
            return arr

        return _VIEWS.get_or_compute((self.digest, *what), compute)

    def _decode_again(self) -> Image.Image:
        """The decoded image after the cache let it go: the bytes held, or the file read again (it must still
        hold the same content)."""
        data = self._source if isinstance(self._source, bytes) else read_file(self._source)
        if data is not self._source and bytes_digest(data) != self.digest:
            raise ImageError("the file changed while it was in use; please drop it again")
        return decode(data)


def _identity(path: Path) -> tuple:
    """The version of the file at ``path``: its path, size, modification and change times, inode and device.

    Raises:
        ImageError: no readable file there, or one over ``VITVIZ_MAX_UPLOAD``.
    """
    try:
        st = path.stat()
    except (OSError, ValueError):
        raise ImageError(f"no readable file at {os.fspath(path)!r}") from None
    check_bytes(st.st_size)
    return (os.path.abspath(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def read_file(source: str | os.PathLike) -> bytes:
    """The bytes of the file at ``source``, after the size check (of the file before reading, and of what was read).

    Raises:
        ImageError: a missing or unreadable file, or one over ``VITVIZ_MAX_UPLOAD``.
    """
    path = Path(source)
    _identity(path)
    try:
        data = path.read_bytes()
    except OSError:
        raise ImageError(f"no readable file at {os.fspath(path)!r}") from None
    check_bytes(len(data))
    return data


def file_digest(source: str | os.PathLike) -> str:
    """The content key of the file at ``source`` (:func:`bytes_digest` of its bytes), read and hashed once per
    file version: later calls cost a ``stat``. The first read also decodes the bytes while they are in hand
    (a file that is no image keeps its digest; opening it says why it is none).

    Raises:
        ImageError: a missing or unreadable file, or one over ``VITVIZ_MAX_UPLOAD``.
    """
    return _file_version(Path(source))[0]


def _file_version(path: Path) -> tuple[str, tuple[int, int] | None]:
    """The digest and decoded size (None: no image) of the file at ``path`` in its current version."""
    ident = _identity(path)

    def first_use() -> tuple[str, tuple[int, int] | None]:
        data = read_file(path)
        if _identity(path) != ident:
            raise ImageError("the file changed while it was read; please drop it again")
        digest = bytes_digest(data)
        try:
            return digest, _DECODED.get_or_compute(digest, lambda: decode(data)).size
        except ImageError:
            return digest, None  # not an image: open_image reads it again and says why

    return _IDENTITY.get_or_compute(ident, first_use)


def open_image(source: Source) -> ImageHandle:
    """The handle of an image file or its bytes: read, hashed and decoded on first use only.

    Args:
        source: a file path, the encoded bytes, or a handle (returned as it is, its limits checked again).

    Returns:
        An :class:`ImageHandle`. A path already seen in the same version costs a ``stat``
        (:func:`file_digest`); bytes cost a hash (their content is their key); a content decoded already is
        not decoded again.

    Raises:
        ImageError: a missing, unreadable, too large, non-image or corrupt file.
    """
    if isinstance(source, ImageHandle):
        handle = source
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        check_bytes(len(data))
        handle = ImageHandle(bytes_digest(data), data)
    elif isinstance(source, (str, os.PathLike)):
        digest, size = _file_version(Path(source))
        handle = ImageHandle(digest, Path(source), size)
    else:
        raise ImageError(f"cannot read an image from a {type(source).__name__}")
    w, h = handle.size
    max_pixels = settings.max_pixels()
    if w * h > max_pixels:  # a limit lowered since the first use
        raise ImageError(f"the image is {w}x{h} pixels; the limit is {max_pixels / 1e6:.0f} megapixels")
    return handle
