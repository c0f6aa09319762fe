"""A photo at its own shape: the first answer of the Features tab's PCA map at 644 px on dinov2-small.

Usage::

    VITVIZ_PACKAGE_WEIGHTS=1 python bench/native.py [--repeats 3] [--side 644]

One process, dinov2-small loaded first (its load warms the 224-px shapes, as the app's does). Rows, each the
time of :func:`vitviz.views.features.pca_view` with the switch on, from a view call to its panel:

- **first shape**: the first photo of a shape this process has not run yet (the chelsea example cropped to
  16:9: 46x26 patches): the forward pass also builds oneDNN's kernels for the new shapes;
- **another shape**: a second new shape (the coffee example, 3:2: 46x31 patches), caches empty;
- **new photo, shape seen**: a new photo whose shape already ran (the rocket example, 3:2 like coffee), caches
  empty: what most first answers cost once a few shapes ran;
- **tokens cached**: the same photo again at another layer (the layer slider): PCA and drawing only;
- **square 224**: the switch off, caches empty, for the ratio.

The goal (a bench, not a test): the first answer within 3 s on the 2-core machine. The machine is shared:
the load average is printed with the table; a row repeated runs ``--repeats`` times (median), the first
three rows once each (only the first time is "first").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "embedding"))

import torch  # noqa: E402

from vitviz.explain import attention as eattn  # noqa: E402
from vitviz.features import layer_tokens as ftokens  # noqa: E402
from vitviz.models.loading import load_choice  # noqa: E402
from vitviz.views import features as v  # noqa: E402

EXAMPLES = ROOT / "assets" / "examples"


def _clear() -> None:
    ftokens.CACHE.clear()
    eattn.CACHE.clear()


def _once(fn) -> float:  # noqa: ANN001
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--side", default="644")
    args = ap.parse_args()
    from wide_photo import save_wide_photo

    wide = str(save_wide_photo(Path(os.environ.get("TMPDIR", "/tmp"))))
    t0 = time.perf_counter()
    load_choice("dinov2-small")
    load_s = time.perf_counter() - t0
    pca = lambda path, layer=12, native=True: v.pca_view(path, "dinov2-small", layer, False, native, args.side)  # noqa: E731
    rows = []
    _clear()
    rows.append(("first shape (16:9, 46x26)", _once(lambda: pca(wide))))
    _clear()
    rows.append(("another shape (3:2, 46x31)", _once(lambda: pca(str(EXAMPLES / "coffee.jpg")))))
    _clear()
    rows.append(("new photo, shape seen (3:2)", _once(lambda: pca(str(EXAMPLES / "rocket.jpg")))))
    cached = []
    for i in range(args.repeats):
        cached.append(_once(lambda: pca(wide, 11 - i % 2)))
    rows.append(("tokens cached (layer slider)", statistics.median(cached)))
    square = []
    for _ in range(args.repeats):
        _clear()
        square.append(_once(lambda: pca(wide, 12, False)))
    rows.append(("square 224, caches empty", statistics.median(square)))
    load = os.getloadavg()
    print(f"dinov2-small loaded in {load_s:.1f} s; torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{os.cpu_count()} CPUs; load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} (shared machine)")
    base = rows[-1][1]
    print("| row | seconds | / square 224 |")
    print("| --- | ---: | ---: |")
    for name, s in rows:
        print(f"| {name} | {s:.2f} | {s / base:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
