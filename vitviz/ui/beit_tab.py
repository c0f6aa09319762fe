"""The BEiT tab: an image as discrete visual tokens, and masked image modeling that predicts them.

Its views are the dataclasses of :mod:`vitviz.views.beit` and :mod:`vitviz.views.beit_pair` (part 5), which
compute every number and image; here, the clicks' answers.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import gradio as gr
import numpy as np

from ..errors import ModelUnavailable
from ..models.registry import VQ_TINY_CONFIG
from ..render.beit import CodebookLayout
from ..views import beit as bv
from ..views import beit_pair as bp
from ..views.beit import CodebookPanel, Guess, PredictControls, Prediction, TokenMap, TokenPanels
from ..views.beit_pair import Kinds, KindsControls
from . import common, helptext, urlstate
from .binder import Binder
from .common import handler, help_text, in_page, memo_view, require_image
from ..models.costs import Cost, loaded_cost, model_cost
from .shared_image import image_box

TAB_ID, LABEL = "beit", "BEiT tokens"
#: BEiT's visual vocabulary: DALL-E's dVAE codebook (BEiT §2.1.2); quoted, not computed.
BEIT_VOCAB = 8192
PANEL_HEIGHT = 260


@dataclass(frozen=True)
class Selected:
    """A selected code: the mosaic with it outlined, where it occurs in the image, the token map outlined."""

    selected: Any
    codebook: Any
    highlight: Any
    highlight_text: Any
    token_plot: Any


@dataclass(frozen=True)
class Painted:
    """A click on the masked panel: the painted mask, and the pattern becomes ``painted``."""

    painted: list
    pattern: str


@dataclass(frozen=True)
class Cleared:
    """A new image: the old code's highlight goes."""

    highlight: None
    highlight_text: str


HIGHLIGHT_PROMPT = "Click a code in the codebook to highlight it here."


@handler(loaded_cost(*(tokenizer for tokenizer, _ in bp.PAIRS)))
def tokenize_endpoint(image: str | None, tokenizer: str = bv.TOKENIZER) -> TokenMap:
    """Endpoint ``tokenize``: an image as BEiT-style visual tokens (heavy until both tokenizers and vq-kd-tiny's
    teacher are in memory: the tokenizer arrives as free text, never read for the cost).

    Args:
        image: the photo (a file path or URL).
        tokenizer: ``vq-tiny`` (pixel codes, the default) or ``vq-kd-tiny`` (BEiT v2's VQ-KD codes, distilled
            from dinov2-small).

    Returns:
        The token map (ids written in, uint8 RGB), the ids as a 14 x 14 list, what the tokenizer rebuilds from
        the ids (uint8 RGB: pixels for vq-tiny; for vq-kd-tiny the decoded features in the colours of the
        first three principal components of dinov2-small's features of the photo), and the round trip's PSNR
        in dB (vq-kd-tiny: between those colours and the teacher's own).
    """
    require_image(image)
    return bv.token_map_answer(image, tokenizer)


@handler(Cost.VIEW)
@memo_view()
def update_tokens(image: str | None) -> TokenPanels:
    """Part 1 panels (private)."""
    return bv.token_panels(require_image(image))


@handler(Cost.VIEW)
@memo_view()
def update_codebook(selected: int | None) -> CodebookPanel:
    """The codebook mosaic and its layout (private)."""
    return bv.codebook_panel(selected)


def _select_code(code: int | None, image: str | None) -> Selected:
    """Selecting a code: the state, the mosaic with it outlined, its highlight, a sentence, the figure."""
    if code is None:
        return Selected(*(gr.update(),) * 5)
    mosaic, _, _ = bv.codebook_view(code)
    hl, text = bv.highlight_view(require_image(image), code)
    return Selected(code, mosaic, hl, text, bv.token_view(image, highlight=code).figure)


@handler(Cost.VIEW)
def click_code(evt: gr.SelectData, layout: CodebookLayout | None, image: str | None) -> Selected:
    """A click on the codebook selects a code: mosaic outline, highlight in the image, token map outline."""
    return _select_code(bv.code_at(layout, float(evt.index[0]), float(evt.index[1])), image)


@handler(Cost.VIEW)
def click_token(evt: gr.SelectData, image: str | None) -> Selected:
    """A click on the token map selects the code of that patch (same outputs as a codebook click)."""
    require_image(image)
    return _select_code(bv.code_at_token_map(image, float(evt.index[0]), float(evt.index[1])), image)


@handler(model_cost(1))
def predict_endpoint(image: str | None, model_name: str, mask_ratio: float, seed: float, pattern: str) -> Guess:
    """Endpoint ``beit_predict``: (image, model, ratio, seed, pattern) -> masked input, decoded prediction with
    the visible patches pasted, correctness overlay, confidence map, numbers (accuracy top-1/top-5)."""
    require_image(image)
    if pattern == "painted":
        raise gr.Error("the API takes block or random masks; paint masks in the page")
    return bv.guess(image, model_name, mask_ratio, seed, pattern)


@handler(model_cost(1))
@memo_view()
def update_predict(c: PredictControls) -> Prediction:
    """Parts 3 and 4 (private): prediction panels, numbers, the comparison with mae-tiny, the current mask."""
    require_image(c.image)
    return bv.prediction(c)


@handler(Cost.VIEW)
def paint_click(evt: gr.SelectData, current_mask: list | None) -> Painted:
    """A click on the masked panel toggles that patch (starting from the mask on screen) and switches to painted."""
    if current_mask is None:
        raise gr.Error("Wait for the first prediction, then click patches to paint.")
    grid = np.asarray(current_mask).shape
    size = grid[0] * 16
    return Painted(bv.toggle_patch(current_mask, grid, size, float(evt.index[0]), float(evt.index[1])), "painted")


@handler(loaded_cost(*(name for pair in bp.PAIRS for name in pair)))
def update_kinds(c: KindsControls) -> Kinds:
    """Part 5 (private): both tokenizers, one code's occurrences, both models; without the teacher, a sentence."""
    require_image(c.image)
    try:
        return _kinds(c)
    except ModelUnavailable as exc:
        return bp.kinds_unavailable(exc)


@memo_view()
def _kinds(c: KindsControls) -> Kinds:
    return bp.kinds(c)


def clear_highlight() -> Cleared:
    """A new image: no code is highlighted."""
    return Cleared(None, HIGHLIGHT_PROMPT)


def build(demo: gr.Blocks) -> Binder:
    """Create the BEiT tab's components inside the caller's ``gr.Tab`` context."""
    ui = Binder()
    choices = bv.beit_choices()
    panel = functools.partial(common.panel, height=PANEL_HEIGHT)
    ui.layout, ui.selected, ui.current_mask, ui.painted = gr.State(None), gr.State(None), gr.State(None), gr.State(None)

    help_text(helptext.read(TAB_ID, "intro", vocab=BEIT_VOCAB, codebook_size=VQ_TINY_CONFIG.codebook_size))
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            image_box(ui, TAB_ID, "beit", label="Your image", height=PANEL_HEIGHT)
        with gr.Column(scale=3):
            help_text(helptext.read(TAB_ID, "tokens"))
            with gr.Row(equal_height=True):
                ui.original = panel("the model's view, 14×14 patches", "beit-original")
                ui.token_map = panel("token map: each patch's code (click one)", "beit-token-map")
                ui.decoded = panel("decoded from its own tokens", "beit-decoded")
            ui.token_text = gr.Markdown(elem_id="beit-token-text")
            with gr.Accordion("Token map to hover, and the ids as JSON", open=False):
                ui.token_plot = gr.Plot(label="token map (hover a patch: its code and count)",
                                        elem_id="beit-token-plot")
                ui.ids = gr.JSON(elem_id="beit-ids")

    help_text(helptext.read(TAB_ID, "codebook"))
    ui.codebook_text = gr.Markdown(elem_id="beit-codebook-text")
    with gr.Row():
        ui.codebook = panel("the codebook, most used first (click a code)", "beit-codebook", scale=3, height=None)
        with gr.Column(scale=1, min_width=240):
            ui.highlight = panel("where the code occurs", "beit-highlight")
            ui.highlight_text = gr.Markdown(HIGHLIGHT_PROMPT, elem_id="beit-highlight-text")

    help_text(helptext.read(TAB_ID, "predict"))
    with gr.Row():
        ui.model = gr.Dropdown(choices=choices, value=bv.BEIT_MODEL if choices else None, label="BEiT model",
                               elem_id="beit-model", scale=2)
        ui.pattern = gr.Radio(list(bv.PATTERNS), value="block", label="Mask pattern", elem_id="beit-pattern",
                              scale=2)
        ui.mask_ratio = gr.Slider(bv.RATIO_MIN, bv.RATIO_MAX, value=0.4, step=0.05, label="Masking ratio",
                                  elem_id="beit-ratio", scale=2)
        ui.seed = gr.Number(value=0, precision=0, minimum=0, label="Seed", elem_id="beit-seed", scale=1,
                            min_width=90)
    ui.note = gr.Markdown(bv.model_note(bv.BEIT_MODEL), elem_id="beit-model-note")
    with gr.Row(equal_height=True):
        ui.masked = panel("masked input (click to paint)", "beit-masked")
        ui.predicted = panel("predicted tokens: decoded, or ids", "beit-predicted")
        ui.correct = panel("right / top-5 / wrong", "beit-correct")
        ui.confidence = panel("confidence of the top-1 guess", "beit-confidence")
    ui.predict_text = gr.Markdown(elem_id="beit-predict-text")
    with gr.Accordion("Numbers (JSON)", open=False):
        ui.numbers = gr.JSON(elem_id="beit-numbers")

    help_text(helptext.read(TAB_ID, "compare"))
    with gr.Row(equal_height=True):
        ui.beit_panel = panel("beit-tiny: predicted tokens, decoded", "beit-compare-beit")
        ui.mae_panel = panel("mae-tiny: predicted pixels", "beit-compare-mae")
    ui.compare_text = gr.Markdown(elem_id="beit-compare-text")
    help_text(helptext.read(TAB_ID, "kinds"))
    ui.kinds_panels = panel("the same photo in two kinds of visual words", "beit-kinds")
    ui.kinds_text = gr.Markdown(elem_id="beit-kinds-text")
    with gr.Row():
        ui.follow = gr.Radio([name for name, _ in bp.PAIRS], value="vq-kd-tiny", label="Follow a code of",
                             elem_id="beit-kinds-tokenizer", scale=2)
        ui.code = gr.Number(value=-1, precision=0, minimum=-1, label="Code (-1: your photo's most frequent)",
                            elem_id="beit-kinds-code", scale=1)
    ui.occurrence = panel("where the code occurs", "beit-kinds-occurrence")
    ui.occurrence_text = gr.Markdown(elem_id="beit-kinds-occurrence-text")
    ui.kinds_predict = panel("same mask: beit-tiny on vq-tiny's codes, beit-tiny-v2 on vq-kd-tiny's",
                             "beit-kinds-predict")
    ui.kinds_predict_text = gr.Markdown(elem_id="beit-kinds-predict-text")
    with gr.Accordion("Numbers of part 5 (JSON)", open=False):
        ui.kinds_numbers = gr.JSON(elem_id="beit-kinds-numbers")
    ui.psnr = gr.Number(visible=False)  # the tokenize endpoint's fourth answer (not shown)
    ui.tokenizer = gr.Radio([name for name, _ in bp.PAIRS], value=bv.TOKENIZER, visible=False)  # the endpoint's
    ui.alias(model_name="model")

    show = ui.bind(update_predict)
    demo.load(**ui.bind(update_tokens, quick=False)).then(**ui.bind(update_codebook, quick=False)).then(**show).then(
        **ui.bind(update_kinds, quick=False))
    # the old image's highlight is cleared first, so a code clicked while the new panels compute is never wiped
    ui.new_image.change(**ui.bind(clear_highlight, quick=False, queue=False)).then(**ui.bind(update_tokens)).then(**show)
    ui.model.change(**ui.bind(bv.model_note, inputs=["model"], outputs="note", quick=False, queue=False))
    controls = [ui.model.change, ui.mask_ratio.change, ui.seed.change, ui.pattern.change]
    gr.on(controls, **show)
    kinds = ui.bind(update_kinds)
    gr.on([ui.image.change, ui.follow.change, ui.code.change, ui.mask_ratio.change, ui.seed.change,
           ui.pattern.change], **kinds)
    in_page(controls, [ui.model, ui.mask_ratio, ui.seed, ui.pattern], urlstate.WRITE_JS)
    ui.codebook.select(**ui.bind(click_code, quick=False))
    ui.token_map.select(**ui.bind(click_token, quick=False))
    ui.masked.select(**ui.bind(paint_click, quick=False)).then(**show)
    ui.endpoint(tokenize_endpoint, api_name="tokenize")
    ui.endpoint(predict_endpoint, api_name="beit_predict")
    ui.follow_url(("model", "mask_ratio", "seed", "pattern"), bv.url_controls)
    return ui
