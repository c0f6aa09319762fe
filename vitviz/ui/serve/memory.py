"""The served app hands the memory it freed back to the system, every :data:`EVERY_S` seconds.

glibc's malloc keeps freed blocks in its arenas for later allocations and gives memory back to the system only
from the top of an arena. In the served app, cache entries that live long (decoded uploads, slider stops, the
queue's per-session tables) sit among the short-lived blocks of every request, so the free space between them
stays resident: it grew from 15 to 53 MB over 1,500 fresh sessions that looked at a new photo every 300
(``bench/session_memory.py --served --probe``), more than the blocks in use grew. ``malloc_trim(0)`` hands
every whole free page of every arena back (``madvise``) without moving a block: that free space stops counting
as the app's memory. It takes each arena's lock while it walks it (milliseconds for tens of MB; the pages it
gives back are faulted in again when used), so it runs from one thread, at most every :data:`EVERY_S`. Where
the C library has no ``malloc_trim`` (macOS, musl) nothing runs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from collections.abc import Callable

#: Seconds between two trims.
EVERY_S = 30.0
_LOCK = threading.Lock()
_STARTED: list[tuple[threading.Thread, threading.Event]] = []  # the thread and what stops it


def trimmer() -> Callable[[], bool] | None:
    """glibc's ``malloc_trim(0)`` as a function (True when it gave memory back), or None where there is none."""
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: bool(trim(0))


def start(every: float = EVERY_S, trim: Callable[[], bool] | None = None) -> threading.Thread | None:
    """Start the thread that calls ``trim`` (default :func:`trimmer`) every ``every`` seconds, once per process
    (later calls return the same thread); None where there is nothing to call."""
    trim = trim if trim is not None else trimmer()
    if trim is None:
        return None
    with _LOCK:
        if _STARTED:
            return _STARTED[0][0]
        stopped = threading.Event()

        def loop() -> None:
            while not stopped.wait(every):
                trim()

        thread = threading.Thread(target=loop, name="vitviz-malloc-trim", daemon=True)
        thread.start()
        _STARTED.append((thread, stopped))
        return thread


def stop() -> None:
    """End the thread of :func:`start` (a later :func:`start` starts a new one)."""
    with _LOCK:
        for thread, stopped in _STARTED:
            stopped.set()
            thread.join()
        _STARTED.clear()
