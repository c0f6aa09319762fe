"""Figures of the Compute tab: FLOPs of attention and models (closed form), and measurements.

FLOPs are shown in GFLOPs (10^9 FLOPs, one multiply-add = 2 FLOPs).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..compute.measure import METHOD_LABELS, METHODS, TimingSweep, method_products_flops
from ._style import COLORS, FLOPS_NOTE, GIGA, layout


def attention_flops_figure(rows: Sequence[dict], classic: Sequence[dict] = (), window: int = 7) -> go.Figure:
    """One attention layer, global vs windowed, as the token count grows (log-log).

    Args:
        rows: :func:`vitviz.compute.tables.attention_scaling_rows`.
        classic: :func:`vitviz.compute.tables.classic_table` rows to mark with their FLOP ratios.
        window: window side, for the legend.

    Returns:
        Solid: ``QK^T + AV`` products; dotted: the whole layer with its projections;
        green (right axis): the FLOP ratio of the products, global / windowed (not a
        wall-time speed-up).
    """
    n = [r["tokens"] for r in rows]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    hover = "%{x:,} tokens<br>%{y:.4s} FLOPs<extra>%{fullData.name}</extra>"
    series = [
        ("global_products_flops", "global: QKᵀ + AV", COLORS["global"], "solid"),
        ("windowed_products_flops", f"windowed {window}x{window}: QKᵀ + AV", COLORS["windowed"], "solid"),
        ("global_layer_flops", "global layer incl. qkv + proj", COLORS["global"], "dot"),
        ("windowed_layer_flops", "windowed layer incl. qkv + proj", COLORS["windowed"], "dot"),
    ]
    for key, name, color, dash in series:
        fig.add_trace(
            go.Scatter(x=n, y=[r[key] for r in rows], name=name, mode="lines+markers",
                       line=dict(color=color, dash=dash), marker=dict(size=5), hovertemplate=hover),
            secondary_y=False,
        )
    fig.add_trace(
        go.Scatter(x=n, y=[float(r["products_flop_ratio"]) for r in rows], name="FLOP ratio, QKᵀ+AV (right)",
                   mode="lines", line=dict(color=COLORS["ratio"], width=2),
                   hovertemplate="%{x:,} tokens<br>FLOP ratio, global / windowed = %{y:.4g}x<extra></extra>"),
        secondary_y=True,
    )
    if classic:
        fig.add_trace(
            go.Scatter(x=[r["tokens"] for r in classic], y=[float(r["products_flop_ratio"]) for r in classic],
                       mode="markers+text", name="classic table", marker=dict(color=COLORS["ratio"], size=10,
                                                                               symbol="diamond"),
                       text=[f"{float(r['products_flop_ratio']):.3g}x" for r in classic], textposition="top left",
                       hovertemplate="%{x:,} tokens: %{y:g}x fewer product FLOPs<extra>classic table</extra>"),
            secondary_y=True,
        )
    fig.update_xaxes(type="log", dtick=1, title_text="tokens N (log scale)")
    # The right axis spans 1.5 times the left's decades and its lowest ratio sits at 55% of the height: the
    # ratio line then rises at two thirds of the windowed lines' slope and a third of the global ones', from
    # above the windowed lines' start, so it crosses a line at most once and never lies on one (with
    # both axes fitted to their data, the ratio line would lie on the global cost line).
    flops = np.log10([r[key] for r in rows for key, *_ in series if r[key] > 0])
    ratios = np.log10([float(r["products_flop_ratio"]) for r in rows if float(r["products_flop_ratio"]) > 0])
    span = float(flops.max() - flops.min()) + 0.4 if flops.size else 1.0
    fig.update_yaxes(type="log", dtick=1, exponentformat="SI", title_text="FLOPs per layer (log scale)",
                     secondary_y=False, range=[float(flops.min()) - 0.2, float(flops.min()) - 0.2 + span]
                     if flops.size else None)
    lo = float(ratios.min()) - 0.55 * 1.5 * span if ratios.size else 0.0
    fig.update_yaxes(type="log", dtick=1, title_text="FLOP ratio, QKᵀ+AV: global / windowed (x, log)",
                     secondary_y=True, showgrid=False, range=[lo, lo + 1.5 * span] if ratios.size else None,
                     tickvals=[10.0 ** k for k in range(int(np.floor(ratios.min())), int(np.ceil(ratios.max())) + 1)]
                     if ratios.size else None)  # only where the ratio runs, not the empty decades below
    fig.update_yaxes(title_standoff=6)
    return layout(fig, "One attention layer: global vs windowed", legend_below=True)


def model_flops_figure(rows: Sequence[dict]) -> go.Figure:
    """Whole models, ViT-B/16 vs Swin-T, against input resolution (log-log).

    Args:
        rows: :func:`vitviz.compute.tables.model_scaling_rows`.
    """
    res = [r["resolution"] for r in rows]
    fig = go.Figure()
    for key, name, color, dash, tok in (
        ("vit_b16_flops", "ViT-B/16 total", COLORS["vit"], "solid", "vit_b16_tokens"),
        ("swin_t_flops", "Swin-T total", COLORS["swin"], "solid", "swin_t_tokens"),
        ("vit_b16_attn_products_flops", "ViT-B/16 attention products", COLORS["vit"], "dot", "vit_b16_tokens"),
        ("swin_t_attn_products_flops", "Swin-T attention products", COLORS["swin"], "dot", "swin_t_tokens"),
    ):
        fig.add_trace(go.Scatter(
            x=res, y=[r[key] / GIGA for r in rows], name=name, mode="lines+markers",
            line=dict(color=color, dash=dash), customdata=[[r[tok], r["vit_over_swin"]] for r in rows],
            hovertemplate=("%{x} px, %{customdata[0]:,} tokens<br>%{y:.4g} GFLOPs<br>"
                           "ViT-B / Swin-T total: %{customdata[1]:.2f}x<extra>%{fullData.name}</extra>"),
        ))
    fig.update_xaxes(type="log", title_text="input resolution (px per side, log scale)", tickvals=res)
    fig.update_yaxes(type="log", dtick=1, title_text=FLOPS_NOTE + ", log scale")
    return layout(fig, "Whole models: ViT-B/16 (global) vs Swin-T (windows), projections and MLP counted")


def patch_size_figure(rows: Sequence[dict], img_size: int, base: str) -> go.Figure:
    """Patch size vs sequence length vs FLOPs for one ViT width.

    Args:
        rows: :func:`vitviz.compute.tables.patch_size_rows`.
        img_size, base: for the title.
    """
    p = [str(r["patch_size"]) for r in rows]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    custom = [[r["seq_len"], 100 * r["attn_share"], r["flops"] / GIGA] for r in rows]
    fig.add_trace(go.Bar(
        x=p, y=[r["flops"] / GIGA for r in rows], name="total FLOPs", marker_color=COLORS["total"],
        customdata=custom,
        hovertemplate=("patch %{x} px: %{customdata[0]:,} tokens<br>%{y:.4g} GFLOPs"
                       "<br>attention products: %{customdata[1]:.1f}%<extra></extra>"),
    ), secondary_y=False)
    fig.add_trace(go.Bar(
        x=p, y=[r["attn_products_flops"] / GIGA for r in rows], name="of which QKᵀ + AV",
        marker_color=COLORS["global"], customdata=custom,
        hovertemplate="patch %{x} px<br>attention products: %{y:.4g} GFLOPs<extra></extra>",
    ), secondary_y=False)
    fig.add_trace(go.Scatter(
        x=p, y=[r["seq_len"] for r in rows], name="sequence length (right)", mode="lines+markers",
        line=dict(color=COLORS["windowed"]),
        hovertemplate="patch %{x} px: %{y:,} tokens (incl. class token)<extra></extra>",
    ), secondary_y=True)
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(title_text="patch size (px per side)", type="category")
    fig.update_yaxes(type="log", dtick=1, title_text=FLOPS_NOTE + ", log scale", secondary_y=False)
    fig.update_yaxes(type="log", dtick=1, title_text="sequence length (tokens, log scale)", secondary_y=True,
                     showgrid=False)
    return layout(fig, f"{base} width at {img_size}x{img_size} px: smaller patches, longer sequences")


def mae_flops_figure(rows: Sequence[dict], name: str) -> go.Figure:
    """MAE encoder and decoder FLOPs against the masking ratio (stacked areas + total).

    Args:
        rows: :func:`vitviz.compute.tables.mae_ratio_rows`.
        name: model name, for the title.
    """
    x = [100 * r["mask_ratio"] for r in rows]
    custom = [[r["visible_tokens"], r["num_patches"], r["encoder_flop_ratio"]] for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=x, y=[r["encoder_flops"] / GIGA for r in rows], name="encoder (visible patches only)",
        stackgroup="f", line=dict(color=COLORS["encoder"]), customdata=custom,
        hovertemplate=("masking %{x:.0f}%: %{customdata[0]} of %{customdata[1]} patches visible"
                       "<br>encoder %{y:.4g} GFLOPs (%{customdata[2]:.2f}x fewer than unmasked)<extra></extra>"),
    ))
    fig.add_trace(go.Scatter(
        x=x, y=[r["decoder_flops"] / GIGA for r in rows], name="decoder (every token)", stackgroup="f",
        line=dict(color=COLORS["decoder"]),
        hovertemplate="masking %{x:.0f}%<br>decoder %{y:.4g} GFLOPs<extra></extra>",
    ))
    fig.add_trace(go.Scatter(
        x=x, y=[r["total_flops"] / GIGA for r in rows], name="total", mode="lines",
        line=dict(color=COLORS["total"], dash="dot"),
        hovertemplate="masking %{x:.0f}%<br>total %{y:.4g} GFLOPs<extra></extra>",
    ))
    fig.add_vline(x=75, line=dict(color="#888", dash="dash"), annotation_text="MAE default 75%",
                  annotation_position="top left")
    fig.update_xaxes(title_text="masking ratio (% of patches hidden)", range=[0, 95])
    fig.update_yaxes(title_text=FLOPS_NOTE + " per image", rangemode="tozero")
    return layout(fig, f"{name}: encoder + decoder FLOPs vs masking ratio")


def timing_figure(sweep: TimingSweep, memory_budget_bytes: int | None = None) -> go.Figure:
    """Measured time and peak memory of attention vs tokens, over the analytic curves.

    Left: best wall time per call (markers), and dashed, the closed-form FLOPs divided
    by the best rate measured in the sweep (what the time would be if every FLOP ran
    at that rate). Right: measured peak of allocated tensors and, dashed, the
    closed-form prediction. A vertical line marks the crossover against the fused
    global attention.
    """
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=("time per call (ms)", "peak memory allocated by the call (MiB)"))
    rate = sweep.best_flops_per_second()
    for m in METHODS:
        rows = sweep.by_method(m)
        if not rows:
            continue
        color = COLORS.get(m, COLORS["windowed"])
        n = [r.tokens for r in rows]
        fig.add_trace(go.Scatter(
            x=n, y=[1e3 * r.seconds for r in rows], name=METHOD_LABELS[m], mode="lines+markers",
            line=dict(color=color), legendgroup=m,
            customdata=[[r.repeats, r.flops_per_second / GIGA] for r in rows],
            hovertemplate=("%{x:,} tokens: %{y:.3g} ms<br>best of %{customdata[0]} calls, "
                           "%{customdata[1]:.1f} GFLOP/s<extra>%{fullData.name}</extra>"),
        ), row=1, col=1)
        if np.isfinite(rate) and rate > 0:
            fig.add_trace(go.Scatter(
                x=n, y=[1e3 * method_products_flops(m, r.tokens, sweep.dim, sweep.window) / rate for r in rows],
                name=f"analytic: FLOPs / {rate / GIGA:.0f} GFLOP/s", mode="lines", legendgroup=m,
                line=dict(color=color, dash="dash", width=1), showlegend=m == METHODS[0],
                hovertemplate="%{x:,} tokens: %{y:.3g} ms at the best measured rate<extra>analytic</extra>",
            ), row=1, col=1)
        fig.add_trace(go.Scatter(
            x=n, y=[r.peak_bytes / 2**20 for r in rows], name=METHOD_LABELS[m], mode="lines+markers",
            line=dict(color=color), legendgroup=m, showlegend=False,
            hovertemplate="%{x:,} tokens: %{y:.3g} MiB measured<extra>%{fullData.name}</extra>",
        ), row=1, col=2)
        fig.add_trace(go.Scatter(
            x=n, y=[r.predicted_bytes / 2**20 for r in rows], mode="lines", legendgroup=m, showlegend=False,
            line=dict(color=color, dash="dash", width=1), name="predicted",
            hovertemplate="%{x:,} tokens: %{y:.3g} MiB predicted<extra>closed form</extra>",
        ), row=1, col=2)
    # Reference lines are traces, not shapes: shapes on log axes take log10 coordinates.
    times = [1e3 * r.seconds for r in sweep.rows]
    cross = sweep.crossover("global_sdpa", "windowed")
    if cross is not None and times:
        fig.add_trace(go.Scatter(
            x=[cross, cross], y=[min(times), max(times)], mode="lines", line=dict(color="#555", dash="dot"),
            name=f"crossover: windowed faster from {cross:,} tokens",
            hovertemplate=f"windowed faster than fused global from {cross:,} tokens<extra></extra>",
        ), row=1, col=1)
    tokens = [r.tokens for r in sweep.rows]
    if memory_budget_bytes and tokens:
        fig.add_trace(go.Scatter(
            x=[min(tokens), max(tokens)], y=[memory_budget_bytes / 2**20] * 2, mode="lines",
            line=dict(color="#999", dash="dot"), name="memory budget",
            hovertemplate="memory budget %{y:.0f} MiB<extra></extra>",
        ), row=1, col=2)
    for c in (1, 2):
        fig.update_xaxes(type="log", dtick=1, title_text="tokens N (log scale)", row=1, col=c)
    fig.update_yaxes(type="log", dtick=1, title_text="milliseconds per call (log scale)", row=1, col=1)
    fig.update_yaxes(type="log", dtick=1, title_text="MiB (log scale)", row=1, col=2)
    title = (f"Measured on this machine: {sweep.device}, {sweep.threads} thread(s), {sweep.dtype}, "
             f"C={sweep.dim}, {sweep.num_heads} heads, window {sweep.window}")
    layout(fig, title, height=540)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2, xanchor="left", x=0.0),
                      margin=dict(b=150))
    return fig
