"""Figures of the Attention tab: mean attention distance per head."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ._style import HEAD_COLORS, layout

#: Marker shapes cycled when there are more heads than colours.
SYMBOLS = ("circle", "diamond", "square", "triangle-up")


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
        One dot per head at its layer (both 1-based), one discrete colour (and legend entry)
        per head; hover names both.
    """
    d = np.asarray(distance, dtype=np.float64)
    n_layers, n_heads = d.shape
    fig = go.Figure()
    palette = HEAD_COLORS
    for h in range(n_heads):
        fig.add_trace(go.Scatter(
            x=np.arange(1, n_layers + 1), y=d[:, h], mode="markers", name=f"head {h + 1}",
            marker=dict(size=9, color=palette[h % len(palette)], opacity=0.9, line=dict(width=0.5, color="#333"),
                        symbol=SYMBOLS[(h // len(palette)) % len(SYMBOLS)]),
            hovertemplate=f"layer %{{x}}, head {h + 1}<br>mean distance %{{y:.1f}} px<extra></extra>",
        ))
    if reference is not None:
        fig.add_hline(y=float(reference), line=dict(color="#888", dash="dash"),
                      annotation_text=f"uniform attention: {reference:.0f} px", annotation_position="top left")
    top = float(max_px) if max_px is not None else 1.1 * max(float(d.max()) if d.size else 1.0,
                                                             float(reference or 0.0))
    fig.update_xaxes(title_text="network depth (layer)", dtick=1, range=[0.5, n_layers + 0.5])
    fig.update_yaxes(title_text="mean attention distance (pixels of the input)", range=[0, top])
    layout(fig, title, height=400)
    fig.update_layout(showlegend=True, legend=dict(title=dict(text="head"), orientation="v", x=1.02, xanchor="left",
                                                   y=1.0, yanchor="top"))
    return fig
