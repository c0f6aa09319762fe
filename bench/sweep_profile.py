"""Where a 19-stop ratio sweep spends its time, against its FLOP floor.

Usage::

    python bench/sweep_profile.py [--model mae-tiny] [--threads 1] [--repeats 5]

Runs ``vitviz.mae.sweep.sweep`` (stops 0.05 ... 0.95, one image, one seed, no cache)
under ``torch.profiler`` and splits its CPU time into linear layers (oneDNN-packed
``_linear_pointwise``), attention (``scaled_dot_product_attention``), every other tensor
operation of the model (norms, residual additions, gathers, loss, de-normalisation), and
the rest (assembling the panels and metrics of each stop, Python). Each share is
compared with its FLOPs (closed form, :mod:`vitviz.compute.formulas`) at this machine's
fastest fp32 GEMM rate, measured in the same run and the same way (the shapes of
``bench/run.py``'s ``peak_gflops``: a 2048x2048 matmul and a oneDNN-packed linear layer).

Times are CPU seconds of this process (``time.process_time``), which a busy shared
machine disturbs less than wall time; the default is one thread for the same reason.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from vitviz.compute.formulas import mae_flops  # noqa: E402
from vitviz.core.masking import make_mask  # noqa: E402
from vitviz.mae.reconstruct import predict, prepare  # noqa: E402
from vitviz.mae.sweep import STOPS, sweep  # noqa: E402
from vitviz.models.loading import load_model  # noqa: E402

EXAMPLE = ROOT / "assets" / "examples" / "chelsea.jpg"


def attention_flops(model, ratios) -> int:  # noqa: ANN001
    """FLOPs of the attention products (``4 N^2 d`` per layer) of every stop, encoder and decoder."""
    from vitviz.compute.formulas import mae_visible_tokens

    c = model.module.config
    total = 0
    for r in ratios:
        n = 1 + mae_visible_tokens(c, r)
        total += c.depth * 4 * n * n * c.embed_dim
        total += c.decoder_depth * 4 * (1 + c.num_patches) ** 2 * c.decoder_embed_dim
    return total


def peak_gflops(repeats: int = 9) -> float:
    """Fastest fp32 GEMM rate in CPU time: a 2048x2048 matmul, or a packed 768->3072 linear on 2048 tokens."""
    from vitviz.models.kernels import PackedLinear, onednn_available

    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    fns = {"mm": (lambda: a @ b, 2 * 2048**3)}
    if onednn_available():
        lin = PackedLinear(torch.nn.Linear(768, 3072).requires_grad_(False))
        x = torch.randn(2048, 768)
        fns["packed"] = (lambda: lin(x), 2 * 2048 * 768 * 3072)
    best = 0.0
    with torch.inference_mode():
        for fn, work in fns.values():
            fn()
            times = []
            for _ in range(repeats):
                t0 = time.process_time()
                fn()
                times.append(time.process_time() - t0)
            best = max(best, work / sorted(times)[repeats // 2] / 1e9)
    return best


def profile(model_name: str, repeats: int) -> dict:
    """CPU milliseconds per sweep by part, FLOPs by part, and the GEMM rate of this machine."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    model = load_model(model_name, device="cpu", random_init=model_name != "mae-tiny")
    original = prepare(model, EXAMPLE)
    ratios = STOPS[1:]

    masks = torch.stack([make_mask(model.module.config.grid, r, 0, "random") for r in ratios])

    def once() -> None:
        sweep(model, original, seed=0, ratios=ratios, cache=None)

    def model_only() -> None:  # what the sweep runs through the network (its default passes of 10)
        predict(model, original, masks, max_batch=10)

    once()
    peak = peak_gflops()
    times: dict[str, list[float]] = {"sweep": [], "model": []}
    for _ in range(repeats):
        for key, fn in (("sweep", once), ("model", model_only)):
            t0 = time.process_time()
            fn()
            times[key].append(time.process_time() - t0)
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(repeats):
            model_only()
    parts = {"linear layers": 0.0, "attention": 0.0, "other tensor operations": 0.0}
    for ev in prof.key_averages():
        name = ev.key
        ms = ev.self_cpu_time_total / 1e3 / repeats
        if "linear_pointwise" in name or name in ("aten::addmm", "aten::mm", "aten::linear"):
            parts["linear layers"] += ms
        elif "scaled_dot_product" in name or "flash_attention" in name:
            parts["attention"] += ms
        elif name.startswith("aten::") or name.startswith("mkldnn::"):
            parts["other tensor operations"] += ms
    profiled = sum(parts.values())
    median = lambda v: sorted(v)[len(v) // 2] * 1e3  # noqa: E731
    # The profiler's own overhead inflates its totals: its split is scaled to the unprofiled
    # time of the model passes; the rest of the sweep (panels and metrics of each stop) is its own row.
    model_ms = median(times["model"])
    parts = {k: v / max(profiled, 1e-9) * model_ms for k, v in parts.items()}
    total_ms = median(times["sweep"])
    flops = sum(mae_flops(model.module.config, r)["total"] for r in ratios)
    att = attention_flops(model, ratios)
    return {"total_ms": total_ms, "parts_ms": parts, "model_ms": model_ms, "peak": peak,
            "flops": {"linear layers": flops - att, "attention": att, "other tensor operations": 0,
                      "total": flops}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Split a ratio sweep's time into parts, against its FLOP floor.")
    ap.add_argument("--model", default="mae-tiny")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    r = profile(args.model, args.repeats)
    floor_ms = r["flops"]["total"] / (r["peak"] * 1e9) * 1e3
    print(f"{args.model} 19-stop sweep, {args.threads} thread(s): {r['total_ms']:.0f} ms CPU, FLOP floor "
          f"{floor_ms:.0f} ms at {r['peak']:.0f} GFLOP/s -> {r['total_ms'] / floor_ms:.2f}x the floor\n")
    print("| part | ms (share) | GFLOPs | GFLOP/s | floor ms | x its floor |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for part, ms in r["parts_ms"].items():
        gf = r["flops"][part] / 1e9
        floor = gf / r["peak"] * 1e3
        rate = f"{gf / ms * 1e3:.0f}" if gf else "-"
        ratio = f"{ms / floor:.2f}x" if gf else "-"
        print(f"| {part} | {ms:.0f} ({ms / r['total_ms']:.0%}) | {gf:.1f} | {rate} | {floor:.0f} | {ratio} |")
    rest = max(0.0, r["total_ms"] - r["model_ms"])
    print(f"| each stop's panels and metrics (numpy) | {rest:.0f} ({rest / r['total_ms']:.0%}) | - | - | - | - |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
