"""The Features tab's work for one image on mae-tiny: PCA maps and probes by depth.

Usage::

    python bench/features.py [--repeats 5] [--model mae-tiny | swin-tiny:random]

Rows (median of ``--repeats`` runs, one warm-up first):

- **cold**: every cache emptied first (tokens, probe tables): forward passes of this
  image and the example photos, the joint PCA of one layer, and probes of every layer
  (fit on the other examples, scored on this image, plus the shuffled control);
- **PCA only, tokens cached**: what moving the layer slider costs;
- **probes only, tokens cached**: the ridge fits alone.

Prints a Markdown table; the target is the issue's "within 2 s on this CPU" for the cold row.
On a shared, oversubscribed CPU numpy's multithreaded OpenBLAS spins: run it both with and
without ``OPENBLAS_NUM_THREADS=1`` (the probes' small eigendecompositions are the part it hits).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vitviz.features import layer_tokens as ftokens  # noqa: E402
from vitviz.models.loading import load_choice  # noqa: E402
from vitviz.views import features as v  # noqa: E402

EXAMPLE = ROOT / "assets" / "examples" / "chelsea.jpg"


def _clear() -> None:
    ftokens.CACHE.clear()
    v._PROBES.clear()


def _time(fn, repeats: int, before=None) -> float:  # noqa: ANN001
    fn() if before is None else (before(), fn())
    out = []
    for _ in range(repeats):
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--model", default="mae-tiny")
    ap.add_argument("--image", type=Path, default=EXAMPLE)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    model = load_choice(args.model)  # a name, or name:random for random weights (swin-tiny:random)
    depth = ftokens.num_blocks(model)
    img = str(args.image)

    def both() -> None:
        v.pca_view(img, args.model, depth, False)
        v.probe_tables(model, img)

    cold = _time(both, args.repeats, _clear)
    pca = _time(lambda: v.pca_view(img, args.model, depth, False), args.repeats)
    probes = _time(lambda: v.probe_tables(model, img), args.repeats, lambda: v._PROBES.clear())
    table, _ = v.probe_tables(model, img)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (load average {load:.1f}), "
          f"torch {torch.__version__}, {torch.get_num_threads()} torch threads, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '-')}, "
          f"{args.repeats} repeats, {args.model}, {depth + 1} layers, probes on {table.fit_patches} fitting + "
          f"{table.score_patches} scored patches")
    print()
    print("| row | median s |")
    print("| --- | ---: |")
    print(f"| PCA maps + probes, cold (forward passes of {len(table.split.fit) + 1} images) | {cold:.3f} |")
    print(f"| PCA maps of one layer, tokens cached | {pca:.3f} |")
    print(f"| probes of every layer + control, tokens cached | {probes:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
