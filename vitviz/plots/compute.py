"""Plotly figures: the MAE ratio sweep, the compute charts and Swin's attention mask.

Each builder takes rows from :mod:`vitviz.flops` (or arrays from :mod:`vitviz.swin`)
and returns a ``plotly.graph_objects.Figure`` with axis titles that carry units and
hover text with the values. FLOPs are shown in GFLOPs (10^9 FLOPs, one multiply-add
= 2 FLOPs).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .flops import METHOD_LABELS, METHODS, TimingSweep, method_products_flops
from .swin import REGION_LETTERS

GIGA = 1e9
COLORS = {
    "global": "#d62728",
    "windowed": "#1f77b4",
    "ratio": "#2ca02c",
    "vit": "#d62728",
    "swin": "#1f77b4",
    "encoder": "#ff7f0e",
    "decoder": "#9467bd",
    "total": "#333333",
    "global_sdpa": "#d62728",
    "global_plain": "#ff7f0e",
}
FLOPS_NOTE = "GFLOPs (1 multiply-add = 2 FLOPs)"


def _layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0.01, xanchor="left"),
        height=height,
        margin=dict(l=70, r=70, t=60, b=60),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0),
        hovermode="closest",
        template="plotly_white",
    )
    return fig


def attention_flops_figure(rows: Sequence[dict], classic: Sequence[dict] = (), window: int = 7) -> go.Figure:
    """One attention layer, global vs windowed, as the token count grows (log-log).

    Args:
        rows: :func:`vitviz.flops.attention_scaling_rows`.
        classic: :func:`vitviz.flops.classic_table` rows to mark with their speed-ups.
        window: window side, for the legend.

    Returns:
        Solid: ``QK^T + AV`` products; dotted: the whole layer with its projections;
        green (right axis): the speed-up of the products, global / windowed.
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
        go.Scatter(x=n, y=[float(r["products_speedup"]) for r in rows], name="speed-up of the products (right)",
                   mode="lines", line=dict(color=COLORS["ratio"], width=2),
                   hovertemplate="%{x:,} tokens<br>global / windowed = %{y:.4g}x<extra></extra>"),
        secondary_y=True,
    )
    if classic:
        fig.add_trace(
            go.Scatter(x=[r["tokens"] for r in classic], y=[float(r["products_speedup"]) for r in classic],
                       mode="markers+text", name="classic table", marker=dict(color=COLORS["ratio"], size=10,
                                                                               symbol="diamond"),
                       text=[f"{float(r['products_speedup']):g}x" for r in classic], textposition="top left",
                       hovertemplate="%{x:,} tokens: %{y:g}x fewer product FLOPs<extra>classic table</extra>"),
            secondary_y=True,
        )
    fig.update_xaxes(type="log", dtick=1, title_text="tokens N (log scale)")
    fig.update_yaxes(type="log", dtick=1, exponentformat="SI",
                     title_text="FLOPs per layer (1 multiply-add = 2 FLOPs, log scale)", secondary_y=False)
    fig.update_yaxes(type="log", dtick=1, title_text="speed-up, global / windowed (x, log scale)",
                     secondary_y=True, showgrid=False)
    return _layout(fig, "One attention layer: global vs windowed")


def model_flops_figure(rows: Sequence[dict]) -> go.Figure:
    """Whole models, ViT-B/16 vs Swin-T, against input resolution (log-log).

    Args:
        rows: :func:`vitviz.flops.model_scaling_rows`.
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
    return _layout(fig, "Whole models: ViT-B/16 (global) vs Swin-T (windows), projections and MLP counted")


def patch_size_figure(rows: Sequence[dict], img_size: int, base: str) -> go.Figure:
    """Patch size vs sequence length vs FLOPs for one ViT width.

    Args:
        rows: :func:`vitviz.flops.patch_size_rows`.
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
    return _layout(fig, f"{base} width at {img_size}x{img_size} px: smaller patches, longer sequences")


def mae_flops_figure(rows: Sequence[dict], name: str) -> go.Figure:
    """MAE encoder and decoder FLOPs against the masking ratio (stacked areas + total).

    Args:
        rows: :func:`vitviz.flops.mae_ratio_rows`.
        name: model name, for the title.
    """
    x = [100 * r["mask_ratio"] for r in rows]
    custom = [[r["visible_tokens"], r["num_patches"], r["encoder_speedup"]] for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=x, y=[r["encoder_flops"] / GIGA for r in rows], name="encoder (visible patches only)",
        stackgroup="f", line=dict(color=COLORS["encoder"]), customdata=custom,
        hovertemplate=("masking %{x:.0f}%: %{customdata[0]} of %{customdata[1]} patches visible"
                       "<br>encoder %{y:.4g} GFLOPs (%{customdata[2]:.2f}x fewer than unmasked)<extra></extra>"),
    ))
    fig.add_trace(go.Scatter(
        x=x, y=[r["decoder_flops"] / GIGA for r in rows], name="decoder (all patches)", stackgroup="f",
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
    return _layout(fig, f"{name}: encoder + decoder FLOPs vs masking ratio")


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
    _layout(fig, title, height=540)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2, xanchor="left", x=0.0),
                      margin=dict(b=150))
    return fig


def attention_mask_figure(
    blocked: np.ndarray,
    regions: np.ndarray,
    positions: np.ndarray,
    window: tuple[int, int],
    query_index: int | None = None,
    title: str = "",
) -> go.Figure:
    """The shifted-window mask of one window as a heatmap: which (query, key) pairs are blocked.

    Args:
        blocked: ``(A, A)`` bool, rows = queries, columns = keys (row-major in the window).
        regions: ``(A,)`` region id (0..8) of each position.
        positions: ``(A, 2)`` original ``(row, col)`` of each position (``-1`` = padding).
        window: ``(Mh, Mw)``.
        query_index: a row to outline (the clicked token).
        title: figure title.
    """
    a = blocked.shape[0]
    mh, mw = window
    letters = [REGION_LETTERS[int(r)] for r in regions]
    text = [[
        (f"query {i} (window row {i // mw}, col {i % mw}; token {tuple(positions[i])}; region {letters[i]})<br>"
         f"key {j} (window row {j // mw}, col {j % mw}; token {tuple(positions[j])}; region {letters[j]})<br>"
         + ("<b>blocked</b>: -100 added to the logit" if blocked[i, j] else "allowed"))
        for j in range(a)] for i in range(a)]
    fig = go.Figure(go.Heatmap(
        z=blocked.astype(np.int8), zmin=0, zmax=1, text=text, hoverinfo="text",
        colorscale=[[0, "#f1f5fb"], [0.5, "#f1f5fb"], [0.5, "#22313f"], [1, "#22313f"]],
        colorbar=dict(tickvals=[0.25, 0.75], ticktext=["allowed", "blocked"], len=0.5),
        xgap=0.5, ygap=0.5,
    ))
    ticks = list(range(0, a, mw))
    fig.update_xaxes(title_text=f"key: position in the {mh}x{mw} window (row-major)", tickvals=ticks,
                     constrain="domain")
    fig.update_yaxes(title_text="query: position in the window (row-major)", tickvals=ticks, autorange="reversed",
                     scaleanchor="x", constrain="domain")
    if query_index is not None:
        fig.add_shape(type="rect", x0=-0.5, x1=a - 0.5, y0=query_index - 0.5, y1=query_index + 0.5,
                      line=dict(color="#ff7f0e", width=2))
    n_blocked = int(blocked.sum())
    subtitle = f"{n_blocked} of {a * a} pairs blocked" if n_blocked else "no pair blocked"
    return _layout(fig, f"{title}: {subtitle}" if title else subtitle, height=480)


def window_attention_figure(weights: np.ndarray, blocked: np.ndarray, title: str = "") -> go.Figure:
    """Per-head heatmaps of one query's attention over its window, with exact values on hover.

    Args:
        weights: ``(heads, Mh, Mw)`` softmax weights.
        blocked: ``(Mh*Mw,)`` bool, keys hidden by the mask.
    """
    heads, mh, mw = weights.shape
    cols = min(heads, 6)
    nrows = int(np.ceil(heads / cols))
    fig = make_subplots(rows=nrows, cols=cols, subplot_titles=[f"head {h}" for h in range(heads)],
                        horizontal_spacing=0.02, vertical_spacing=0.08)
    bl = blocked.reshape(mh, mw)
    vmax = float(weights.max()) if weights.size else 1.0
    for h in range(heads):
        text = [[f"head {h}, key row {i}, col {j}: {weights[h, i, j]:.4f}" + (" (blocked)" if bl[i, j] else "")
                 for j in range(mw)] for i in range(mh)]
        fig.add_trace(go.Heatmap(z=weights[h], zmin=0, zmax=vmax, colorscale="Viridis", text=text,
                                 hoverinfo="text", showscale=h == 0,
                                 colorbar=dict(title=dict(text="weight"), len=1.0, nticks=4)),
                      row=h // cols + 1, col=h % cols + 1)
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False, autorange="reversed")
    for i in range(1, heads + 1):
        fig.update_yaxes(scaleanchor=f"x{i if i > 1 else ''}", row=(i - 1) // cols + 1, col=(i - 1) % cols + 1)
    return _layout(fig, title or "attention weights of the query over its window (softmax, per head)",
                   height=max(330, 190 * nrows + 110))


def sweep_figure(data: dict) -> go.Figure:
    """Hidden-patch MSE and PSNR against masking ratio, encoder GFLOPs on a second axis.

    Args:
        data: :func:`vitviz.mae_view.sweep_data` output.
    """
    ratios = [100 * r for r in data["ratios"]]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    keep = [i for i, p in enumerate(data["psnr_db"]) if p is not None]
    fig.add_trace(go.Scatter(x=[ratios[i] for i in keep], y=[data["masked_mse"][i] for i in keep],
                             mode="lines+markers", name="hidden-patch MSE",
                             customdata=[[data["psnr_db"][i], data["tokens_encoded"][i]] for i in keep],
                             hovertemplate="%{x:.0f}% hidden<br>MSE %{y:.4f}<br>PSNR %{customdata[0]:.1f} dB"
                                           "<br>%{customdata[1]} tokens encoded<extra></extra>"),
                  secondary_y=False)
    fig.add_trace(go.Scatter(x=ratios, y=data["encoder_gflops"], mode="lines", name="encoder GFLOPs",
                             line=dict(dash="dot"),
                             hovertemplate="%{x:.0f}% hidden<br>encoder %{y:.2f} GFLOPs<extra></extra>"),
                  secondary_y=True)
    fig.update_xaxes(title_text="masking ratio (% of patches hidden)", range=[0, 96])
    fig.update_yaxes(title_text="hidden-patch MSE (RGB in [0, 1])", secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text="encoder GFLOPs (1 image)", secondary_y=True, rangemode="tozero")
    fig.update_layout(title=f"{data['model']}: error and encoder cost against masking ratio", height=340,
                      margin=dict(l=60, r=60, t=50, b=50), legend=dict(orientation="h", y=-0.25),
                      hovermode="x unified", template="plotly_white")
    return fig


def attention_distance_figure(distance: np.ndarray, title: str, reference: float | None = None,
                              max_px: float | None = None) -> go.Figure:
    """Mean attention distance of every head against layer depth (the ViT paper's figure 7).

    Args:
        distance: ``(L, H)`` mean attention distance in input pixels
            (:meth:`vitviz.attention.AttentionMaps.mean_distance`).
        title: figure title (model and image).
        reference: the distance under uniform attention over the same patches, drawn
            as a dashed line (what a head that looks everywhere equally would score).
        max_px: top of the y axis (default: a little above the largest value).

    Returns:
        One dot per head at its layer (1-based), coloured by head; hover names both.
    """
    d = np.asarray(distance, dtype=np.float64)
    n_layers, n_heads = d.shape
    layers = np.repeat(np.arange(1, n_layers + 1), n_heads)
    heads = np.tile(np.arange(1, n_heads + 1), n_layers)
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=layers, y=d.reshape(-1), mode="markers", name="one head",
        marker=dict(size=9, color=heads, colorscale="Viridis", opacity=0.85, line=dict(width=0.5, color="#333"),
                    colorbar=dict(title=dict(text="head"), thickness=12, len=0.8), cmin=1, cmax=max(n_heads, 2)),
        customdata=np.stack([heads], axis=-1),
        hovertemplate="layer %{x}, head %{customdata[0]}<br>mean distance %{y:.1f} px<extra></extra>",
    ))
    if reference is not None:
        fig.add_hline(y=float(reference), line=dict(color="#888", dash="dash"),
                      annotation_text=f"uniform attention: {reference:.0f} px", annotation_position="top left")
    top = float(max_px) if max_px is not None else 1.1 * max(float(d.max()) if d.size else 1.0,
                                                             float(reference or 0.0))
    fig.update_xaxes(title_text="network depth (layer)", dtick=1, range=[0.5, n_layers + 0.5])
    fig.update_yaxes(title_text="mean attention distance (pixels of the input)", range=[0, top])
    fig.update_layout(showlegend=False)
    return _layout(fig, title, height=400)


def pixel_vector_figure(values: np.ndarray, patch_size: int, title: str = "") -> go.Figure:
    """A flattened patch as a line: value against position in the vector, dots coloured by channel.

    Args:
        values: ``(P*P*3,)`` in [0, 1], ordered (row, column, channel) as
            :func:`vitviz.patches.patchify` flattens a patch.
        patch_size: ``P``.
        title: figure title.
    """
    v = np.asarray(values, dtype=np.float32).reshape(-1)
    idx = np.arange(v.size)
    pix = idx // 3
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=idx, y=v, mode="lines", line=dict(color="#bbbbbb", width=1), hoverinfo="skip",
                             showlegend=False))
    for ch, (name, color) in enumerate((("R", "#d62728"), ("G", "#2ca02c"), ("B", "#1f77b4"))):
        sel = idx % 3 == ch
        fig.add_trace(go.Scatter(
            x=idx[sel], y=v[sel], mode="markers", name=name, marker=dict(color=color, size=4 if v.size <= 768 else 2),
            customdata=np.stack([pix[sel] // patch_size, pix[sel] % patch_size], axis=-1),
            hovertemplate=(f"element %{{x}}: {name} of pixel (row %{{customdata[0]}}, col %{{customdata[1]}})"
                           "<br>value %{y:.3f}<extra></extra>"),
        ))
    fig.update_xaxes(title_text=f"position in the flattened vector (0..{v.size - 1}: pixel by pixel, R G B)",
                     range=[-1, v.size])
    fig.update_yaxes(title_text="value (RGB in [0, 1])", range=[-0.02, 1.02])
    _layout(fig, title or f"flattened patch: {patch_size}x{patch_size}x3 = {v.size} numbers", height=280)
    fig.update_layout(margin=dict(l=60, r=20, t=50, b=50))
    return fig


def embedding_figure(values: np.ndarray, title: str = "", width: int | None = None) -> go.Figure:
    """A token embedding (``D`` numbers) as a small diverging heatmap, wrapped into rows.

    Args:
        values: ``(D,)``.
        title: figure title.
        width: numbers per heatmap row (default 32 when ``D >= 192`` is a multiple of 32, else 16).
    """
    v = np.asarray(values, dtype=np.float32).reshape(-1)
    d = v.size
    w = width or (32 if d >= 192 and d % 32 == 0 else 16)
    rows = -(-d // w)
    z = np.full(rows * w, np.nan, dtype=np.float32)
    z[:d] = v
    z = z.reshape(rows, w)
    dims = np.arange(rows * w).reshape(rows, w)
    top = float(np.nanmax(np.abs(v))) if d else 1.0
    fig = go.Figure(go.Heatmap(
        z=z, customdata=dims, colorscale="RdBu", reversescale=True, zmid=0, zmin=-top, zmax=top, xgap=1, ygap=1,
        colorbar=dict(thickness=10, len=0.9),
        hovertemplate="dimension %{customdata}: %{z:.4f}<extra></extra>",
    ))
    fig.update_xaxes(showticklabels=False, title_text=f"{d} dimensions, {w} per row", constrain="domain")
    fig.update_yaxes(showticklabels=False, autorange="reversed", scaleanchor="x", constrain="domain")
    _layout(fig, title or f"embedding ({d} numbers)", height=280)
    fig.update_layout(margin=dict(l=20, r=20, t=50, b=40))
    return fig
