"""Figures of Swin's windows: the shifted-window mask, per-head window attention."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..core.windows import REGION_LETTERS
from ._style import layout


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
    # One hover label per row and per column (not per cell): 2*A strings instead of A*A, and
    # the cells as int8 (sent as bytes), so the default figure stays a few kilobytes.
    labels = [_position_label(i, mw, positions[i], REGION_LETTERS[int(regions[i])]) for i in range(a)]
    fig = go.Figure(go.Heatmap(
        z=np.asarray(blocked, dtype=np.int8), x=[f"key {s}" for s in labels], y=[f"query {s}" for s in labels],
        zmin=0, zmax=1,
        hovertemplate="%{y}<br>%{x}<br>%{z} (1: blocked, -100 added to the logit; 0: allowed)<extra></extra>",
        colorscale=[[0, "#f1f5fb"], [0.5, "#f1f5fb"], [0.5, "#22313f"], [1, "#22313f"]],
        colorbar=dict(tickvals=[0.25, 0.75], ticktext=["allowed", "blocked"], len=0.5),
        xgap=0.5, ygap=0.5,
    ))
    ticks = list(range(0, a, mw))
    # Category axes (the labels above), ticked every window row with the plain index.
    fig.update_xaxes(title_text=f"key: position in the {mh}x{mw} window (row-major)", type="category",
                     tickvals=[f"key {labels[i]}" for i in ticks], ticktext=[str(i) for i in ticks],
                     constrain="domain")
    fig.update_yaxes(title_text="query: position in the window (row-major)", type="category",
                     tickvals=[f"query {labels[i]}" for i in ticks], ticktext=[str(i) for i in ticks],
                     autorange="reversed", scaleanchor="x", constrain="domain")
    if query_index is not None:  # category axes still place category k at k
        fig.add_shape(type="rect", x0=-0.5, x1=a - 0.5, y0=query_index - 0.5, y1=query_index + 0.5,
                      line=dict(color="#ff7f0e", width=2))
    n_blocked = int(blocked.sum())
    subtitle = f"{n_blocked} of {a * a} pairs blocked" if n_blocked else "no pair blocked"
    return layout(fig, f"{title}: {subtitle}" if title else subtitle, height=480)


def _position_label(index: int, mw: int, position: np.ndarray, region: str) -> str:
    """``"12 (window row 1, col 5; token (7, 8); region B)"``, with plain ints (never ``np.int64(7)``)."""
    row, col = (int(v) for v in position)
    return f"{index} (window row {index // mw}, col {index % mw}; token ({row}, {col}); region {region})"


def window_attention_figure(weights: np.ndarray, blocked: np.ndarray, title: str = "") -> go.Figure:
    """Per-head heatmaps of one query's attention over its window, with exact values on hover.

    Args:
        weights: ``(heads, Mh, Mw)`` softmax weights.
        blocked: ``(Mh*Mw,)`` bool, keys hidden by the mask.

    Heads are numbered from 1, as on the Attention tab.
    """
    heads, mh, mw = weights.shape
    cols = min(heads, 6)
    nrows = int(np.ceil(heads / cols))
    fig = make_subplots(rows=nrows, cols=cols, subplot_titles=[f"head {h + 1}" for h in range(heads)],
                        horizontal_spacing=0.02, vertical_spacing=0.08)
    bl = blocked.reshape(mh, mw)
    vmax = float(weights.max()) if weights.size else 1.0
    for h in range(heads):
        text = [[f"head {h + 1}, key row {i}, col {j}: {weights[h, i, j]:.4f}" + (" (blocked)" if bl[i, j] else "")
                 for j in range(mw)] for i in range(mh)]
        fig.add_trace(go.Heatmap(z=weights[h], zmin=0, zmax=vmax, colorscale="Viridis", text=text,
                                 hoverinfo="text", showscale=h == 0,
                                 colorbar=dict(title=dict(text="weight"), len=1.0, nticks=4)),
                      row=h // cols + 1, col=h % cols + 1)
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False, autorange="reversed")
    for i in range(1, heads + 1):
        fig.update_yaxes(scaleanchor=f"x{i if i > 1 else ''}", row=(i - 1) // cols + 1, col=(i - 1) % cols + 1)
    return layout(fig, title or "attention weights of the query over its window (softmax, per head)",
                   height=max(330, 190 * nrows + 110))


def bias_table_figure(table: np.ndarray, head: int, title: str = "") -> go.Figure:
    """One head's relative position bias as a heatmap over the offsets (dy, dx).

    Args:
        table: ``(2Mh-1, 2Mw-1)`` bias of one head, ``[dy + Mh - 1, dx + Mw - 1]``.
        head: the head's index, for the title.
    """
    mh, mw = (table.shape[0] + 1) // 2, (table.shape[1] + 1) // 2
    fig = go.Figure(go.Heatmap(
        z=table, x=list(range(-(mw - 1), mw)), y=list(range(-(mh - 1), mh)), colorscale="RdBu_r", zmid=0.0,
        hovertemplate="query − key: dy %{y}, dx %{x}<br>bias %{z:.3f}<extra></extra>",
    ))
    # the square cells come from shrinking the plot area (constrain="domain"), never from widening the x range:
    # so a 13x13 table's axis runs -6..6, not -42..42
    fig.update_xaxes(title_text="dx = query column − key column", dtick=1, range=[-mw + 0.5, mw - 0.5],
                     constrain="domain")
    fig.update_yaxes(title_text="dy = query row − key row", dtick=1, range=[mh - 0.5, -mh + 0.5], scaleanchor="x",
                     constrain="domain")
    return layout(fig, title or f"relative position bias, head {head}", height=420)
