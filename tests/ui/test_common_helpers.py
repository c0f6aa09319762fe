"""The tabs' shared helpers (vitviz.ui.common, vitviz.ui.binder): what each one promises."""

from __future__ import annotations

import gradio as gr
import pytest

from vitviz.ui.binder import Binder
from vitviz.ui.common import fit_slider, help_text, hidden, panel, picture, shown_if, signal


def test_fit_slider_keeps_a_value_that_fits_and_clamps_one_that_does_not() -> None:
    assert fit_slider(3.4, 1, 8)["value"] == 3 and fit_slider(3.4, 1, 8)["maximum"] == 8
    assert fit_slider(20, 1, 8)["value"] == 8 and fit_slider(0, 1, 8)["value"] == 1
    assert fit_slider(None, 0, 11)["value"] == 0 and fit_slider(None, 0, 11, default=11)["value"] == 11
    assert fit_slider(2, 0, 4, label="Layer")["label"] == "Layer"


def test_pictures_hidden_components_and_signals_are_what_the_tabs_spelled_out() -> None:
    with gr.Blocks():
        shown = picture("a map", "test-map", show_label=False, buttons=["download", "fullscreen"])
        relay = hidden(gr.Number, 0, "test-relay")
        clicks = signal("() => {}", "test-clicks", container=False)
    assert (shown.type, shown.format, shown.interactive, shown.show_label, shown.elem_id) == (
        "numpy", "png", False, False, "test-map")
    assert shown.buttons == ["download", "fullscreen"]
    assert (relay.visible, relay.interactive, relay.container, relay.elem_id) == ("hidden", False, False, "test-relay")
    assert clicks.elem_id == "test-clicks" and clicks.padding is False and clicks.container is False


def test_panels_help_and_optional_views_are_what_the_tabs_spelled_out() -> None:
    with gr.Blocks():
        large = panel("grid", "test-grid", height=460)
        plain = panel("overlay", "test-overlay", buttons=["download"])
        prose = help_text("**help**", elem_id="test-help")
    assert large.buttons == ["download", "fullscreen"] and large.height == 460 and large.elem_id == "test-grid"
    assert plain.buttons == ["download"] and (large.type, large.format, large.interactive) == ("numpy", "png", False)
    assert prose.elem_classes == ["vitviz-help"] and prose.elem_id == "test-help" and prose.value == "**help**"
    assert shown_if(3) == gr.update(value=3, visible=True) and shown_if(None) == gr.update(value=None, visible=False)


def test_inputs_named_by_the_caller_must_match_the_handlers_parameters() -> None:
    def note(choice: str) -> str:
        return choice

    ui = Binder()
    with gr.Blocks():
        ui.model, ui.note = gr.Dropdown(["a"], value="a"), gr.Markdown()
        wired = ui.wiring(note, outputs="note", inputs=["model"])
        assert wired["inputs"] == [ui.model] and wired["fn"]("a") == "a"
        with pytest.raises(TypeError, match="takes 1 inputs"):
            ui.wiring(note, outputs="note", inputs=["model", "note"])
