"""Cost of the head atlas and the query-key space against one captured forward of the same model.

Usage::

    python bench/heads.py [--model vit-base] [--repeats 7] [--warmup 2] [--threads N]

Random weights (no download; weights do not change the cost), batch 1 at the model's
input size, one random image. Every variant is timed in the same run, interleaved
(``bench.common.interleaved``), and printed as a median in ms and as a ratio to the
reference, the captured forward (:func:`vitviz.explain.capture.capture_blocks`, every
block's attention recorded). Rows:

* captured forward (reference);
* head statistics alone, on the captured ``(L, H, T, T)`` (:func:`vitviz.explain.heads.head_statistics`);
* head atlas end to end: ``explain.attention.capture`` (image to read-only maps) + the atlas
  (what the Heads tab pays for a new image; target <= 1.5x the reference, issue 20);
* query-key space of one head, block inputs already captured (a layer or head change);
* query-key space end to end: block inputs captured + one head.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import interleaved  # noqa: E402
from vitviz.core.images import model_input  # noqa: E402
from vitviz.explain import attention as A  # noqa: E402
from vitviz.explain import qk as Q  # noqa: E402
from vitviz.explain.capture import capture_blocks  # noqa: E402
from vitviz.explain.heads import atlas_of, head_statistics  # noqa: E402
from vitviz.models.loading import load_model  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="vit-base", help="registry name (random weights)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    model = load_model(args.model, random_init=True, device="cpu")
    module = model.module
    size = model.input_size
    view = np.random.default_rng(0).integers(0, 256, (size, size, 3), dtype=np.uint8)
    x = model_input(view, model.data_config, model.device)
    maps = A.capture(model, view)
    layout = maps.layout
    Q.CACHE.clear()
    Q.query_key_space(model, view, 0, 0)  # block inputs cached for the "one head" row

    def captured() -> None:
        capture_blocks(module.blocks, lambda: module(x))

    def atlas() -> None:
        m = A.capture(model, view)
        atlas_of(model.name, m.attentions, m.layout, True)

    def qk_end_to_end() -> None:
        Q.capture_inputs(model, view)
        Q.query_key_space(model, view, 5, 3)

    variants = {
        "captured forward (reference)": captured,
        "head statistics only (numpy)": lambda: head_statistics(maps.attentions, layout),
        "head atlas, end to end (capture + statistics)": atlas,
        "query-key space of one head (inputs cached)": lambda: Q.query_key_space(model, view, 5, 3),
        "query-key space, end to end (inputs + one head)": qk_end_to_end,
    }
    ms = {k: 1000 * v for k, v in interleaved(variants, args.warmup, args.repeats).items()}
    ref = ms["captured forward (reference)"]
    layers, heads, t, _ = maps.attentions.shape
    print(f"# {args.model}, random weights, batch 1, {size}x{size}, {layers} layers x {heads} heads x {t} tokens; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads; median of {args.repeats} after "
          f"{args.warmup} warm-up, interleaved")
    print(f"| {'variant':<50} | {'ms':>8} | {'x captured':>10} |")
    print(f"|{'-' * 52}|{'-' * 10}|{'-' * 12}|")
    for name, v in ms.items():
        print(f"| {name:<50} | {v:8.1f} | {v / ref:10.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
