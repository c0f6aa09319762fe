"""Token-norm figures (high-norm tokens, Darcet et al. 2024): one layer's histogram, and
every layer's largest-over-median norm with the outlier counts."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ._style import layout


def norm_histogram_figure(patch_norms: np.ndarray, prefix_norms: dict[str, float], threshold: float,
                          title: str) -> go.Figure:
    """Histogram of one layer's patch-token norms ``(P,)``, the outlier threshold and the prefix tokens' norms."""
    p = np.asarray(patch_norms, dtype=np.float64).ravel()
    over = p > threshold
    fig = go.Figure()
    fig.add_trace(go.Histogram(x=p[~over], nbinsx=40, name="patch tokens", marker_color="#1f77b4"))
    if over.any():
        fig.add_trace(go.Histogram(x=p[over], nbinsx=10, name=f"outliers ({int(over.sum())})", marker_color="#d62728"))
    fig.add_vline(x=threshold, line_dash="dash", line_color="#d62728",
                  annotation_text="outlier threshold", annotation_position="top")
    for i, (name, value) in enumerate(prefix_norms.items()):
        fig.add_vline(x=value, line_dash="dot", line_color="#9467bd",
                      annotation_text=name, annotation_position="bottom right" if i % 2 else "top right")
    fig.update_layout(barmode="overlay", xaxis_title="token norm (L2)", yaxis_title="patch tokens")
    return layout(fig, title, height=320)


def norm_depth_figure(names: tuple[str, ...], ratios: np.ndarray, counts: np.ndarray, title: str) -> go.Figure:
    """Per layer: the largest patch norm over the median (line) and the outlier count (bars)."""
    x = list(names)
    fig = go.Figure()
    fig.add_trace(go.Bar(x=x, y=np.asarray(counts), name="outlier patch tokens", marker_color="#d62728",
                         opacity=0.5, yaxis="y2"))
    fig.add_trace(go.Scatter(x=x, y=np.asarray(ratios), mode="lines+markers", name="largest / median norm",
                             line=dict(color="#1f77b4")))
    fig.update_layout(yaxis=dict(title="largest / median patch norm", rangemode="tozero"),
                      yaxis2=dict(title="outliers", overlaying="y", side="right", rangemode="tozero"))
    return layout(fig, title, height=320, legend_below=True)
