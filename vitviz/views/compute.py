"""What the Compute tab shows: FLOPs charts and tables from closed forms, CSV files of
their rows, and a measurement of attention on this machine."""

from __future__ import annotations

import csv
import tempfile
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

import plotly.graph_objects as go

from ..compute.formulas import encoder_flops_ratio, mae_configs, mae_visible_tokens
from ..compute.measure import TimingSweep, measure_attention_scaling, timing_rows
from ..compute.tables import attention_scaling_rows, classic_table, mae_ratio_rows, model_scaling_rows, \
    patch_size_rows
from ..plots.compute import attention_flops_figure, mae_flops_figure, model_flops_figure, patch_size_figure, \
    timing_figure


def _cell(v: object) -> object:
    if isinstance(v, Fraction):
        return float(v)
    return v


def write_csv(rows: Sequence[dict], stem: str) -> str:
    """Write rows to a new temporary CSV file and return its path (one file per request)."""
    if not rows:
        raise ValueError("there is no data to download yet")
    tmp = tempfile.NamedTemporaryFile("w", suffix=".csv", prefix=f"vitviz_{stem}_", delete=False,
                                      newline="", encoding="utf-8")
    with tmp as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _cell(v) for k, v in r.items()})
    return str(Path(tmp.name))


def classic_markdown(dim: int, window: int) -> str:
    """The classic table as Markdown (exact speed-ups of the attention products)."""
    lines = [
        f"| tokens N | global QKᵀ+AV (GFLOPs) | windowed {window}×{window} (GFLOPs) | speed-up, products | "
        "speed-up, whole layer |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in classic_table(dim, window):
        lines.append(
            f"| {r['tokens']:,} | {r['global_products_flops'] / 1e9:.4g} | {r['windowed_products_flops'] / 1e9:.4g} | "
            f"**{_fraction_text(r['products_speedup'])}x** | {r['layer_speedup']:.2f}x |"
        )
    return "\n".join(lines)


def _fraction_text(f: Fraction) -> str:
    return str(f.numerator) if f.denominator == 1 else f"{float(f):.3g}"


def as_int(value: object, name: str, lo: int, hi: int) -> int:
    """A whole number in ``lo..hi`` from a UI value, or ``ValueError`` naming the range."""
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number, got {value!r}") from None
    if f != f or f != int(f) or not lo <= f <= hi:
        raise ValueError(f"{name} must be a whole number between {lo} and {hi}, got {value!r}")
    return int(f)


def attention_flops(dim: object, window: object) -> tuple[go.Figure, str, str]:
    """(width C, window M) -> figure, classic table (Markdown), CSV path."""
    c = as_int(dim, "the width C", 1, 8192)
    m = as_int(window, "the window M", 1, 64)
    rows = attention_scaling_rows(c, m)
    fig = attention_flops_figure(rows, classic_table(c, m), m)
    return fig, classic_markdown(c, m), write_csv(rows, "attention_flops")


def model_flops(max_resolution: object) -> tuple[go.Figure, str]:
    """Largest resolution (px) -> ViT-B/16 vs Swin-T figure, CSV path."""
    top = as_int(max_resolution, "the largest resolution", 224, 2240)
    res = [r for r in (224, 320, 448, 640, 896, 1120, 1344, 1792, 2240) if r <= top]
    if res[-1] != top:
        res.append(top)
    rows = model_scaling_rows(res)
    return model_flops_figure(rows), write_csv(rows, "model_flops")


def patch_size_flops(resolution: object, base: str) -> tuple[go.Figure, str]:
    """(resolution px, ViT name) -> figure, CSV path."""
    r = as_int(resolution, "the resolution", 32, 2048)
    rows = patch_size_rows(r, base)
    return patch_size_figure(rows, r, base), write_csv(rows, "patch_size_flops")


def mae_flops(name: str) -> tuple[go.Figure, str, str]:
    """MAE name -> figure, a one-line summary at 75%, CSV path."""
    configs = mae_configs()
    if name not in configs:
        raise ValueError(f"unknown MAE {name!r}; choose one of {', '.join(configs)}")
    cfg = configs[name]
    rows = mae_ratio_rows(cfg)
    k = mae_visible_tokens(cfg, 0.75)
    summary = (
        f"At 75% masking the encoder sees **{k} of {cfg.num_patches} patches**: "
        f"**{encoder_flops_ratio(cfg, 0.75):.1f}x fewer encoder FLOPs** than without masking."
    )
    return mae_flops_figure(rows, name), summary, write_csv(rows, "mae_flops")


def measure(max_tokens: object, time_budget_s: object, memory_budget_mb: object,
            progress: Callable[[float, str], None] | None = None) -> tuple[go.Figure, str, str]:
    """Budgets -> measured figure, summary, CSV path."""
    n_max = as_int(max_tokens, "the token budget", 49, 50176)
    budget = float(time_budget_s)  # type: ignore[arg-type]
    if not 1 <= budget <= 120:
        raise ValueError(f"the time budget must be between 1 and 120 seconds, got {time_budget_s!r}")
    mem = int(float(memory_budget_mb) * 2**20)  # type: ignore[arg-type]
    if not 16 * 2**20 <= mem <= 64 * 2**30:
        raise ValueError(f"the memory budget must be between 16 MiB and 64 GiB, got {memory_budget_mb!r} MiB")
    sweep = measure_attention_scaling(max_tokens=n_max, time_budget_s=budget, memory_budget_bytes=mem,
                                      progress=progress)
    return timing_figure(sweep, mem), measured_markdown(sweep), write_csv(timing_rows(sweep), "attention_timing")


def measured_markdown(sweep: TimingSweep) -> str:
    """A short report of a sweep: crossovers, why it stopped, the setup."""
    def cross(method: str) -> str:
        n = sweep.crossover(method, "windowed")
        return f"**{n:,} tokens**" if n is not None else "no size measured here"

    why = {"size": "every size up to the token budget was measured",
           "time": "the time budget ran out", "memory": "the next size would exceed the memory budget"}
    retired = ", ".join(f"{m} ({r})" for m, r in sweep.retired.items())
    return (
        f"Windowed attention is faster in wall time than fused global attention from {cross('global_sdpa')} "
        f"and than plain global attention from {cross('global_plain')} (in FLOPs they cross at one window, "
        f"{sweep.window * sweep.window} tokens). Stopped because {why.get(sweep.stop_reason, sweep.stop_reason)}"
        f"{'; retired early: ' + retired if retired else ''}. {len(sweep.rows)} measurements in "
        f"{sweep.elapsed_s:.1f} s on {sweep.device} with {sweep.threads} thread(s)."
    )
