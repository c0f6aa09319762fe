"""Figures of the Patches tab: a flattened patch, a token embedding."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ._style import layout


def pixel_vector_figure(values: np.ndarray, patch_size: int, title: str = "") -> go.Figure:
    """A flattened patch as a line: value against position in the vector, dots coloured by channel.

    Args:
        values: ``(P*P*3,)`` in [0, 1], ordered (row, column, channel) as
            :func:`vitviz.core.patches.patchify` flattens a patch.
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
    layout(fig, title or f"flattened patch: {patch_size}x{patch_size}x3 = {v.size} numbers", height=280)
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
    layout(fig, title or f"embedding ({d} numbers)", height=280)
    fig.update_layout(margin=dict(l=20, r=20, t=50, b=40))
    return fig
