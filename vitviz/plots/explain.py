"""Figures of the Explain tab: deletion and insertion curves of each explanation map."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ._style import HEAD_COLORS, layout


def faithfulness_figure(fractions: np.ndarray, deletion: dict[str, np.ndarray], insertion: dict[str, np.ndarray],
                        names: dict[str, str], auc: dict[str, tuple[float, float]], title: str,
                        removal: str, random: tuple[np.ndarray, np.ndarray] | None = None,
                        random_auc: tuple[float, float] | None = None, random_name: str = "random order"
                        ) -> go.Figure:
    """Deletion (left) and insertion (right) curves, one colour per method, the AUC in the legend.

    Args:
        fractions: ``(S + 1,)`` share of the patches removed (left) or inserted (right), 0..1.
        deletion: method -> ``(S + 1,)`` class probability.
        insertion: method -> ``(S + 1,)`` class probability.
        names: method -> readable name.
        auc: method -> ``(deletion AUC, insertion AUC)``.
        title: figure title.
        removal: words for how a patch is removed (axis titles).
        random: optional ``(deletion, insertion)`` ``(S + 1,)`` curves of random patch orders (mean),
            drawn grey and dashed: the chance level. random_auc: their areas. random_name: their legend.
    """
    x = np.asarray(fractions, dtype=np.float64) * 100
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=("Deletion: most important first (lower area = more faithful)",
                                        "Insertion: most important first (higher area = more faithful)"))
    for i, m in enumerate(deletion):
        colour = HEAD_COLORS[i % len(HEAD_COLORS)]
        d_auc, i_auc = auc[m]
        for col, y, a in ((1, deletion[m], d_auc), (2, insertion[m], i_auc)):
            fig.add_trace(go.Scatter(
                x=x, y=np.asarray(y, dtype=np.float64), mode="lines+markers", name=names.get(m, m),
                legendgroup=m, showlegend=col == 1, line=dict(color=colour, width=2), marker=dict(size=6),
                hovertemplate=f"{names.get(m, m)}<br>%{{x:.0f}}% of patches<br>p = %{{y:.4f}}"
                              f"<br>area {a:.4f}<extra></extra>"), row=1, col=col)
    if random is not None:
        areas = random_auc or (float("nan"), float("nan"))
        for col, y, a in ((1, random[0], areas[0]), (2, random[1], areas[1])):
            fig.add_trace(go.Scatter(
                x=x, y=np.asarray(y, dtype=np.float64), mode="lines", name=random_name, legendgroup="random",
                showlegend=col == 1, line=dict(color="#888888", width=3, dash="dash"),
                hovertemplate=f"{random_name}<br>%{{x:.0f}}% of patches<br>p = %{{y:.4f}}<br>area {a:.4f}"
                              "<extra></extra>"), row=1, col=col)
    fig.update_xaxes(title_text=f"patches removed (%) — {removal}", range=[0, 100], row=1, col=1)
    fig.update_xaxes(title_text=f"patches present (%) — the rest: {removal}", range=[0, 100], row=1, col=2)
    fig.update_yaxes(title_text="probability of the class", rangemode="tozero")
    layout(fig, title, height=380, legend_below=True)
    return fig
