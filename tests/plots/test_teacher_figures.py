"""Issue 15 item 12: figures that do not mislead (sweep marker, discrete heads, heads from 1, Compute legend)."""

from __future__ import annotations

import numpy as np


def _overlap(a, b) -> bool:  # noqa: ANN001
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_sweep_figure_marks_the_current_ratio():
    from vitviz.plots.mae import CURRENT_MARKER, sweep_figure

    data = {"model": "m", "ratios": [0.0, 0.5, 0.9], "masked_mse": [0.0, 0.01, 0.02], "psnr_db": [None, 20.0, 17.0],
            "tokens_encoded": [196, 98, 20], "encoder_gflops": [1.0, 0.5, 0.1], "total_gflops": [2, 1.5, 1.1]}
    fig = sweep_figure(data, current=0.5)
    shapes = [s for s in fig.layout.shapes if s.name == CURRENT_MARKER]
    assert len(shapes) == 1 and shapes[0].x0 == shapes[0].x1 == 50
    notes = [a for a in fig.layout.annotations if a.name == CURRENT_MARKER]
    assert notes and "50%" in notes[0].text
    assert not [s for s in sweep_figure(data, current=None).layout.shapes if s.name == CURRENT_MARKER]


def test_attention_distance_heads_are_discrete_categories():
    from vitviz.plots.attention import attention_distance_figure

    d = np.random.default_rng(0).random((4, 3)) * 100
    fig = attention_distance_figure(d, "t", reference=50.0)
    assert [t.name for t in fig.data] == ["head 1", "head 2", "head 3"]
    assert len({t.marker.color for t in fig.data}) == 3  # one flat colour per head, no colour scale
    assert all(t.marker.colorscale is None and not t.marker.showscale for t in fig.data)
    np.testing.assert_allclose(fig.data[1].y, d[:, 1])
    assert fig.layout.showlegend


def test_swin_heads_count_from_one():
    from vitviz.plots.windows import window_attention_figure

    fig = window_attention_figure(np.full((3, 7, 7), 1 / 49), np.zeros(49, bool))
    assert [a.text for a in fig.layout.annotations][:3] == ["head 1", "head 2", "head 3"]
    assert "head 1, key row 0" in fig.data[0].text[0][0]


def test_compute_attention_chart_keeps_its_legend_off_the_axis_titles():
    from vitviz.compute.tables import attention_scaling_rows, classic_table
    from vitviz.plots.compute import attention_flops_figure

    fig = attention_flops_figure(attention_scaling_rows(96, 7), classic_table(96, 7), 7)
    assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top"  # under the plot, not beside y2's title
    assert len(fig.layout.yaxis.title.text) <= 30  # fits beside the plot without reaching the title
