"""Timing and memory helpers shared by the benchmarks."""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

#: A checkout whose ``vitviz`` the benchmarks import instead of this one's (``bench/compare.py``
#: sets it to time the same script on a "before" worktree and on this tree, side by side).
TREE = os.environ.get("VITVIZ_BENCH_TREE")
if TREE:
    sys.path.insert(0, TREE)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.append(_ROOT)  # after TREE: tools/ only, never this checkout's vitviz ahead of the other tree's

# This checkout's tools/, even where TREE (an older commit, which may lack ``stop``) has its own.
sys.path.insert(0, _ROOT)
try:
    from tools.appserver import stop  # noqa: E402, F401 - one way to end a started app, for every benchmark
finally:
    del sys.path[0]


#: ``python app.py`` for a benchmark, in the checkout's root, with Gradio's own start-up check that the app
#: answers on localhost (one HEAD, 3 s timeout) switched off: under load it fails and stops the start, on
#: commits older than vitviz.ui.serve.launch_without_self_check (since gone: the door answers the launch's HEAD) as well as newer ones. The checkout's
#: ``app.py`` runs as ``__main__``, unchanged; its ``os.environ.setdefault`` lines are applied first, since
#: importing Gradio loads numpy (OpenBLAS reads its thread count then).
APP_COMMAND = [sys.executable, "-c",
               "import os, re, runpy, sys; "
               "[os.environ.setdefault(k, v) for k, v in re.findall("
               "r'os\\.environ\\.setdefault\\(\"([A-Z_]+)\",\\s*\"([^\"]*)\"\\)', open('app.py').read())]; "
               "import gradio.networking as n; n.url_ok = lambda url: True; sys.argv = ['app.py']; "
               "runpy.run_path('app.py', run_name='__main__')"]


def median_seconds(fn: Callable[[], object], warmup: int = 2, repeats: int = 7, min_total: float = 0.0) -> float:
    """Median wall time of ``fn`` after ``warmup`` calls (at least ``repeats`` timed calls)."""
    for _ in range(warmup):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - start < min_total:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) >= 200:
            break
    return statistics.median(times)


def interleaved_times(fns: dict[str, Callable[[], object]], warmup: int = 2, repeats: int = 7
                      ) -> dict[str, list[float]]:
    """Seconds of each of ``repeats`` calls of several callables, timed in alternation (one call of each
    per round, after ``warmup`` rounds): every time, for a median or a minimum (the least disturbed call,
    what a loaded machine's spread hides least)."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return times


def interleaved(fns: dict[str, Callable[[], object]], warmup: int = 2, repeats: int = 7) -> dict[str, float]:
    """Median seconds of several callables timed in alternation (fair on a noisy machine)."""
    return {k: statistics.median(v) for k, v in interleaved_times(fns, warmup, repeats).items()}


def side_by_side(rows: dict[str, dict[str, list[float]]], trees: list[str], first: str = "row") -> str:
    """A Markdown table of seconds per row and checkout: median (min-max), and after / before when
    ``trees`` is ``["before", "after"]``.

    Args:
        rows: row name -> checkout -> the seconds measured (one per round).
        trees: the checkouts, in column order.
        first: the first column's header.
    """
    both = len(trees) == 2
    heads = [first] + [f"{t} s, median (min–max)" for t in trees] + (["after / before"] if both else [])
    lines = ["| " + " | ".join(heads) + " |", "| --- |" + " ---: |" * (len(heads) - 1)]
    for name, by in rows.items():
        med = {t: statistics.median(by[t]) for t in trees}
        cells = [f"{med[t]:.2f} ({min(by[t]):.2f}–{max(by[t]):.2f})" for t in trees]
        if both:
            cells.append(f"{med[trees[1]] / med[trees[0]]:.2f}x")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank, no interpolation)."""
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def peak_mib(fn: Callable[[], object]) -> float:
    """Peak MiB of tensor storages created while ``fn`` runs (weights and inputs excluded)."""
    import torch

    from vitviz.compute.measure import TensorMemoryTracker

    with torch.inference_mode(), TensorMemoryTracker() as tracker:
        fn()
    return tracker.peak / 2**20


#: The log line of the warm-up's last step (done or skipped), :mod:`vitviz.ui.warmup`.
LAST_WARMUP_STEP = "warm-up (swin)"


def warmed(log: Path, timeout: float = 120.0) -> float:
    """Wait until the app's log shows its warm-up's last step (at most ``timeout`` s; an app without a warm-up
    waits that long); returns the seconds waited. A measurement taken during the warm-up shares the cores with
    it, so a figure "alone" taken then is not alone."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout and LAST_WARMUP_STEP not in log.read_text(errors="replace"):
        time.sleep(0.2)
    time.sleep(1.0)  # the last step's own tail
    return time.perf_counter() - t0


def end_app(report: dict, proc, log, work: Path) -> None:  # noqa: ANN001 - a Popen and its open log file
    """A benchmark's app run ends: the load average now into ``report["loadavg_end"]``, the app stopped, its log
    closed and its work folder removed."""
    report["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    stop(proc, timeout=60)
    log.close()
    shutil.rmtree(work, ignore_errors=True)
