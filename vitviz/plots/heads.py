"""Figures of the Heads tab: the head atlas (a layer x head grid and a scatter of heads) and
the query-key space of one head.

Head types share one colour (:data:`TYPE_COLORS`) in the grid and the scatter. Every
point carries ``customdata`` that the page reads when it is clicked: ``[layer, head]``
(1-based) for heads, ``[token, 0 (query) or 1 (key)]`` for the query-key space.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ._style import layout

#: One colour per head type (the keys are :data:`vitviz.explain.heads.HEAD_TYPES`).
TYPE_COLORS: dict[str, str] = {"prefix-sink": "#9467bd", "self": "#8c564b", "local": "#1f77b4",
                               "global": "#d62728"}
#: Outline of queries and keys in the query-key space (AttentionViz's green and pink).
QK_COLORS: dict[str, str] = {"query": "#1a9850", "key": "#d6338a"}
QK_SYMBOLS: dict[str, str] = {"query": "circle", "key": "diamond"}
#: The letter written in a head's cell of the grid (colour is not the only cue, and a letter reads from afar).
TYPE_LETTERS: dict[str, str] = {"prefix-sink": "P", "self": "S", "local": "L", "global": "G"}
#: Height of one layer's row of the grid, in px: a cell stays legible on a projector (6 heads in the tab's
#: column at 1280 px are about 45 px wide; 28 px rows made them slivers).
ROW_PX = 40


def _hover_stats(stats: dict[str, np.ndarray], names: np.ndarray) -> np.ndarray:
    """``(L, H, 7)`` customdata: layer, head (1-based), distance, entropy, prefix, self, type name."""
    n_layers, n_heads = names.shape
    li, hi = np.meshgrid(np.arange(1, n_layers + 1), np.arange(1, n_heads + 1), indexing="ij")
    cols = [li, hi, stats["distance"], stats["entropy"], stats["prefix_share"], stats["self_share"], names]
    return np.stack([np.asarray(c, dtype=object) for c in cols], axis=-1)


HOVER = ("layer %{customdata[0]}, head %{customdata[1]}: <b>%{customdata[6]}</b><br>"
         "mean distance %{customdata[2]:.1f} px<br>entropy %{customdata[3]:.2f} (1 = uniform)<br>"
         "on prefix and high-norm tokens (sink) %{customdata[4]:.1%}<br>on itself %{customdata[5]:.1%}<extra></extra>")


def head_grid_figure(types: np.ndarray, type_names: tuple[str, ...], stats: dict[str, np.ndarray],
                     title: str) -> go.Figure:
    """Layer x head grid, each cell coloured by its head's type; the statistics on hover.

    Args:
        types: ``(L, H)`` int codes into ``type_names``.
        type_names: the types in code order (:data:`vitviz.explain.heads.HEAD_TYPES`).
        stats: ``(L, H)`` arrays ``distance``, ``entropy``, ``prefix_share``, ``self_share``.
        title: figure title.

    Returns:
        A heatmap (layer 1 at the top) with one legend entry per type; click data
        ``customdata[0:2]`` = (layer, head), 1-based.
    """
    t = np.asarray(types, dtype=np.int64)
    n_layers, n_heads = t.shape
    n = len(type_names)
    scale = []
    for i, name in enumerate(type_names):  # a stepped colour scale: code i -> its type's colour
        scale += [[i / n, TYPE_COLORS[name]], [(i + 1) / n, TYPE_COLORS[name]]]
    names = np.asarray(type_names, dtype=object)[t]
    letters = np.vectorize(lambda name: TYPE_LETTERS.get(name, ""), otypes=[object])(names)
    fig = go.Figure(go.Heatmap(
        z=t, x=np.arange(1, n_heads + 1), y=np.arange(1, n_layers + 1), zmin=-0.5, zmax=n - 0.5,
        colorscale=scale, showscale=False, xgap=2, ygap=2, customdata=_hover_stats(stats, names),
        hovertemplate=HOVER, name="heads", text=letters, texttemplate="%{text}",
        textfont=dict(size=15 if n_heads <= 8 else 11, color="white")))
    for name in type_names:  # legend entries only
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"{TYPE_LETTERS.get(name, '?')} {name}",
                                 showlegend=True, marker=dict(size=14, symbol="square", color=TYPE_COLORS[name])))
    fig.update_xaxes(title_text="head", dtick=1, showgrid=False, zeroline=False, tickfont=dict(size=14))
    fig.update_yaxes(title_text="layer", dtick=1, autorange="reversed", showgrid=False, zeroline=False,
                     tickfont=dict(size=14))
    layout(fig, title, height=max(320, ROW_PX * n_layers + 140), legend_below=True)  # legend not over the title
    fig.update_layout(legend=dict(font=dict(size=14)))
    return fig


def head_scatter_figure(types: np.ndarray, type_names: tuple[str, ...], stats: dict[str, np.ndarray],
                        uniform: float, local_ratio: float, title: str) -> go.Figure:
    """Every head as a point: mean attention distance against entropy, coloured by type.

    Args:
        uniform: the distance of uniform attention (dashed line).
        local_ratio: heads left of ``local_ratio * uniform`` are local (dotted line).
    """
    t = np.asarray(types, dtype=np.int64)
    names = np.asarray(type_names, dtype=object)[t]
    data = _hover_stats(stats, names)
    fig = go.Figure()
    for i, name in enumerate(type_names):
        sel = t == i
        fig.add_trace(go.Scatter(
            x=np.asarray(stats["distance"])[sel], y=np.asarray(stats["entropy"])[sel], mode="markers",
            name=f"{name} ({int(sel.sum())})", customdata=data[sel], hovertemplate=HOVER,
            marker=dict(size=10, color=TYPE_COLORS[name], opacity=0.85, line=dict(width=0.5, color="#333"))))
    fig.add_vline(x=float(uniform), line=dict(color="#888", dash="dash"),
                  annotation_text=f"uniform: {uniform:.0f} px", annotation_position="bottom left")
    fig.add_vline(x=float(local_ratio * uniform), line=dict(color=TYPE_COLORS["local"], dash="dot"),
                  annotation_text=f"local below {local_ratio * uniform:.0f} px", annotation_position="top right")
    top = max(float(np.max(stats["distance"])) if np.size(stats["distance"]) else 0.0, float(uniform)) * 1.1
    fig.update_xaxes(title_text="mean attention distance (pixels of the input)", range=[0, top])
    fig.update_yaxes(title_text="entropy / log T (1 = uniform)", range=[-0.03, 1.05])
    layout(fig, title, height=380, legend_below=True)
    return fig


def position_colors(patch_rc: np.ndarray, grid: tuple[int, int]) -> list[str]:
    """One colour per patch position: red grows left to right, blue top to bottom."""
    gh, gw = grid
    rc = np.asarray(patch_rc, dtype=np.float64)
    red = 40 + 215 * rc[:, 1] / max(1, gw - 1)
    blue = 40 + 215 * rc[:, 0] / max(1, gh - 1)
    return [f"rgb({r:.0f},90,{b:.0f})" for r, b in zip(red, blue)]


def qk_figure(query_xy: np.ndarray, key_xy: np.ndarray, labels: list[str], colors: list[str], num_prefix: int,
              explained: np.ndarray, title: str) -> go.Figure:
    """Queries and keys of one head in their joint 2-D projection.

    Args:
        query_xy, key_xy: ``(T, 2)`` positions (prefix tokens first).
        labels: ``T`` names of the tokens (``class token``, ``patch (row 3, col 7)``...).
        colors: ``T - num_prefix`` colours of the patch tokens (:func:`position_colors`).
        num_prefix: prefix tokens, drawn as large stars.
        explained: ``(2,)`` share of the variance on each axis.

    Returns:
        Patch queries (circles, green outline) and keys (diamonds, pink outline) filled by
        position; click data ``customdata`` = (token index, 0 query / 1 key).
    """
    fig = go.Figure()
    t = len(labels)
    idx = np.arange(t)
    for kind, xy, code in (("query", np.asarray(query_xy), 0), ("key", np.asarray(key_xy), 1)):
        plural = "queries" if kind == "query" else "keys"
        patch = slice(num_prefix, t)
        custom = np.stack([idx, np.full(t, code)], axis=1)
        fig.add_trace(go.Scatter(
            x=xy[patch, 0], y=xy[patch, 1], mode="markers", name=f"{plural} (patches)",
            text=labels[num_prefix:], customdata=custom[patch],
            hovertemplate=f"{kind} of %{{text}}<extra></extra>",
            marker=dict(size=9 if kind == "query" else 10, symbol=QK_SYMBOLS[kind], color=colors,
                        line=dict(width=1, color=QK_COLORS[kind]), opacity=0.9)))
        if num_prefix:
            fig.add_trace(go.Scatter(
                x=xy[:num_prefix, 0], y=xy[:num_prefix, 1], mode="markers", name=f"{plural} (prefix tokens)",
                text=labels[:num_prefix], customdata=custom[:num_prefix],
                hovertemplate=f"{kind} of %{{text}}<extra></extra>",
                marker=dict(size=16, symbol="star", color="#222", line=dict(width=2, color=QK_COLORS[kind]))))
    ex = np.asarray(explained, dtype=np.float64)
    fig.update_xaxes(title_text=f"PC 1 ({ex[0]:.0%} of the variance)", zeroline=False)
    fig.update_yaxes(title_text=f"PC 2 ({ex[1]:.0%})", zeroline=False, scaleanchor="x", scaleratio=1)
    layout(fig, title, height=480, legend_below=True)
    return fig
