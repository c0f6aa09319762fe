"""Issue 34, bug 5: charts and drawn maps a newcomer could not read (each test failed before its fix)."""

from __future__ import annotations

import numpy as np


def test_bias_table_axis_spans_the_table_not_the_plot_width():
    """A 13×13 bias table (window 7) had its x-axis stretched to −42…42 to keep the cells square."""
    from vitviz.plots.windows import bias_table_figure

    fig = bias_table_figure(np.zeros((13, 13)), head=1)
    assert list(fig.layout.xaxis.range) == [-6.5, 6.5] and fig.layout.xaxis.constrain == "domain"
    assert sorted(fig.layout.yaxis.range) == [-6.5, 6.5] and fig.layout.yaxis.constrain == "domain"


def _plot_height(value: float, axis_range) -> float:  # noqa: ANN001
    """Where a value sits on a log axis, as a fraction of the plot's height."""
    lo, hi = axis_range
    return (np.log10(value) - lo) / (hi - lo)


def test_compute_ratio_line_lies_on_no_cost_line():
    """The FLOP ratio (right axis) and the global QKᵀ+AV cost (left axis) were drawn on top of each other (and
    a first fix put the ratio on the windowed cost line): now it crosses each cost line at most once."""
    from vitviz.compute.tables import attention_scaling_rows
    from vitviz.plots.compute import attention_flops_figure

    rows = attention_scaling_rows()
    fig = attention_flops_figure(rows)
    left, right = fig.layout.yaxis.range, fig.layout.yaxis2.range
    assert left is not None and right is not None
    ratio = np.array([_plot_height(float(r["products_flop_ratio"]), right) for r in rows])
    assert ((0 <= ratio) & (ratio <= 1)).all()
    for key in ("global_products_flops", "windowed_products_flops", "global_layer_flops", "windowed_layer_flops"):
        gap = ratio - np.array([_plot_height(r[key], left) for r in rows])
        close = np.abs(gap) < 0.04  # within 4% of the plot's height
        assert close.sum() <= 2, key


def test_heads_legends_are_below_the_plots():
    """The head atlas's legend sat over its title in the tab's narrow column (1280 px)."""
    from vitviz.plots.heads import head_grid_figure, head_scatter_figure

    types = np.zeros((2, 3), dtype=np.int64)
    stats = {k: np.ones((2, 3)) for k in ("distance", "entropy", "prefix_share", "self_share")}
    for fig in (head_grid_figure(types, ("global",), stats, "t"),
                head_scatter_figure(types, ("global",), stats, 10.0, 0.5, "t")):
        assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top"


def test_error_map_colour_bar_labels_fit():
    """The colour bar's top label ("0.063") ran past the bar's right edge."""
    from vitviz.render.mae import error_heatmap

    err = np.full((14, 14), 0.0634, dtype=np.float32)
    img = error_heatmap(err, np.ones((14, 14), dtype=bool), 16)
    bar = img[:, 14 * 16:]
    assert (bar[:, -3:] > 200).all()  # nothing drawn in the last columns: no label cut off


def test_error_map_colour_bar_clear_of_the_map_and_the_edge():
    """The colour bar touched the map (its strip 4 px from it) and its values, 11 px high, were about 8 px on the
    screen where the panel is shown at 3/4 size: now a gap on each side of the bar and values written larger."""
    from vitviz.render.mae import BAR_GAP, BAR_TEXT, error_heatmap

    err = np.full((14, 14), 0.0654, dtype=np.float32)
    img = error_heatmap(err, np.ones((14, 14), dtype=bool), 16)
    bar = img[:, 14 * 16:]
    inked = np.where((bar < 200).any(axis=(0, 2)))[0]
    assert inked.min() >= BAR_GAP >= 6  # a white gap between the map and the strip
    assert bar.shape[1] - 1 - inked.max() >= 6  # and between the widest value and the panel's edge
    rows = np.where((bar[:, BAR_GAP + 13:] < 200).any(axis=(1, 2)))[0]
    assert rows.min() >= 3 and img.shape[0] - 1 - rows.max() >= 3  # the top and bottom values are whole
    assert BAR_TEXT * 0.75 >= 11  # still 11 px on the screen at 3/4 size


def test_token_ids_are_written_large_enough_to_read():
    """The ids were a third of a cell high: about 6 px once the 448-px map is shown at 260 px."""
    from vitviz.render.beit import id_font_size

    shown = 260 / 448
    for digits in (1, 2, 3):
        assert id_font_size(32, digits) * shown >= 8.5, digits


def test_head_grid_cells_read_from_the_back_row():
    """The head atlas gave a layer 26 px of figure height (cells about 28 px tall in the page) and told the types
    apart by colour only: now 40 px a layer, and each cell carries its type's letter in a 15 px font."""
    from vitviz.plots.heads import ROW_PX, TYPE_LETTERS, head_grid_figure

    names = ("prefix-sink", "self", "local", "global")
    types = np.array([[0, 1, 2], [3, 3, 2]], dtype=np.int64).repeat(6, axis=0)  # 12 layers x 3 heads
    stats = {k: np.ones(types.shape) for k in ("distance", "entropy", "prefix_share", "self_share")}
    fig = head_grid_figure(types, names, stats, "t")
    margins = fig.layout.margin.t + fig.layout.margin.b
    assert (fig.layout.height - margins) / 12 >= 0.9 * ROW_PX >= 36
    grid = fig.data[0]
    assert grid.text[0].tolist() == ["P", "S", "L"] and grid.text[6].tolist() == ["G", "G", "L"]
    assert grid.textfont.size >= 14
    assert [t.name for t in fig.data[1:]] == [f"{TYPE_LETTERS[n]} {n}" for n in names]
