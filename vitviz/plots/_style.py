"""The style every figure shares: colours, units, the common layout."""

from __future__ import annotations

import plotly.graph_objects as go

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


def layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    """Title, size, margins, legend and template of a vitviz figure (in place; returned)."""
    fig.update_layout(
        title=dict(text=title, x=0.01, xanchor="left"),
        height=height,
        margin=dict(l=70, r=70, t=60, b=60),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0),
        hovermode="closest",
        template="plotly_white",
    )
    return fig
