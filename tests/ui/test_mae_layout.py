"""The MAE tab's layout, read from the built Blocks: where the comparison with a second model sits."""

from __future__ import annotations

import gradio as gr

from vitviz.ui import mae_tab


def test_the_comparison_sits_with_the_main_panels_not_below_the_camera():
    """The second model's row was drawn below the live camera, far from the panels it is compared with: it is now
    in the main panels' column, after them and before the live camera's section."""
    with gr.Blocks() as demo:
        mae_tab.build(demo)
    by_id = {b.elem_id: b for b in demo.blocks.values() if getattr(b, "elem_id", None)}
    row, panels, live = by_id["mae-compare-row"], by_id["mae-panels"], by_id["mae-live-box"]
    column = panels.parent
    assert row.parent is column and live.parent is column
    order = column.children
    assert order.index(panels) < order.index(row) < order.index(live)
