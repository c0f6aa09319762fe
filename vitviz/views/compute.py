"""What the Compute tab shows: FLOPs charts and tables from closed forms, CSV downloads of
their rows (text: the UI serves them from Gradio's cleaned cache), and a measurement of
attention on this machine, bounded by the settings (``VITVIZ_MEASURE_*``, tighter on a
public host)."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import plotly.graph_objects as go

from .. import settings
from .common import as_int
from ..compute.formulas import SWIN_T, ViTConfig, encoder_flops_ratio, mae_configs, mae_visible_tokens, \
    quadratic_crossover_tokens, swin_flops, vit_flops
from ..compute.formulas import mae_flops as mae_flops_parts
from ..compute.measure import TimingSweep, measure_attention_scaling, timing_rows
from ..compute.tables import attention_scaling_rows, classic_table, mae_ratio_rows, model_scaling_rows, \
    patch_size_rows, quadratic_crossover
from ..plots.compute import attention_flops_figure, mae_flops_figure, model_flops_figure, patch_size_figure, \
    timing_figure


def _cell(v: object) -> object:
    if isinstance(v, Fraction):
        return float(v)
    return v


@dataclass(frozen=True)
class CsvDownload:
    """A CSV file to offer for download: its file name and its text (the UI decides where it is served from)."""

    name: str
    text: str


def csv_download(rows: Sequence[dict], stem: str) -> CsvDownload:
    """The rows as CSV text named ``vitviz_<stem>.csv`` (nothing is written to disk here)."""
    if not rows:
        raise ValueError("there is no data to download yet")
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    for r in rows:
        writer.writerow({k: _cell(v) for k, v in r.items()})
    return CsvDownload(f"vitviz_{stem}.csv", out.getvalue())


#: Column labels of the classic table (FLOP ratios, never "speed-ups": section 5 measures time).
PRODUCTS_RATIO_LABEL = "FLOP ratio, QKᵀ+AV"
LAYER_RATIO_LABEL = "FLOP ratio, attention layer"




def classic_markdown(dim: int, window: int) -> str:
    """The classic table as Markdown: the two FLOP ratios (global / windowed) and ``N/M²``.

    Every number comes from :func:`vitviz.compute.tables.classic_table`; rows where
    ``M`` does not divide the grid say how timm pads (or clamps) the windows, and a
    note under the table gives the first such case in words.
    """
    rows = classic_table(dim, window)
    lines = [
        f"| tokens N | global QKᵀ+AV (GFLOPs) | windowed {window}×{window} (GFLOPs) | **{PRODUCTS_RATIO_LABEL}** | "
        f"N/M² | {LAYER_RATIO_LABEL} |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        how = ""
        if r["clamped"]:
            how = f" (window clamped to {r['window_used']}×{r['window_used']})"
        elif r["padded"]:
            how = f" (padded to {r['padded_side']}×{r['padded_side']})"
        lines.append(
            f"| {r['tokens']:,}{how} | {r['global_products_flops'] / 1e9:.4g} | "
            f"{r['windowed_products_flops'] / 1e9:.4g} | **{_fraction_text(r['products_flop_ratio'])}x** | "
            f"{_fraction_text(r['n_over_m2'])} | {r['layer_flop_ratio']:.3g}x |"
        )
    return "\n".join(lines) + "\n\n" + window_note(rows, dim, window)


def window_note(rows: Sequence[dict], dim: int, window: int) -> str:
    """One sentence on when the ratio is exactly ``N/M²``, with the first padded row's numbers."""
    m2 = window * window
    text = (f"The QKᵀ+AV ratio is exactly N/M² only when M = {window} divides the grid's side; the attention "
            f"layer's ratio (projections included) is (2C+N)/(2C+M²) = (2·{dim}+N)/(2·{dim}+{m2}) then. "
            "Neither is a wall-time speed-up (section 5 measures that).")
    odd = next((r for r in rows if not r["exact_n_over_m2"]), None)
    if odd is None:
        return text
    s = odd["grid"]
    if odd["clamped"]:
        how = f"the window is clamped to the {s}×{s} grid (one window)"
    else:
        p = odd["padded_side"]
        how = f"timm pads the {s}×{s} grid to {p}×{p}, whole {window}×{window} windows, and computes the padding"
    return (f"{text} Here M = {window} does not divide {s}: {how}, so the ratio is "
            f"**{float(odd['products_flop_ratio']):.3g}x**, not N/M² = {float(odd['n_over_m2']):.3g}. "
            "*(Swin §3.2, eqs. 1–2)*")


def _fraction_text(f: Fraction) -> str:
    return str(f.numerator) if f.denominator == 1 else f"{float(f):.3g}"


@dataclass(frozen=True)
class AttentionChart:
    """FLOPs of one attention layer vs tokens, the classic table, its CSV (fields: the Compute tab's components)."""

    plot1: go.Figure
    table: str
    dl1: Any


@dataclass(frozen=True)
class ModelChart:
    """Whole-model FLOPs vs resolution, and its CSV."""

    plot2: go.Figure
    dl2: Any


@dataclass(frozen=True)
class PatchChart:
    """Patch size vs FLOPs, and its CSV."""

    plot3: go.Figure
    dl3: Any


@dataclass(frozen=True)
class MaeChart:
    """MAE encoder + decoder FLOPs vs masking ratio, a summary, the CSV."""

    plot4: go.Figure
    summary: str
    dl4: Any


@dataclass(frozen=True)
class Measured:
    """Measured time and memory (log-log), words, the CSV."""

    plot5: go.Figure
    measured_text: str
    dl5: Any


def attention_flops(dim: object, window: object) -> AttentionChart:
    """(width C, window M) -> figure, classic table (Markdown), CSV."""
    c = as_int(dim, "the width C", 1, 8192)
    m = as_int(window, "the window M", 1, 64)
    rows = attention_scaling_rows(c, m)
    fig = attention_flops_figure(rows, classic_table(c, m), m)
    return AttentionChart(fig, classic_markdown(c, m), csv_download(rows, "attention_flops"))


def model_flops(max_resolution: object) -> ModelChart:
    """Largest resolution (px) -> ViT-B/16 vs Swin-T figure, CSV."""
    top = as_int(max_resolution, "the largest resolution", 224, 2240)
    res = [r for r in (224, 320, 448, 640, 896, 1120, 1344, 1792, 2240) if r <= top]
    if res[-1] != top:
        res.append(top)
    rows = model_scaling_rows(res)
    return ModelChart(model_flops_figure(rows), csv_download(rows, "model_flops"))


def models_markdown() -> str:
    """Computed facts under the whole-model chart: the quadratic term's share at 224 px, where it
    takes over, and the counts as multiply-adds for comparison with papers."""
    base = ViTConfig()
    cross = quadratic_crossover(base)
    n6 = quadratic_crossover_tokens(base.embed_dim, base.mlp_ratio)
    vit, swin = vit_flops(base)["total"], swin_flops(SWIN_T)["total"]
    where = (f"in the whole model they pass half of all FLOPs at **{cross['resolution']} px** "
             f"({cross['tokens']:,} tokens)" if cross["resolution"] else "they stay under half of all FLOPs here")
    return (
        f"At {base.img_size} px the attention products QKᵀ+AV are only **{cross['share_at_base']:.1%}** of "
        f"ViT-B/16's FLOPs: projections and MLP dominate. In one block they equal the rest at "
        f"N = 2D + H = **{n6:,} tokens** (width D = {base.embed_dim}, MLP width H = 4D); {where}. "
        "Papers quote *multiply-adds*: "
        f"ViT-B/16 here is {vit / 1e9:.1f} GFLOPs = {vit / 2e9:.1f} G multiply-adds, Swin-T {swin / 1e9:.1f} GFLOPs = "
        f"{swin / 2e9:.2f} G multiply-adds (Swin's table 1 lists 4.5G). *(ViT §3.1; Swin §3.2 eq. 1, table 1)*"
    )


def patch_size_flops(resolution: object, base: str) -> PatchChart:
    """(resolution px, ViT name) -> figure, CSV."""
    r = as_int(resolution, "the resolution", 32, 2048)
    rows = patch_size_rows(r, base)
    return PatchChart(patch_size_figure(rows, r, base), csv_download(rows, "patch_size_flops"))


def mae_flops(name: str) -> MaeChart:
    """MAE name -> figure, a one-line summary at 75%, CSV."""
    configs = mae_configs()
    if name not in configs:
        raise ValueError(f"unknown MAE {name!r}; choose one of {', '.join(configs)}")
    cfg = configs[name]
    rows = mae_ratio_rows(cfg)
    k = mae_visible_tokens(cfg, 0.75)
    f = mae_flops_parts(cfg, 0.75)
    full = mae_flops_parts(cfg, 0.0)["total"]
    summary = (
        f"At 75% masking the encoder sees **{k} of {cfg.num_patches} patches**: "
        f"**{encoder_flops_ratio(cfg, 0.75):.1f}x fewer encoder FLOPs** than without masking. The decoder, "
        f"light per token but run on all {cfg.num_patches + 1} tokens, costs **{f['decoder'] / 1e9:.3g} GFLOPs** "
        f"against the encoder's {f['encoder'] / 1e9:.3g}; encoder and decoder together need "
        f"{full / f['total']:.2f}x fewer FLOPs than with nothing masked. (The paper, for ViT-L: 3.3x fewer "
        "training FLOPs, 2.8x less wall-clock time.) *(MAE §3, tables 1c and 2)*"
    )
    return MaeChart(mae_flops_figure(rows, name), summary, csv_download(rows, "mae_flops"))


def measure(max_tokens: object, time_budget_s: object, memory_budget_mb: object,
            progress: Callable[[float, str], None] | None = None) -> Measured:
    """Budgets -> measured figure, summary, CSV.

    The budgets are capped by ``settings.measure_limits()`` (tokens, seconds, MiB: 3136,
    10 s and 256 MiB on a public host), so one visitor cannot hold every core and gigabytes
    for a minute; the summary says when a cap applied.
    """
    n_max = as_int(max_tokens, "the token budget", 49, 50176)
    budget = float(time_budget_s)  # type: ignore[arg-type]
    if not 1 <= budget <= 120:
        raise ValueError(f"the time budget must be between 1 and 120 seconds, got {time_budget_s!r}")
    mem = int(float(memory_budget_mb) * 2**20)  # type: ignore[arg-type]
    if not 16 * 2**20 <= mem <= 64 * 2**30:
        raise ValueError(f"the memory budget must be between 16 MiB and 64 GiB, got {memory_budget_mb!r} MiB")
    cap_tokens, cap_seconds, cap_mb = settings.measure_limits()
    capped = []
    if n_max > cap_tokens:
        n_max, capped = cap_tokens, capped + [f"{cap_tokens} tokens"]
    if budget > cap_seconds:
        budget, capped = float(cap_seconds), capped + [f"{cap_seconds} s"]
    if mem > cap_mb * 2**20:
        mem, capped = cap_mb * 2**20, capped + [f"{cap_mb} MiB"]
    sweep = measure_attention_scaling(max_tokens=n_max, time_budget_s=budget, memory_budget_bytes=mem,
                                      progress=progress)
    text = measured_markdown(sweep)
    if capped:
        text += (f"\n\nThis server caps one measurement at {', '.join(capped)} (it is shared; "
                 "`VITVIZ_MEASURE_*` settings).")
    return Measured(timing_figure(sweep, mem), text, csv_download(timing_rows(sweep), "attention_timing"))


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
