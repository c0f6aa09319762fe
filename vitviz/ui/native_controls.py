"""The *photo's own shape* switch and its resolution choice, one pair per tab that offers them, and the
cost of the chosen view shown before it runs (a tab names its Markdown ``ui.native_cost``)."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from ..views.native import cost_note, default_side, side_choices
from .common import handler
from ..models.costs import model_cost


@dataclass(frozen=True)
class NativeCost:
    """What the chosen view costs, in words, before it runs."""

    native_cost: str


@handler(model_cost(1))
def on_native(image: str | None, model: str, native: bool, side: str | None) -> NativeCost:
    """The cost of the chosen view, shown before it runs (grid, patch tokens, attention products)."""
    return NativeCost(cost_note(image, model, native, side))


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
