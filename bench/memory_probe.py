"""What a served app's memory is made of, asked from outside while it runs: resident memory, malloc's arenas
(in use and free), Python's small-object heap, Gradio's per-session tables and vitviz's caches.

Resident memory alone cannot tell a structure that grows from a cache filling to its cap or from memory that
malloc keeps after it was freed. ``bench/session_memory.py --served --probe`` starts the app with this module
loaded into it (a ``sitecustomize`` on the app's ``PYTHONPATH``: the app's code is not changed) and asks for
an anatomy after each step: :func:`request` leaves a file in the probe's folder, a thread in the app
(:func:`start`) answers with ``anatomy-N.json`` (:func:`anatomy`). Reading Gradio's tables names its internals:
this is a measuring tool, outside the package (``tools/gradio_contacts.py`` counts ``vitviz/`` only).

Each answer runs a full garbage collection first, and ``trim`` (:func:`request`) calls glibc's
``malloc_trim(0)`` after measuring (the resident memory it gives back is the free space malloc held in whole
pages); both change the app's state for the steps after. Python's heap statistics come from
``sys._debugmallocstats``, which writes to the process's standard error: for that moment the app's own
messages go to the probe too.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

#: The environment variable naming the probe's folder (set by :func:`environment`).
FOLDER_VAR = "VITVIZ_MEMORY_PROBE"


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def environment(folder: Path) -> dict[str, str]:
    """Environment entries that load the probe into an app started with them (``PYTHONPATH`` keeps the
    caller's entries after the probe's)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text("import memory_probe\nmemory_probe.start()\n")
    path = [str(folder), str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH", "")]
    return {FOLDER_VAR: str(folder), "PYTHONPATH": os.pathsep.join(p for p in path if p)}


def request(folder: Path, name: str, trim: bool = False, timeout: float = 120.0) -> dict[str, Any]:
    """Ask the app for its anatomy (:func:`anatomy`), named ``name``; the answer, or ``{"error": ...}``."""
    answer = folder / f"anatomy-{name}.json"
    answer.unlink(missing_ok=True)
    (folder / f"request-{name}").write_text("trim" if trim else "")
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        time.sleep(0.2)
        if answer.exists():
            return json.loads(answer.read_text())
    return {"error": "no answer"}


def start() -> None:
    """In the app (``app.py``'s own process only, not its workers): answer requests in the probe's folder."""
    folder = os.environ.get(FOLDER_VAR)
    if not folder or not sys.argv or not sys.argv[0].endswith("app.py"):
        return

    def serve() -> None:
        while True:
            time.sleep(0.2)
            for path in Path(folder).glob("request-*"):
                trim = path.read_text() == "trim"
                path.unlink()
                try:
                    result = anatomy(trim)
                except Exception as exc:  # noqa: BLE001 - the answer says what failed
                    result = {"error": repr(exc)}
                staging = path.with_name(f".{path.name}.json")
                staging.write_text(json.dumps(result, indent=1, default=str))
                staging.replace(path.with_name(f"anatomy-{path.name[len('request-'):]}.json"))

    threading.Thread(target=serve, name="memory-probe", daemon=True).start()


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _malloc(libc: Any) -> dict[str, float]:
    """glibc's arenas (all of them): obtained from the system, in use, free inside them; big blocks mapped alone."""
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    mb = 1 << 20
    return {"arenas_mb": round(info.arena / mb, 1), "in_use_mb": round(info.uordblks / mb, 1),
            "free_mb": round(info.fordblks / mb, 1), "free_chunks": info.ordblks,
            "mapped_alone_mb": round(info.hblkhd / mb, 1)}


def _pymalloc() -> dict[str, float]:
    """Python's small-object heap: its arenas and the bytes of the objects in them (``sys._debugmallocstats``)."""
    saved = os.dup(2)
    with tempfile.TemporaryFile() as out:
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode(errors="replace")
    allocated = re.search(r"# bytes in allocated blocks\s*=\s*([\d,]+)", text)
    arenas = re.search(r"# arenas allocated current\s*=\s*([\d,]+)", text)

    def number(found: re.Match | None) -> float:
        return float(found.group(1).replace(",", "")) if found else float("nan")

    return {"objects_mb": round(number(allocated) / (1 << 20), 1), "arenas": number(arenas)}


def _gradio_tables() -> dict[str, Any]:
    """Sizes of Gradio's tables that hold an entry per session or per event (its queue's and its sessions')."""
    out: dict[str, Any] = {}
    for obj in gc.get_objects():
        kind = type(obj)
        if kind.__name__ == "Queue" and kind.__module__ == "gradio.queueing":
            for name in ("pending_messages_per_session", "pending_event_ids_session", "event_ids_to_events",
                         "event_analytics"):
                out[f"queue.{name}"] = len(getattr(obj, name, ()))
        elif kind.__name__ == "StateHolder" and kind.__module__ == "gradio.state_holder" and obj.session_data:
            out["sessions"] = len(obj.session_data)
    return out


def _vitviz() -> dict[str, Any]:
    """vitviz's caches (bytes each holds, by name) and the door's per-address tables."""
    out: dict[str, Any] = {}
    try:
        from vitviz import cache
        from vitviz.ui.serve import admission, files, image_cache, limits

        usage = cache.usage()
        out["caches_mb"] = {k: round(v / (1 << 20), 2) for k, v in usage.items() if v}
        out["admission_addresses"] = len(admission.ADMISSION.last)
        out["joins_seen"] = len(limits.JOINS.seen)
        out["image_memo"] = len(image_cache._MEMO)
        out["files_written"] = len(files.WRITTEN)
    except Exception as exc:  # noqa: BLE001 - another tree's names: say so, measure the rest
        out["error"] = repr(exc)
    return out


def anatomy(trim: bool = False) -> dict[str, Any]:
    """The process's memory now, after a full garbage collection (the module's text); with ``trim``, also its
    resident memory after glibc's ``malloc_trim(0)``."""
    gc.collect()
    libc = ctypes.CDLL("libc.so.6")
    result: dict[str, Any] = {"rss_mb": round(_rss_mb(), 1), "malloc": _malloc(libc), "pymalloc": _pymalloc(),
                              "gc_objects": len(gc.get_objects()), "gradio": _gradio_tables(), "vitviz": _vitviz()}
    if trim:
        libc.malloc_trim(0)
        result["rss_after_malloc_trim_mb"] = round(_rss_mb(), 1)
    return result
