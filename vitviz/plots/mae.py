"""Figures of the MAE explorer: the ratio sweep."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots


#: Name of the vertical line at the slider's ratio (the page moves it as the slider moves).
CURRENT_MARKER = "current-ratio"


def sweep_figure(data: dict, current: float | None = 0.75) -> go.Figure:
    """Hidden-patch MSE and PSNR against masking ratio, encoder GFLOPs on a second axis.

    Args:
        data: :func:`vitviz.views.mae.sweep_data` output.
        current: the slider's ratio (0..1), marked by a vertical line named
            :data:`CURRENT_MARKER` with its percentage; None: no marker.
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
    if current is not None:
        x = round(100 * float(current), 6)
        fig.add_shape(type="line", name=CURRENT_MARKER, xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1,
                      line=dict(color="#e4572e", width=2))
        fig.add_annotation(name=CURRENT_MARKER, xref="x", yref="paper", x=x, y=1.0, yanchor="bottom",
                           text=f"slider: {x:.0f}%", showarrow=False, font=dict(color="#e4572e"))
    fig.update_xaxes(title_text="masking ratio (% of patches hidden)", range=[0, 96])
    fig.update_yaxes(title_text="hidden-patch MSE (RGB in [0, 1])", secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text="encoder GFLOPs (1 image)", secondary_y=True, rangemode="tozero")
    fig.update_layout(title=f"{data['model']}: error and encoder cost against masking ratio", height=340,
                      margin=dict(l=60, r=60, t=50, b=50), legend=dict(orientation="h", y=-0.25),
                      hovermode="x unified", template="plotly_white")
    return fig
