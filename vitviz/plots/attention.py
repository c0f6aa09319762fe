"""Figures of the Attention tab: mean attention distance per head."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ._style import layout


def attention_distance_figure(distance: np.ndarray, title: str, reference: float | None = None,
                              max_px: float | None = None) -> go.Figure:
    """Mean attention distance of every head against layer depth (the ViT paper's figure 7).

    Args:
        distance: ``(L, H)`` mean attention distance in input pixels
            (:meth:`vitviz.explain.maps.AttentionMaps.mean_distance`).
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
    return layout(fig, title, height=400)
