"""dinov2-small's high-norm tokens by resolution on the example photos (docs/native-resolution.md).

Usage::

    VITVIZ_PACKAGE_WEIGHTS=1 python tools/norms_by_resolution.py [--sides 224 448 644] [--model dinov2-small]

For every example photo and side: the photo at its own shape (never cropped, longer side ``side``), the
token-norm view's rule (:mod:`vitviz.explain.norms`: a patch token whose norm is above ``Q3 + 3 IQR`` of its
layer and at least twice the median) applied to every block's output. Prints a Markdown table: the grid,
the outliers after the last block, the most outliers of any block (and which), the largest patch norm over
the median in the last block and in any block, and the share of block 12's class-token attention on block 11's outliers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import vitviz  # noqa: E402
from vitviz.assets import example_images  # noqa: E402
from vitviz.explain.norms import token_norms  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="dinov2-small")
    ap.add_argument("--sides", type=int, nargs="+", default=[224, 448, 644])
    args = ap.parse_args()
    model = vitviz.load_model(args.model)
    print("| photo | side | grid (cols×rows) | patches | outliers, last block | most in a block | "
          "last block max/median | largest max/median of any block | class attention on block 11's outliers "
          "(uniform) |")
    print("| --- | ---: | --- | ---: | ---: | --- | ---: | --- | --- |")
    for path in example_images():
        for side in args.sides:
            n = token_norms(model, path, "native", side)
            counts = n.counts()
            last = n.num_layers - 1
            worst = int(np.argmax(counts[1:])) + 1
            gh, gw = n.layout.grid
            share, uniform = n.cls_share[last - 1], n.uniform_share[last - 1]
            attn = f"{100 * share:.1f}% ({100 * uniform:.1f}%)" if counts[last - 1] else "–"
            most = f"{int(counts[worst])} ({n.names[worst]})" if counts[worst] else "0"
            peak = max(range(1, n.num_layers), key=n.ratio)
            print(f"| {Path(path).stem} | {side} | {gw}×{gh} | {gh * gw} | {int(counts[last])} | {most} | "
                  f"{n.ratio(last):.2f} | {n.ratio(peak):.2f} ({n.names[peak]}) | {attn} |")


if __name__ == "__main__":
    main()
