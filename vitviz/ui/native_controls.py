"""The *photo's own shape* switch and its resolution choice, one pair per tab that offers them."""

from __future__ import annotations

import gradio as gr

from ..views.native import default_side, side_choices


def native_controls(prefix: str) -> tuple[gr.Checkbox, gr.Dropdown]:
    """A switch (off: the square view) and the longer side in pixels (224 … 644, capped on a public host).

    Args:
        prefix: the tab's ``elem_id`` prefix (``feat`` -> ``feat-native``, ``feat-side``).
    """
    with gr.Row(equal_height=True):
        native = gr.Checkbox(False, label="Photo's own shape (no crop)", elem_id=f"{prefix}-native", scale=2,
                             min_width=150)
        side = gr.Dropdown(choices=[(f"{s} px", s) for s in side_choices()], value=default_side(),
                           label="Longer side", elem_id=f"{prefix}-side", scale=1, min_width=100)
    return native, side
