"""Figures of the Features tab: probe R^2 by layer, class token vs patch average, LLRD."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ._style import layout

#: One colour per probe target (row and column share a hue family: both are position).
TARGET_COLORS = {"row": "#1f77b4", "column": "#17becf", "colour": "#d62728", "edges": "#2ca02c"}
DECAY_COLORS = {0.65: "#d62728", 0.75: "#ff7f0e", 0.9: "#1f77b4"}


def probe_figure(layers: Sequence[str], r2: np.ndarray, targets: Sequence[str], names: dict[str, str],
                 title: str, control: np.ndarray | None = None,
                 layer0: str = "patch + position embedding") -> go.Figure:
    """R^2 of every probe target against depth.

    Args:
        layers: ``(n,)`` layer names (x axis, in depth order).
        r2: ``(n, len(targets))`` held-out R^2.
        targets: target keys, in column order.
        names: readable name of each target.
        title: figure title.
        control: optional ``(n, len(targets))`` R^2 of the shuffled-target control, drawn
            as one grey dotted line per target.
        layer0: what depth 0 is, for the axis title (Swin has no absolute position embedding).

    Returns:
        One line per target; hover gives the layer and the value.
    """
    r = np.asarray(r2, dtype=np.float64)
    x = list(range(len(layers)))
    fig = go.Figure()
    for j, t in enumerate(targets):
        fig.add_trace(go.Scatter(x=x, y=r[:, j], mode="lines+markers", name=names.get(t, t),
                                 line=dict(color=TARGET_COLORS.get(t), width=2.5), customdata=list(layers),
                                 hovertemplate="%{customdata}: R² %{y:.3f}<extra>" + names.get(t, t) + "</extra>"))
    if control is not None:
        c = np.asarray(control, dtype=np.float64)
        for j, t in enumerate(targets):
            fig.add_trace(go.Scatter(x=x, y=c[:, j], mode="lines", name="shuffled targets (control)",
                                     line=dict(color="#999", width=1, dash="dot"), showlegend=j == 0,
                                     customdata=list(layers),
                                     hovertemplate="%{customdata}: control R² %{y:.3f}<extra>" + t + "</extra>"))
    low = min(-0.1, float(np.nanmin(r)) if r.size else 0.0)
    fig.update_xaxes(title_text=f"depth (0 = {layer0})", tickmode="array", tickvals=x,
                     ticktext=[str(i) for i in x], range=[-0.5, len(x) - 0.5])
    fig.update_yaxes(title_text="R² on this image (fitted on the others)", range=[max(low, -1.0), 1.02])
    return layout(fig, title, height=400)


def cls_gap_figure(layers: Sequence[str], cosine: np.ndarray, title: str) -> go.Figure:
    """Cosine between the class token and the patch average at every layer."""
    c = np.asarray(cosine, dtype=np.float64)
    x = list(range(len(layers)))
    fig = go.Figure(go.Scatter(x=x, y=c, mode="lines+markers", name="cos(class token, patch average)",
                               line=dict(color="#9467bd", width=2.5), customdata=list(layers),
                               hovertemplate="%{customdata}: cosine %{y:.3f}<extra></extra>"))
    fig.add_hline(y=0.0, line=dict(color="#aaa", dash="dot"))
    fig.update_xaxes(title_text="depth (0 = embedding)", tickmode="array", tickvals=x, ticktext=[str(i) for i in x])
    fig.update_yaxes(title_text="cosine similarity", range=[-1.02, 1.02])
    fig.update_layout(showlegend=False)
    return layout(fig, title, height=320)


def llrd_figure(curves: Sequence[tuple[int, float, np.ndarray]], title: str) -> go.Figure:
    """Learning-rate multipliers by layer id for several (depth, decay) pairs.

    Args:
        curves: ``(depth, decay, multipliers (depth + 2,))`` triples.
        title: figure title.

    Returns:
        One line per pair (solid for the first depth, dashed for others), log y axis.
    """
    fig = go.Figure()
    depths = sorted({d for d, _, _ in curves})
    for depth, decay, m in curves:
        ids = np.arange(len(m))
        fig.add_trace(go.Scatter(
            x=ids, y=m, mode="lines+markers", name=f"decay {decay:g}, depth {depth}",
            line=dict(color=DECAY_COLORS.get(decay), dash="solid" if depth == depths[0] else "dash"),
            marker=dict(size=5),
            hovertemplate=f"depth {depth}, decay {decay:g}<br>layer id %{{x}}: × %{{y:.3g}}<extra></extra>"))
    fig.update_xaxes(title_text="layer id i (0 = embeddings, depth + 1 = head)")
    fig.update_yaxes(title_text="learning-rate multiplier", type="log")
    layout(fig, title, height=420)
    fig.update_layout(legend=dict(orientation="v", yanchor="bottom", y=0.02, xanchor="right", x=0.99,
                                  bgcolor="rgba(255,255,255,0.8)"))
    return fig
