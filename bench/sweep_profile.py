"""Where a 19-stop ratio sweep spends its time, against its FLOP floor.

Usage::

    python bench/sweep_profile.py [--model mae-tiny] [--threads 1] [--repeats 5] [--thread-check]

Runs ``vitviz.mae.sweep.sweep`` (stops 0.05 ... 0.95, one image, one seed, no cache)
and splits its CPU time into: the network's forward passes (``encode_packed`` and
``decode_packed``, as ``predict`` runs them in passes of 10), profiled with
``torch.profiler`` into linear layers (oneDNN-packed ``_linear_pointwise``), attention
(``scaled_dot_product_attention``) and every other tensor operation of the network
(norms, residual additions, gathers); the rest of ``predict`` (the patch embedding, once
per pass, the losses, de-normalisation and pixel layout); and the rest of the sweep
(each stop's panels and metrics, :func:`vitviz.mae.sweep.assemble_stops`, and Python).
Each share is compared with its FLOPs (closed form, :mod:`vitviz.compute.formulas`) at
this machine's fastest fp32 GEMM rate, measured in the same run and the same way (the
shapes of ``bench/run.py``'s ``peak_gflops``: a 2048x2048 matmul and a oneDNN-packed
linear layer).

Attention is also run alone on the sweep's own shapes (every encoder sequence, the
decoder's passes) at the model's head width and at head width 2: the second keeps the
softmax and the passes over the score matrices but almost none of the FLOPs, so it
shows how much of the attention time no FLOP floor counts.

``--thread-check`` then times the sweep (wall and CPU) in fresh processes at 1 and 2
threads, with OpenMP's default wait policy and with ``OMP_WAIT_POLICY=PASSIVE`` (it
must be set before the process starts).

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


def median_cpu_s(fn, repeats: int) -> float:  # noqa: ANN001
    """Median CPU seconds of ``fn()`` over ``repeats`` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return sorted(times)[repeats // 2]


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
            best = max(best, work / median_cpu_s(fn, repeats) / 1e9)
    return best


def attention_alone(model, masks, repeats: int, batch: int = 10) -> dict[str, float]:  # noqa: ANN001
    """CPU ms of the sweep's attention calls run alone, at the model's head width and at width 2."""
    import torch.nn.functional as F

    c = model.module.config
    lengths = [1 + int((~m).sum()) for m in masks]
    dec_batches = [min(batch, len(lengths) - i) for i in range(0, len(lengths), batch)]
    out = {}
    with torch.inference_mode():
        for label, enc_d, dec_d in (("model", c.embed_dim // c.num_heads, c.decoder_embed_dim // c.decoder_num_heads),
                                    ("width 2", 2, 2)):
            enc = [[torch.randn(1, c.num_heads, n, enc_d) for _ in range(3)] for n in lengths]
            dec = [[torch.randn(b, c.decoder_num_heads, 1 + c.num_patches, dec_d) for _ in range(3)]
                   for b in dec_batches]

            def run() -> None:
                for _ in range(c.depth):
                    for q, k, v in enc:
                        F.scaled_dot_product_attention(q, k, v)
                for _ in range(c.decoder_depth):
                    for q, k, v in dec:
                        F.scaled_dot_product_attention(q, k, v)

            out[label] = median_cpu_s(run, repeats) * 1e3
    out["scores"] = (sum(c.depth * c.num_heads * n * n for n in lengths)
                     + len(lengths) * c.decoder_depth * c.decoder_num_heads * (1 + c.num_patches) ** 2)
    return out


def profile(model_name: str, repeats: int) -> dict:
    """CPU milliseconds per sweep by part, FLOPs by part, and the GEMM rate of this machine."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from vitviz.core.images import normalize, uint8_to_unit

    model = load_model(model_name, device="cpu", random_init=model_name != "mae-tiny")
    mae = model.module
    original = prepare(model, EXAMPLE)
    ratios = STOPS[1:]
    batch = 10  # the sweep's default passes

    masks = torch.stack([make_mask(mae.config.grid, r, 0, "random") for r in ratios])
    with torch.inference_mode():
        tokens = mae.embed_patches(normalize(uint8_to_unit(original), model.data_config).unsqueeze(0))
    ids = [(~m.flatten()).nonzero().flatten() for m in masks]

    def once() -> None:
        sweep(model, original, seed=0, ratios=ratios, cache=None, batch=batch)

    def model_only() -> None:  # what the sweep asks of the network
        predict(model, original, masks, max_batch=batch)

    def forward() -> None:  # the network's packed passes alone, as predict runs them
        with torch.inference_mode():
            for start in range(0, len(ids), batch):
                part = ids[start:start + batch]
                mae.decode_packed(mae.encode_packed(tokens, part), part)

    once()
    peak = peak_gflops()
    times: dict[str, list[float]] = {"sweep": [], "model": [], "forward": []}
    for _ in range(repeats):
        for key, fn in (("sweep", once), ("model", model_only), ("forward", forward)):
            t0 = time.process_time()
            fn()
            times[key].append(time.process_time() - t0)
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(repeats):
            forward()
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
    # time of the forward passes; the rest of predict and the rest of the sweep are their own rows.
    forward_ms = median(times["forward"])
    parts = {k: v / max(profiled, 1e-9) * forward_ms for k, v in parts.items()}
    total_ms = median(times["sweep"])
    flops = sum(mae_flops(mae.config, r)["total"] for r in ratios)
    att = attention_flops(model, ratios)
    return {"total_ms": total_ms, "parts_ms": parts, "model_ms": median(times["model"]), "forward_ms": forward_ms,
            "peak": peak, "attention_alone": attention_alone(model, masks, repeats, batch),
            "flops": {"linear layers": flops - att, "attention": att, "other tensor operations": 0,
                      "total": flops}}


def thread_check(model_name: str, repeats: int) -> list[tuple[int, str, float, float]]:
    """Median (wall ms, CPU ms) of one sweep in fresh processes, per thread count and OpenMP wait policy."""
    import os
    import subprocess

    code = (
        "import sys, time, torch; sys.path.insert(0, {root!r}); torch.set_num_threads({threads});"
        "from vitviz.models.loading import load_model; from vitviz.mae.reconstruct import prepare;"
        "from vitviz.mae.sweep import STOPS, sweep;"
        "m = load_model({model!r}, device='cpu', random_init={rand}); o = prepare(m, {img!r});"
        "f = lambda: sweep(m, o, seed=0, ratios=STOPS[1:], cache=None); f(); r = []\n"
        "for _ in range({repeats}):\n"
        "    w, c = time.perf_counter(), time.process_time(); f();"
        " r.append((time.perf_counter() - w, time.process_time() - c))\n"
        "r.sort(); print(r[len(r) // 2][0] * 1e3, sorted(x[1] for x in r)[len(r) // 2] * 1e3)"
    )
    rows = []
    for threads in (1, 2):
        for policy in ("default", "PASSIVE"):
            env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
            if policy != "default":
                env["OMP_WAIT_POLICY"] = policy
            src = code.format(root=str(ROOT), threads=threads, model=model_name, rand=model_name != "mae-tiny",
                              img=str(EXAMPLE), repeats=repeats)
            out = subprocess.run([sys.executable, "-c", src], env=env, capture_output=True, text=True, check=True)
            wall, cpu = (float(x) for x in out.stdout.split()[-2:])
            rows.append((threads, policy, wall, cpu))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Split a ratio sweep's time into parts, against its FLOP floor.")
    ap.add_argument("--model", default="mae-tiny")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--thread-check", action="store_true",
                    help="also time the sweep at 1 and 2 threads, default and passive OpenMP waiting")
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
    rows = (("predict outside the network (embedding, losses, de-normalisation, pixel layout)",
             r["model_ms"] - r["forward_ms"]),
            ("each stop's panels and metrics (assemble_stops), Python", r["total_ms"] - r["model_ms"]))
    for label, ms in rows:
        ms = max(0.0, ms)
        print(f"| {label} | {ms:.0f} ({ms / r['total_ms']:.0%}) | - | - | - | - |")
    a = r["attention_alone"]
    print(f"\nAttention alone on the sweep's shapes ({a['scores'] / 1e6:.1f} M attention scores): "
          f"{a['model']:.0f} ms at the model's head widths, {a['width 2']:.0f} ms at head width 2 "
          f"({a['width 2'] * 1e6 / a['scores']:.2f} ns per score, which no FLOP floor counts)")
    if args.thread_check:
        print("\n| threads | OMP_WAIT_POLICY | sweep wall ms | sweep CPU ms |")
        print("| ---: | --- | ---: | ---: |")
        for threads, policy, wall, cpu in thread_check(args.model, args.repeats):
            print(f"| {threads} | {policy} | {wall:.0f} | {cpu:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
