"""The Swin tab: windows per stage, the shifted windows, the cyclic shift, the mask, attention.

Its views are the dataclasses of :mod:`vitviz.views.swin` (``Windows``, ``WindowAttention``, ``Point``,
``Bias``).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from ..core.windows import stage_geometry
from ..explain.windows import has_pretrained
from ..views import swin as sv
from ..views.swin import INPUT, Bias, Point, WindowAttention, Windows, block_choices, stage_choices
from . import helptext
from .binder import Binder
from .common import fit_slider, handler, help_text, memo_view, panel, picture, section
from ..models.costs import Cost
from .shared_image import image_box

TAB_ID, LABEL = "swin", "Swin"
#: The top-left token: the shift sends it to the bottom-right window.
DEFAULT_POINT = (2, 2)


@handler(Cost.VIEW)
def swin_windows(image: str | None, stage: float, x: float, y: float) -> Windows:
    """Endpoint ``swin_windows``: (image or None, stage 1-4, x, y px in the 224 image) -> the views.

    Returns the regular partition, the shifted partition, the rolled map, the mask figure,
    the per-stage gallery and a description.
    """
    return sv.windows_view(image, stage, x, y)


@handler(Cost.VIEW)
def swin_attention(image: str | None, stage: float, block: float, x: float, y: float) -> WindowAttention:
    """Endpoint ``swin_attention``: (image, stage, block, x, y) -> per-head tiles, overlay, figure, text."""
    return sv.attention_view(image, stage, block, x, y)


@handler(Cost.VIEW)
@memo_view()
def first_windows(image: str | None, stage: float, x: float, y: float) -> Windows:
    """The views of the default token when the tab is first shown (kept for the next visitor)."""
    return sv.windows_view(image, stage, x, y)


@handler(Cost.VIEW)
@memo_view()
def first_attention(image: str | None, stage: float, block: float, x: float, y: float) -> WindowAttention:
    """The attention of the default token when the tab is first shown (kept for the next visitor)."""
    return sv.attention_view(image, stage, block, x, y)


@handler(Cost.VIEW)
def pick_on_image(stage: float, evt: gr.SelectData) -> Point:
    """A click on a view in the image frame -> the token's centre ``(x, y)`` in the 224 image."""
    return sv.pick(stage, evt.index[0], evt.index[1], rolled=False)


@handler(Cost.VIEW)
def pick_on_rolled(stage: float, evt: gr.SelectData) -> Point:
    """A click on the rolled map -> the un-rolled token's centre ``(x, y)`` in the 224 image."""
    return sv.pick(stage, evt.index[0], evt.index[1], rolled=True)


@handler(Cost.VIEW)
@memo_view(32)
def swin_bias(stage: float, block: float, head: float) -> Bias:
    """(stage, block, head from 1) -> that head's relative position bias table and a text (private event)."""
    return sv.bias_view(stage, block, head)


@handler(Cost.VIEW)
def on_stage_heads(stage: float, head: float | None) -> Any:  # noqa: ANN401 - a gr.update
    """New stage -> the head slider's range (heads double with the channels)."""
    return fit_slider(head, 1, sv.geometry(stage)[1].num_heads)


@handler(Cost.VIEW)
def on_stage(stage: float, block: float | None) -> Any:  # noqa: ANN401 - a gr.update
    """New stage -> the block choices, keeping regular/shifted when possible."""
    _, g = sv.geometry(stage)
    return gr.update(choices=block_choices(g), value=sv.block_value(stage, block))


def build(demo: gr.Blocks) -> Binder:
    """Create the Swin tab's components inside the caller's ``gr.Tab`` context."""
    ui = Binder()
    geoms = stage_geometry(INPUT)
    help_text(helptext.read(TAB_ID, "intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            image_box(ui, TAB_ID, "swin", sources=["upload", "clipboard", "webcam"], height=240,
                                              label="Your image (optional: a synthetic picture is used when empty)",
                                              examples_id="swin-examples")
            ui.stage = gr.Radio(stage_choices(geoms), value=1, label="Stage (patch 4, window 7 at 224 px)",
                             elem_id="swin-stage")
            with gr.Row():
                ui.x = gr.Number(value=DEFAULT_POINT[0], precision=0, minimum=0, maximum=INPUT - 1,
                              label="x (px of 224)", elem_id="swin-x")
                ui.y = gr.Number(value=DEFAULT_POINT[1], precision=0, minimum=0, maximum=INPUT - 1,
                              label="y (px of 224)", elem_id="swin-y")
            ui.info = gr.Markdown(elem_id="swin-info")
        with gr.Column(scale=3):
            gr.Markdown(helptext.read(TAB_ID, "views"))
            with gr.Row(equal_height=True):
                ui.regular = panel("Block 0: regular windows", "swin-regular")
                ui.shifted = panel("Block 1: shifted windows, on the image", "swin-shifted")
                ui.rolled = panel("Block 1 as computed: rolled map, regions A–I", "swin-rolled")
            with gr.Row():
                with gr.Column(scale=1):
                    gr.Markdown(helptext.read(TAB_ID, "mask"))
                    ui.mask_plot = gr.Plot(label="attention mask of the clicked window", elem_id="swin-mask")
                with gr.Column(scale=1):
                    gr.Markdown("**Window partition of every stage** (regular blocks): the token grid halves "
                                "and the window stays 7x7 tokens, so a window covers 4x more of the image. "
                                "*(Swin §3.1)*")
                    ui.stages = gr.Gallery(label="windows per stage", show_label=False, columns=2, height=480,
                                        format="png",
                                        elem_id="swin-stages", object_fit="contain")
    weights = "pretrained" if has_pretrained() else "random weights"
    section(f"### Attention inside the window (swin-tiny, {weights})", helptext.read(TAB_ID, "attention"))
    with gr.Row():
        ui.block = gr.Dropdown(block_choices(geoms[0]), value=1, label="Block of the stage", elem_id="swin-block")
        show = gr.Button("Show attention for the selected token", elem_id="swin-show-attention")
    ui.attn_text = gr.Markdown("Click a token above, or press the button.", elem_id="swin-attn-info")
    with gr.Row():
        with gr.Column(scale=2):
            gr.Markdown("**Per head:** the query's window as the block computes it (rolled); white = the query.")
            ui.tiles = gr.Gallery(label="per head", show_label=False, columns=4,
                               height=440, format="png", elem_id="swin-heads", object_fit="contain")
        with gr.Column(scale=1):
            ui.overlay = picture("where the keys are in the image (mean over heads)", "swin-overlay", buttons=None)
    ui.heads_plot = gr.Plot(label="weights per head", elem_id="swin-heads-plot")

    section(f"### Relative position bias (swin-tiny, {weights})", helptext.read(TAB_ID, "bias"))
    ui.head = gr.Slider(1, geoms[0].num_heads, value=1, step=1, label="head (of the stage and block above)",
                     elem_id="swin-bias-head")
    ui.bias_text = gr.Markdown(elem_id="swin-bias-info")
    ui.bias_plot = gr.Plot(label="relative position bias of one head", elem_id="swin-bias")
    gr.Markdown(sv.merging_markdown(INPUT), elem_id="swin-merging")

    windows, attention = ui.bind(swin_windows, quick=False), ui.bind(swin_attention, quick=False)
    bias = ui.bind(swin_bias, quick=False)
    # Named endpoints first: they claim their names before the private events that reuse the same functions.
    show.click(**ui.bind(swin_attention, quick=False, api_name="swin_attention", api_visibility="public"))
    ui.new_image.change(**ui.bind(swin_windows, quick=False, api_name="swin_windows", api_visibility="public",
                              trigger_mode="always_last")).then(**attention)
    ui.stage.change(**ui.bind(on_stage, outputs="block", quick=False)).then(**windows).then(**attention)
    for view, pick in ((ui.regular, pick_on_image), (ui.shifted, pick_on_image), (ui.rolled, pick_on_rolled)):
        view.select(**ui.bind(pick, quick=False)).then(**windows).then(**attention)
    gr.on([ui.x.submit, ui.y.submit], **windows)
    ui.block.input(**attention, trigger_mode="always_last")
    gr.on([ui.head.release, ui.block.input], **bias, trigger_mode="always_last")
    ui.stage.change(**ui.bind(on_stage_heads, outputs="head", quick=False)).then(**bias)
    demo.load(**bias)
    # When the tab is first shown, the default token's views and attention are drawn at once (no empty
    # placeholders; not in the page configuration, which every page load copies).
    demo.load(**ui.bind(first_windows, quick=False))
    demo.load(**ui.bind(first_attention, quick=False))
    return ui
