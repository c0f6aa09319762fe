"""Every file the app writes goes to Gradio's cache folder and is deleted on its schedule.

Gradio deletes files it handed out after ``delete_cache`` (``VITVIZ_CACHE_SECONDS``),
but only the files it knows about, in its own cache folder. vitviz used to write chart
CSVs (four at every start) and export folders to the system temp folder, where nothing
deleted them (1,319 CSVs after one afternoon), and pre-encoded panels that were never
handed out stayed until a restart. Now every file vitviz writes is written by
:func:`write_bytes` (or the image writer of :mod:`vitviz.ui.serve.image_cache`) into
Gradio's cache folder and recorded in :data:`WRITTEN`, a set the app registers with
Gradio's cleaner (``demo.temp_file_sets``): each is deleted ``VITVIZ_CACHE_SECONDS``
after it was last written or served, handed out or not.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

#: Paths of every file vitviz wrote into Gradio's cache (Gradio's cleaner removes entries it deletes).
WRITTEN: set[str] = set()


def cache_folder() -> Path:
    """Gradio's cache folder (``GRADIO_TEMP_DIR``, default ``<temp>/gradio``)."""
    from gradio.utils import get_upload_folder

    return Path(get_upload_folder())


def record(path: str | Path) -> str:
    """Register a file written into the cache with Gradio's cleaner; returns the path as text."""
    text = str(path)
    WRITTEN.add(text)
    return text


def write_bytes(data: bytes, name: str) -> str:
    """Write ``data`` as ``<cache>/<content digest>/<name>`` (atomically) and return the path.

    The same bytes always map to the same file, so writing them again costs nothing and
    leaves no second copy; a file being served is never seen half-written.
    """
    safe = Path(name).name or "file"
    return record(write_once(cache_folder() / hashlib.sha256(data).hexdigest()[:32], safe, data).resolve())


def write_once(folder: Path, name: str, data: bytes) -> Path:
    """Write ``data`` to ``folder/name`` through a staging file and ``os.replace`` (a reader never sees a
    partial file); a file already there with the same size is kept and made young again for the cleaner
    (callers name files by their content's digest, so the same size means the same bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / name
    if final.is_file() and final.stat().st_size == len(data):
        os.utime(final)
        return final
    fd, staging = tempfile.mkstemp(dir=folder, prefix=f".{name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(staging, final)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
    return final


def write_text(text: str, name: str) -> str:
    """:func:`write_bytes` for UTF-8 text (CSV, JSON)."""
    return write_bytes(text.encode("utf-8"), name)
