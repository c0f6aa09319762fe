"""Figures of the intervention views: class probabilities before and after, heads ranked, the lens by layer."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from ._style import layout

BEFORE, AFTER = "#1f77b4", "#d62728"


def before_after_bars(names: Sequence[str], before: Sequence[float], after: Sequence[float], title: str,
                      unit: str = "probability") -> go.Figure:
    """Grouped bars: one pair (before, after) per name."""
    fig = go.Figure([go.Bar(x=list(names), y=list(before), name="before", marker_color=BEFORE),
                     go.Bar(x=list(names), y=list(after), name="after", marker_color=AFTER)])
    fig.update_layout(barmode="group", yaxis_title=unit, font=dict(size=15))
    if unit == "probability":
        fig.update_yaxes(range=[0, 1], tickformat=".0%")
    return layout(fig, title, height=320)


def ranking_bars(labels: Sequence[str], effects: Sequence[float], title: str, unit: str) -> go.Figure:
    """Horizontal bars, largest movement on top."""
    fig = go.Figure(go.Bar(y=list(labels)[::-1], x=list(effects)[::-1], orientation="h",
                           marker_color=[AFTER if e < 0 else BEFORE for e in effects][::-1]))
    fig.update_layout(xaxis_title=unit, font=dict(size=15), showlegend=False)
    return layout(fig, title, height=max(260, 28 * len(labels) + 120))


def lens_lines(layers: Sequence[str], series: dict[str, Sequence[float]], title: str, unit: str = "probability",
               percent: bool = True) -> go.Figure:
    """One line per named series over the layers."""
    fig = go.Figure([go.Scatter(x=list(layers), y=list(v), mode="lines+markers", name=k, line=dict(width=3))
                     for k, v in series.items()])
    fig.update_layout(yaxis_title=unit, font=dict(size=15))
    if percent:
        fig.update_yaxes(range=[0, 1], tickformat=".0%")
    return layout(fig, title, height=340)
