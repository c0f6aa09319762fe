"""Every file the app writes goes to Gradio's cache folder and is deleted ``VITVIZ_CACHE_SECONDS`` after its last use.

Gradio deletes files it handed out after ``delete_cache``, but only the files it knows about.
vitviz used to write chart CSVs (four at every start) and export folders to the system temp
folder, where nothing deleted them (1,319 CSVs after one afternoon), and pre-encoded panels
that were never handed out stayed until a restart. Now every file vitviz writes is written by
:func:`write_bytes` (or the image writer of :mod:`vitviz.ui.serve.image_cache`) into Gradio's
cache folder (where Gradio serves it from) and recorded in :data:`WRITTEN`; :func:`sweep`, run
at most every :data:`SWEEP_S` by the writers, deletes those not written or served again within
``VITVIZ_CACHE_SECONDS`` (written again, a file is made young: :func:`write_once`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from pathlib import Path

#: Paths of the files vitviz wrote into Gradio's cache and has not deleted yet.
WRITTEN: set[str] = set()
#: Seconds between two sweeps.
SWEEP_S = 60.0
_LOCK = threading.Lock()
_SWEPT = [0.0]


def cache_folder() -> Path:
    """Gradio's cache folder: ``GRADIO_TEMP_DIR`` (Gradio's documented setting), default ``<temp>/gradio``."""
    return Path(os.environ.get("GRADIO_TEMP_DIR") or Path(tempfile.gettempdir()) / "gradio").resolve()


def sweep(now: float | None = None) -> int:
    """Delete the recorded files not written or served for ``VITVIZ_CACHE_SECONDS`` (by their modification or
    access time); returns how many."""
    from ... import settings

    now = time.time() if now is None else now
    age = settings.get("VITVIZ_CACHE_SECONDS")
    with _LOCK:
        known = list(WRITTEN)
    gone = 0
    for path in known:
        try:
            info = os.stat(path)
            if now - max(info.st_mtime, info.st_atime) < age:
                continue
            os.unlink(path)
            gone += 1
        except FileNotFoundError:
            pass
        except OSError:
            continue
        with _LOCK:
            WRITTEN.discard(path)
    return gone


def record(path: str | Path) -> str:
    """Record a file written into the cache (:func:`sweep` deletes it when unused); returns the path as text."""
    text = str(path)
    now = time.time()
    with _LOCK:
        WRITTEN.add(text)
        due = now - _SWEPT[0] >= SWEEP_S
        if due:
            _SWEPT[0] = now
    if due:
        sweep(now)
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
