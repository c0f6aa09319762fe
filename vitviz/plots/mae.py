"""Figures of the MAE explorer: the ratio sweep."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots


def sweep_figure(data: dict) -> go.Figure:
    """Hidden-patch MSE and PSNR against masking ratio, encoder GFLOPs on a second axis.

    Args:
        data: :func:`vitviz.views.mae.sweep_data` output.
    """
    ratios = [100 * r for r in data["ratios"]]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    keep = [i for i, p in enumerate(data["psnr_db"]) if p is not None]
    fig.add_trace(go.Scatter(x=[ratios[i] for i in keep], y=[data["masked_mse"][i] for i in keep],
                             mode="lines+markers", name="hidden-patch MSE",
                             customdata=[[data["psnr_db"][i], data["tokens_encoded"][i]] for i in keep],
                             hovertemplate="%{x:.0f}% hidden<br>MSE %{y:.4f}<br>PSNR %{customdata[0]:.1f} dB"
                                           "<br>%{customdata[1]} tokens encoded<extra></extra>"),
                  secondary_y=False)
    fig.add_trace(go.Scatter(x=ratios, y=data["encoder_gflops"], mode="lines", name="encoder GFLOPs",
                             line=dict(dash="dot"),
                             hovertemplate="%{x:.0f}% hidden<br>encoder %{y:.2f} GFLOPs<extra></extra>"),
                  secondary_y=True)
    fig.update_xaxes(title_text="masking ratio (% of patches hidden)", range=[0, 96])
    fig.update_yaxes(title_text="hidden-patch MSE (RGB in [0, 1])", secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text="encoder GFLOPs (1 image)", secondary_y=True, rangemode="tozero")
    fig.update_layout(title=f"{data['model']}: error and encoder cost against masking ratio", height=340,
                      margin=dict(l=60, r=60, t=50, b=50), legend=dict(orientation="h", y=-0.25),
                      hovermode="x unified", template="plotly_white")
    return fig
