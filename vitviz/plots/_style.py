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
#: One discrete colour per attention head (heads are categories, not a scale): Plotly's D3 palette.
HEAD_COLORS: tuple[str, ...] = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                                "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939")


def layout(fig: go.Figure, title: str, height: int = 420, legend_below: bool = False) -> go.Figure:
    """Title, size, margins, legend and template of a vitviz figure (in place; returned).

    Args:
        legend_below: put the legend under the x-axis title instead of above the plot, for
            figures with a right-hand axis whose title would run into a long legend.
    """
    legend = (dict(orientation="h", yanchor="top", y=-0.2, xanchor="left", x=0.0) if legend_below
              else dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0))
    fig.update_layout(
        title=dict(text=title, x=0.01, xanchor="left"),
        height=height + (70 if legend_below else 0),
        margin=dict(l=80, r=80, t=50, b=130) if legend_below else dict(l=70, r=70, t=60, b=60),
        legend=legend,
        hovermode="closest",
        template="plotly_white",
    )
    return fig
