"""Figures of the Pretraining tab: linear-probe curves, every protocol side by side, training curves.

Drawn large (16 px text, thick lines) so a class reads them from the back of the room.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from ._style import layout

#: Text size of every figure of the tab (the projector is far away).
FONT = 16
#: Colour of each encoder family; its random-weight version is drawn dashed in the same colour.
FAMILY_COLORS: dict[str, str] = {"dinov2": "#1f77b4", "mae": "#ff7f0e", "beit": "#2ca02c", "scratch": "#7f7f7f",
                                 "cnn": "#d62728", "other": "#9467bd"}
CHANCE_COLOR = "#555555"


@dataclass(frozen=True)
class Series:
    """One line of the probe figure: an encoder's accuracy against labelled photos per class.

    Attributes:
        name: legend text. family: a key of :data:`FAMILY_COLORS`. random: dashed, open markers.
        x: ``(K,)`` labelled photos per class, on average (the x position).
        ticks: ``(K,)`` tick text of each point (``"1"`` ... ``"all"``).
        accuracy: ``(K, S)`` test accuracy in [0, 1] per seed.
    """

    name: str
    family: str
    random: bool
    x: np.ndarray
    ticks: tuple[str, ...]
    accuracy: np.ndarray


def _percent_axis(fig: go.Figure, **kw: object) -> None:
    fig.update_yaxes(range=[0, 100], ticksuffix="%", title_text="test accuracy (64 photos)", **kw)


def _chance(fig: go.Figure, chance: float, **kw: object) -> None:
    fig.add_hline(y=100 * chance, line=dict(color=CHANCE_COLOR, width=2, dash="dot"),
                  annotation_text=f"chance {100 * chance:.1f}%", annotation_position="bottom right",
                  annotation_font_size=FONT - 2, **kw)


def _big(fig: go.Figure) -> go.Figure:
    fig.update_layout(font=dict(size=FONT), hoverlabel=dict(font_size=FONT - 2))
    return fig


def probe_figure(series: Sequence[Series], chance: float, title: str) -> go.Figure:
    """Test accuracy against labelled photos per class (log axis), mean over seeds ± one standard deviation.

    Args:
        series: one per encoder. chance: 1 / number of classes. title: figure title.
    """
    fig = go.Figure()
    ticks: dict[float, str] = {}
    for s in series:
        acc = 100 * np.asarray(s.accuracy, dtype=np.float64)
        mean, std = acc.mean(axis=1), acc.std(axis=1)
        colour = FAMILY_COLORS.get(s.family, FAMILY_COLORS["other"])
        seeds = ["<br>".join(f"seed {j}: {a:.1f}%" for j, a in enumerate(row)) if len(set(row)) > 1
                 else f"{acc.shape[1]} seeds: one fit ({row[0]:.1f}%)" for row in acc]
        fig.add_trace(go.Scatter(
            x=s.x, y=mean, mode="lines+markers", name=s.name,
            error_y=dict(type="data", array=std, visible=True, thickness=2, width=6, color=colour),
            line=dict(color=colour, width=4 if not s.random else 3, dash="dash" if s.random else "solid"),
            marker=dict(size=11, color="white" if s.random else colour, line=dict(color=colour, width=2),
                        symbol="circle"),
            customdata=np.stack([np.array(s.ticks, dtype=object), std, np.array(seeds, dtype=object)], axis=1),
            hovertemplate=f"<b>{s.name}</b><br>%{{customdata[0]}} labels per class<br>"
                          "%{y:.1f}% ± %{customdata[1]:.1f}<br>%{customdata[2]}<extra></extra>"))
        ticks.update({float(x): t for x, t in zip(s.x, s.ticks)})
    _chance(fig, chance)
    xs = sorted(ticks)
    fig.update_xaxes(type="log", tickvals=xs, ticktext=[ticks[x] for x in xs],
                     title_text="labelled photos per class (log scale; all = every train photo)")
    _percent_axis(fig)
    layout(fig, title, height=430, legend_below=True)
    return _big(fig)


@dataclass(frozen=True)
class Bar:
    """One protocol's test accuracy with all labels: ``values`` per seed in [0, 1]."""

    name: str
    family: str
    random: bool
    values: tuple[float, ...]
    group: str


def protocols_figure(bars: Sequence[Bar], chance: float, title: str) -> go.Figure:
    """Every protocol with all labels, side by side: horizontal bars of the mean, a dot per seed, ± std.

    Args:
        bars: in display order (top first). chance: 1 / number of classes.
    """
    fig = go.Figure()
    names = [b.name for b in bars][::-1]
    for b in bars[::-1]:
        v = 100 * np.asarray(b.values, dtype=np.float64)
        colour = FAMILY_COLORS.get(b.family, FAMILY_COLORS["other"])
        fig.add_trace(go.Bar(
            x=[v.mean()], y=[b.name], orientation="h", showlegend=False,
            marker=dict(color="white" if b.random else colour, line=dict(color=colour, width=3),
                        pattern=dict(shape="/" if b.random else "", fgcolor=colour)),
            error_x=dict(type="data", array=[v.std()], visible=len(set(v.tolist())) > 1, thickness=2, width=6,
                         color="#222222"),
            text=[f"{v.mean():.1f}%"], textposition="inside", insidetextanchor="start",
            textfont=dict(size=FONT, color="#222222" if b.random else "white"),
            hovertemplate=f"<b>{b.name}</b><br>{b.group}<br>mean %{{x:.1f}}% ± {v.std():.1f} over {len(v)} "
                          f"seed(s)<extra></extra>"))
        if len(set(v.tolist())) > 1:
            fig.add_trace(go.Scatter(x=v, y=[b.name] * len(v), mode="markers", showlegend=False,
                                     marker=dict(size=9, color="#222222", symbol="diamond"),
                                     hovertemplate=f"{b.name}: one seed %{{x:.1f}}%<extra></extra>"))
    fig.add_vline(
        x=100 * chance, line=dict(color=CHANCE_COLOR, width=2, dash="dot"),
        annotation_text=f"chance {100 * chance:.1f}%", annotation_position="top", annotation_font_size=FONT - 2)
    fig.update_xaxes(range=[0, 100], dtick=20, ticksuffix="%",
                     title_text="test accuracy with every labelled train photo (172)")
    fig.update_yaxes(categoryorder="array", categoryarray=names, automargin=True)
    layout(fig, title, height=60 + 46 * len(bars))
    fig.update_layout(bargap=0.3, margin=dict(l=20, r=40, t=60, b=60))
    return _big(fig)


def epochs_figure(runs: Sequence[tuple[str, str, np.ndarray]], chance: float, title: str) -> go.Figure:
    """Validation accuracy after each epoch of the trained runs: mean over seeds, band = min..max.

    Args:
        runs: ``(name, family, (S, E) validation accuracy per seed and epoch)``.
    """
    fig = go.Figure()
    for name, family, val in runs:
        v = 100 * np.asarray(val, dtype=np.float64)
        epochs = np.arange(1, v.shape[1] + 1)
        colour = FAMILY_COLORS.get(family, FAMILY_COLORS["other"])
        dash = "dash" if "decay 0.75" in name else "solid"
        fig.add_trace(go.Scatter(x=np.concatenate([epochs, epochs[::-1]]),
                                 y=np.concatenate([v.max(axis=0), v.min(axis=0)[::-1]]), fill="toself",
                                 fillcolor=colour, opacity=0.15, line=dict(width=0), showlegend=False,
                                 hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=epochs, y=v.mean(axis=0), mode="lines+markers", name=name,
                                 line=dict(color=colour, width=4, dash=dash), marker=dict(size=8),
                                 hovertemplate=f"<b>{name}</b><br>epoch %{{x}}: %{{y:.1f}}% (mean of {v.shape[0]} "
                                               "seeds)<extra></extra>"))
    _chance(fig, chance)
    fig.update_xaxes(title_text="epoch", dtick=1)
    fig.update_yaxes(range=[0, 100], ticksuffix="%", title_text="validation accuracy (32 photos)")
    layout(fig, title, height=420, legend_below=True)
    return _big(fig)
