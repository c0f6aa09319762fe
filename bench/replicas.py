"""Visitors served per minute by one app replica, by two behind nginx (deploy/),
and by one whose model calls run on Ray actors, at p95 <= 2x alone.

Each arrangement: the time of one reconstruct (mae-tiny, 75% hidden) for a visitor alone (median of 5),
then ``c`` visitors at once for ``SECONDS`` each (c = 1, 2, 4, ...), each calling in a loop; the row is the
largest ``c`` whose p95 stays within twice the alone time, and the calls completed per minute there.
Memory: the resident set of the replicas' processes (and their workers) at the end. On one machine the
two replicas share its cores: the ratio shows the proxy's and the second process's cost, not more cores.

    python bench/replicas.py            # every arrangement; prints a Markdown table
    python bench/replicas.py Ray        # only the arrangements whose name holds "Ray"
    python bench/replicas.py -Ray       # all but those (a local Ray takes about 3 GB more memory)
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from common import percentile  # noqa: I001 - bench/ is on the path when run as a script
from tools.appserver import ROOT, running_app
from tools.gradio_http import Visitor
from tools.nginx import proxy

SECONDS = float(os.environ.get("VITVIZ_BENCH_SECONDS", "20"))
PHOTO = ROOT / "assets" / "examples" / "chelsea.jpg"
ENV = dict(VITVIZ_WARMUP="0", HF_HUB_OFFLINE="1")
#: ``python app.py`` with its model calls sent to Ray actors (a local Ray: ``ray.init(num_cpus=2)``), the cost
#: class of each call told as VITVIZ_WORKERS=processes tells it (vitviz.ui.serve.model_workers.cost_of).
RAY_APP = [sys.executable, "-c",
           "import runpy, ray; ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False); "
           "from vitviz.models import runner; from vitviz.models.ray_workers import RayWorkers; "
           "from vitviz.ui.serve.model_workers import cost_of; w = RayWorkers(); w.start(); "
           "runner.install_dispatch(w.submit, cost_of); runpy.run_path('app.py', run_name='__main__')"]


def rss_mib(pid: int) -> float:
    """Resident MiB of ``pid`` and its descendants (from /proc)."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
            for t in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (t / "children").read_text().split()]
        except OSError:
            continue
    return total


def load(url: str, visitors: int, seconds: float) -> list[float]:
    """``visitors`` at once, each calling reconstruct in a loop for ``seconds``; every call's seconds."""
    times: list[float] = []
    lock = threading.Lock()

    def run(i: int) -> None:
        v = Visitor(url, timeout=300)
        v.arrive(PHOTO)
        end = time.monotonic() + seconds
        seed = i * 1000
        while time.monotonic() < end:
            t = time.monotonic()
            event, data = v.reconstruct(seed)
            assert event == "complete", data
            with lock:
                times.append(time.monotonic() - t)
            seed += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(visitors)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times


def measure(url: str) -> dict[str, float]:
    v = Visitor(url, timeout=300)
    v.arrive(PHOTO)
    v.reconstruct(0)  # the model loaded
    alone = []
    for s in range(5):
        t = time.monotonic()
        v.reconstruct(s + 1)
        alone.append(time.monotonic() - t)
    base = statistics.median(alone)
    best = {"alone_ms": base * 1000, "visitors": 0, "p95_ms": float("nan"), "per_min": 0.0}
    c = 1
    while c <= 16:
        times = load(url, c, SECONDS)
        p95 = percentile(times, 0.95)
        print(f"  {c} visitors: {len(times)} calls, p95 {p95 * 1000:.0f} ms (alone {base * 1000:.0f} ms)",
              file=sys.stderr)
        if p95 > 2 * base:
            break
        best = {"alone_ms": base * 1000, "visitors": c, "p95_ms": p95 * 1000, "per_min": len(times) * 60 / SECONDS}
        c *= 2
    return best


def main(only: str = "") -> None:
    rows = []
    for n, command, name in ((1, None, "1 replica"), (2, None, "2 replicas behind nginx"),
                             (1, RAY_APP, "1 replica, model calls on Ray actors (local Ray)")):
        if only and (only[1:] in name if only.startswith("-") else only not in name):
            continue
        with ExitStack() as stack:
            apps = [stack.enter_context(running_app(command=command, **ENV)) for _ in range(n)]
            # every visitor here comes from loopback, standing in for many addresses: the proxy's per-address
            # limits (deploy/render.py --rate, --connections) raised out of the way
            url = apps[0][0] if n == 1 else stack.enter_context(proxy(
                [u.rstrip("/")[7:] for u, _ in apps], options=("--rate", "10000r/s", "--burst", "10000",
                                                               "--connections", "10000")))
            load_before = os.getloadavg()
            row = measure(url)
            row["rss_mib"] = sum(rss_mib(p.pid) for _, p in apps)
            row["load"] = f"{load_before[0]:.1f} / {os.getloadavg()[0]:.1f}"
            rows.append((name, row))
    print("| arrangement | alone (ms) | visitors at p95 <= 2x alone | p95 (ms) | calls per minute | "
          "memory (MiB) | load average (1 min) before / after |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['alone_ms']:.0f} | {r['visitors']} | {r['p95_ms']:.0f} | {r['per_min']:.0f} | "
              f"{r['rss_mib']:.0f} | {r['load']} |")


if __name__ == "__main__":
    main(" ".join(sys.argv[1:]))
