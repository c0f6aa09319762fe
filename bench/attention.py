"""Cost of capturing attention (and rolling it out) against a plain forward of the same model.

Usage::

    python bench/attention.py [--model vit_base_patch16_224] [--repeats 7] [--warmup 2] [--threads N]

Builds the timm model with random weights (no download; weights do not change the
cost), batch 1 at its input size, and prints one table: the median wall time of each
variant over ``--repeats`` rounds after ``--warmup`` rounds (variants interleaved within
a round), and its ratio to the plain forward (timm's default fused attention). Rows:

* plain forward, fused attention (timm's default): the reference;
* plain forward, explicit softmax (``fused_attn=False`` everywhere, no hooks): what
  switching the path costs by itself;
* capture: the forward with every block's attention recorded (:func:`vitviz.explain.capture.capture_blocks`);
* rollout only: :func:`vitviz.explain.rollout.rollout_matrix` on the captured ``(L, H, T, T)``;
* capture + rollout: the two together;
* ``vitviz.explain.attention.capture`` end to end (image to read-only arrays, logits) + rollout;
* cached ``vitviz.attention`` + rollout: what a click costs once the image is captured.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vitviz.core.images import normalize, uint8_to_unit  # noqa: E402
from vitviz.models.loading import LoadedModel  # noqa: E402
from vitviz.models.registry import get_spec  # noqa: E402
from vitviz.models.build import timm_data_config  # noqa: E402

from vitviz.explain import attention as A  # noqa: E402
from vitviz.explain.capture import capture_blocks  # noqa: E402
from vitviz.explain.rollout import rollout_matrix  # noqa: E402


def median_ms(fns: list[Callable[[], object]], repeats: int, warmup: int) -> list[float]:
    """Median wall time of each ``fn()`` in milliseconds after ``warmup`` calls of each.

    The variants are interleaved (one call of each per round), so a change in the
    machine's load during the run affects them alike.
    """
    for _ in range(warmup):
        for fn in fns:
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [1000 * statistics.median(t) for t in times]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="vit_base_patch16_224", help="timm model name (random weights)")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = ap.parse_args(argv)
    import timm

    if args.threads:
        torch.set_num_threads(args.threads)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        module = timm.create_model(args.model, pretrained=False).eval().requires_grad_(False)
    model = LoadedModel("vit-base", get_spec("vit-base"), module, timm_data_config(module), torch.device("cpu"),
                        random_init=True)
    size = model.data_config.input_size
    view = np.random.default_rng(0).integers(0, 256, (size, size, 3), dtype=np.uint8)
    x = normalize(uint8_to_unit(view), model.data_config).unsqueeze(0)
    blocks = module.blocks
    r, w = args.repeats, args.warmup

    def plain() -> None:
        with torch.inference_mode():
            module(x)

    def plain_unfused() -> None:
        saved = [b.attn.fused_attn for b in blocks]
        for b in blocks:
            b.attn.fused_attn = False
        try:
            plain()
        finally:
            for b, f in zip(blocks, saved):
                b.attn.fused_attn = f

    captured = capture_blocks(blocks, lambda: module(x))[0][:, 0].numpy()

    def cap() -> None:
        capture_blocks(blocks, lambda: module(x))

    def cap_roll() -> None:
        att = capture_blocks(blocks, lambda: module(x))[0][:, 0].numpy()
        rollout_matrix(att)

    def end_to_end() -> None:
        A.capture(model, view).rollout()

    A.CACHE.clear()
    A.attention(model, view)

    def cached() -> None:
        A.attention(model, view).rollout()

    variants = [
        ("plain forward, fused attention (reference)", plain),
        ("plain forward, explicit softmax, no hooks", plain_unfused),
        ("capture (hooks on every block)", cap),
        ("rollout only (numpy, float64)", lambda: rollout_matrix(captured)),
        ("capture + rollout", cap_roll),
        ("vitviz.attention.capture + .rollout(), end to end", end_to_end),
        ("cached vitviz.attention + .rollout() (a click)", cached),
    ]
    rows = list(zip([n for n, _ in variants], median_ms([f for _, f in variants], r, w)))
    ref = rows[0][1]
    layers, heads, t, _ = captured.shape
    print(f"# {args.model}, random weights, batch 1, {size}x{size}, {layers} layers x {heads} heads x {t} tokens; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads; median of {r} after {w} warm-up")
    print(f"| {'variant':<52} | {'ms':>8} | {'x plain':>7} |")
    print(f"|{'-' * 54}|{'-' * 10}|{'-' * 9}|")
    for name, ms in rows:
        print(f"| {name:<52} | {ms:8.1f} | {ms / ref:7.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
