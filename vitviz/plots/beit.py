"""Figures for visual tokens: the token map with a hover readout of each patch's code."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..render.beit import code_palette
from ._style import layout


def token_map_figure(ids: np.ndarray, codebook_size: int, title: str = "",
                     highlight: int | None = None) -> go.Figure:
    """The ``(gh, gw)`` token ids as coloured cells; hovering a cell names its code and its count.

    Args:
        ids: ``(gh, gw)`` int code ids.
        codebook_size: number of codes (fixes the colours, the same as the rendered token map).
        title: figure title (none by default: the panel's label names it).
        highlight: a code whose cells get an outline.

    Returns:
        A Plotly figure (an ``Image`` trace with the hover text, the ids as text; rows run top to bottom).
    """
    ids = np.asarray(ids, dtype=np.int64)
    gh, gw = ids.shape
    counts = np.bincount(ids.reshape(-1), minlength=codebook_size)
    rgb = code_palette(codebook_size)[ids]
    hover = [[f"code {ids[r, c]} · {counts[ids[r, c]]}× in this image · row {r}, col {c}" for c in range(gw)]
             for r in range(gh)]
    fig = go.Figure(go.Image(z=rgb, hovertext=hover, hoverinfo="text"))
    rows, cols = np.mgrid[0:gh, 0:gw]
    fig.add_trace(go.Scatter(x=cols.reshape(-1), y=rows.reshape(-1), mode="text",
                             text=[str(int(i)) for i in ids.reshape(-1)],
                             textfont=dict(size=9, color="white"), hoverinfo="skip", showlegend=False))
    if highlight is not None:
        hr, hc = np.nonzero(ids == int(highlight))
        fig.add_trace(go.Scatter(x=hc, y=hr, mode="markers", hoverinfo="skip", showlegend=False,
                                 marker=dict(symbol="square-open", size=24, color="#ff8c00", line=dict(width=3))))
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, scaleanchor="x")
    layout(fig, title, height=300)
    fig.update_layout(margin=dict(l=4, r=4, t=4 if not title else 30, b=4))
    return fig
