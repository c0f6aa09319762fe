"""The BEiT tab: an image as discrete visual tokens, and masked image modeling that predicts them.

Wiring only: every number and image comes from :mod:`vitviz.views.beit`.

Named endpoints: ``tokenize`` (image -> token map image, ids JSON, decoded image, PSNR) and
``beit_predict`` (image, model, ratio, seed, pattern -> masked, decoded prediction,
correctness overlay, confidence map, numbers).
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import numpy as np

from ..models.registry import VQ_TINY_CONFIG
from ..render.beit import CodebookLayout
from ..views import beit as bv
from . import urlstate
from .common import endpoint, example_images, memo_view, require_image, user_errors
from .serve.costs import Cost, cost, model_cost
from .shared_image import ImageInput, default_image

TAB_ID, LABEL = "beit", "BEiT tokens"
TOUR_TITLE = "Visual tokens (BEiT)"
#: BEiT's visual vocabulary: DALL-E's dVAE codebook (BEiT §2.1.2); quoted, not computed.
BEIT_VOCAB = 8192
TOUR_TEXT = (f"BEiT learns by guessing the visual tokens of hidden blocks (its tokenizer has {BEIT_VOCAB} codes; "
             f"this tab's vq-tiny has {VQ_TINY_CONFIG.codebook_size}): masked image modeling as classification, "
             "beside MAE's pixel regression.")
PANEL_HEIGHT = 260
RATIO_MIN, RATIO_MAX = 0.1, 0.75

INTRO = (
    "**BEiT** (Bao et al., 2021) came before MAE. A *tokenizer* first maps the whole image to a grid of "
    f"**visual tokens**, one per 16×16 patch position: BEiT's is DALL-E's convolutional dVAE with {BEIT_VOCAB} "
    f"codes, which reads the whole image, not each patch alone (BEiT §2.1.2); here it is *vq-tiny* (trained by "
    f"vitviz, {VQ_TINY_CONFIG.codebook_size} codes), whose encoder also looks at each patch's 3×3 neighbourhood, "
    "so a token is not a function of its patch alone. A decoder turns a grid of tokens back into pixels. BEiT "
    "then hides about 40% of the patches in **blocks** and trains a ViT to predict the **token id** of every "
    "hidden patch: a classification over the codebook, not a regression on pixels. *(BEiT §2.1, §2.3; VQ-VAE, "
    "van den Oord et al. 2017)*  \n"
    "**Why a class and not pixels?** BEiT argues that regressing pixels spends the model on short-range "
    "dependencies and high-frequency detail *(BEiT §1)*; in its own ablation, predicting pixels instead of tokens fell from "
    "82.86 to 81.04 fine-tuned top-1 (ViT-B, 300 epochs; blockwise masking mattered mostly for ADE20K "
    "segmentation) *(BEiT §2.3, table 4)*. MAE later found no advantage for tokens over normalised pixels: "
    "dVAE tokens 85.3 / 71.6, normalised pixels 85.4 / 73.9 (fine-tuning / linear probing, ViT-L) *(MAE table 1d)*."
)
HELP_TOKENS = (
    "**1. Tokens of your image.** Each patch is coloured by its code, with the id written in it; click a patch "
    "to highlight every patch with the same code (or hover the map below). The right panel is the image "
    "rebuilt from its 196 tokens alone: what the tokenizer keeps and what it loses."
)
HELP_CODEBOOK = "**2. The codebook.** *(VQ-VAE §3.1; BEiT §2.1)*"
HELP_PREDICT = (
    "**3. Mask and predict.** *block* is BEiT's masking (random rectangles of at least 16 patches until the "
    "ratio is reached); *random* hides single patches; *painted*: click patches of the masked panel to hide "
    "or show them. The model's guesses are decoded to pixels by the tokenizer, with the visible patches pasted."
    " *(BEiT §2.3, Algorithm 1; code: unilm `beit/masking_generator.py`)*  \n"
    "**beit-base-pt22k** is the published BEiT-Base (ImageNet-22k pretraining) when its weights can be had: it "
    "guesses DALL-E's 8192 codes, shown as a map of token ids. They **cannot be decoded to pixels** nor scored "
    "here: DALL-E's tokenizer is published only as pickled Python objects, which vitviz never unpickles."
)
HELP_COMPARE = (
    "**4. Tokens vs pixels, same mask.** beit-tiny's decoded guess beside mae-tiny's reconstruction."
    " The MSE against the photo is not a fair referee: a pixel MSE favours MAE's blurry mean by construction "
    "(the mean is what minimises it), and beit-tiny's guess, decoded by vq-tiny, can never get closer to the photo "
    "than vq-tiny's own round trip (part 1's MSE for this image) even with every token right."
    " *(BEiT §2.3; MAE §3)*"
)


# ----------------------------------------------------------------------------- handlers


@cost(Cost.VIEW)
@user_errors
def tokenize_endpoint(image: str | None) -> tuple[np.ndarray, list, np.ndarray, float]:
    """Endpoint ``tokenize``: an image as BEiT-style visual tokens of the embedded tokenizer (vq-tiny).

    Args:
        image: the photo (a file path or URL).

    Returns:
        The token map (ids written in, uint8 RGB), the ids as a 14 x 14 list, the image decoded from the
        ids (uint8 RGB), and the round trip's PSNR in dB.
    """
    require_image(image)
    v = bv.token_view(image)
    return v.token_map, v.ids, v.decoded, round(v.psnr, 3)


@cost(Cost.VIEW)
@user_errors
@memo_view()
def update_tokens(image: str | None) -> tuple:
    """Part 1 panels (private)."""
    require_image(image)
    v = bv.token_view(image)
    return v.original, v.figure, v.decoded, v.text, v.token_map, v.ids


@cost(Cost.VIEW)
@user_errors
@memo_view()
def update_codebook(selected: int | None) -> tuple:
    """The codebook mosaic and its layout (private)."""
    mosaic, layout, text = bv.codebook_view(selected)
    return mosaic, layout, text


def _select_code(code: int | None, image: str | None) -> tuple:
    """Outputs of selecting a code: the state, the mosaic with it outlined, its highlight, a sentence, the figure."""
    if code is None:
        return (gr.update(),) * 5
    mosaic, _, _ = bv.codebook_view(code)
    hl, text = bv.highlight_view(require_image(image), code)
    return code, mosaic, hl, text, bv.token_view(image, highlight=code).figure


@cost(Cost.VIEW)
@user_errors
def click_code(evt: gr.SelectData, layout: CodebookLayout | None, image: str | None) -> tuple:
    """A click on the codebook selects a code: mosaic outline, highlight in the image, token map outline."""
    return _select_code(bv.code_at(layout, float(evt.index[0]), float(evt.index[1])), image)


@cost(Cost.VIEW)
@user_errors
def click_token(evt: gr.SelectData, image: str | None) -> tuple:
    """A click on the token map selects the code of that patch (same outputs as a codebook click)."""
    require_image(image)
    return _select_code(bv.code_at_token_map(image, float(evt.index[0]), float(evt.index[1])), image)


@cost(model_cost(1))
@user_errors
def predict_endpoint(image: str | None, model_name: str, mask_ratio: float, seed: float, pattern: str) -> tuple:
    """Endpoint ``beit_predict``: (image, model, ratio, seed, pattern) -> masked input, decoded prediction with
    the visible patches pasted, correctness overlay, confidence map, numbers (accuracy top-1/top-5)."""
    require_image(image)
    if pattern == "painted":
        raise gr.Error("the API takes block or random masks; paint masks in the page")
    v = bv.predict_view(image, model_name, mask_ratio, seed, pattern)
    return v.masked, v.decoded, v.correctness, v.confidence, v.metrics


@cost(model_cost(1))
@user_errors
@memo_view()
def update_predict(image: str | None, model_name: str, mask_ratio: float, seed: float, pattern: str,
                   painted: list | None) -> tuple:
    """Parts 3 and 4 (private): prediction panels, numbers, the comparison with mae-tiny, the current mask."""
    require_image(image)
    v = bv.predict_view(image, model_name, mask_ratio, seed, pattern, painted)
    b, m, text, nums = bv.compare_view(image, v.prediction)
    return (v.masked, v.decoded, v.correctness, v.confidence, v.text, {**v.metrics, **nums}, b, m, text,
            v.prediction.mask.tolist())


@cost(Cost.VIEW)
@user_errors
def paint_click(evt: gr.SelectData, current: list | None) -> tuple[list, str]:
    """A click on the masked panel toggles that patch (starting from the mask on screen) and switches to painted."""
    if current is None:
        raise gr.Error("Wait for the first prediction, then click patches to paint.")
    grid = np.asarray(current).shape
    size = grid[0] * 16
    return bv.toggle_patch(current, grid, size, float(evt.index[0]), float(evt.index[1])), "painted"


def url_controls(state: Any) -> tuple:
    """Updates of (model, ratio, seed, pattern) from a validated :class:`~vitviz.ui.urlstate.UrlState`;
    values this tab does not offer are left alone."""
    keep = gr.update()
    beit_models = [name for _, name in bv.beit_choices()]
    ratio = state.ratio if state.ratio is not None and RATIO_MIN <= state.ratio <= RATIO_MAX else None
    return (
        gr.update(value=state.model) if state.model in beit_models else keep,
        gr.update(value=ratio) if ratio is not None else keep,
        gr.update(value=state.seed) if state.seed is not None else keep,
        gr.update(value=state.pattern) if state.pattern in bv.PATTERNS else keep,
    )


# ----------------------------------------------------------------------------- layout


class BEiTTab:
    """Handles to the controls that the app's URL state sets, and the image box the app shares."""

    def __init__(self, model: gr.Dropdown, ratio: gr.Slider, seed: gr.Number, pattern: gr.Radio,
                 show: dict, image_input: ImageInput) -> None:
        self.model, self.ratio, self.seed, self.pattern, self.show = model, ratio, seed, pattern, show
        self.image_input = image_input


def build(demo: gr.Blocks) -> BEiTTab:
    """Create the BEiT tab's components inside the caller's ``gr.Tab`` context."""
    examples = example_images()
    choices = bv.beit_choices()
    img_kw: dict[str, Any] = dict(type="numpy", format="png", interactive=False, buttons=["download", "fullscreen"])
    layout = gr.State(None)
    selected = gr.State(None)
    current_mask = gr.State(None)
    painted = gr.State(None)

    gr.Markdown(INTRO, elem_classes=["vitviz-help"])
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            image = gr.Image(value=default_image(), type="filepath",
                             sources=["upload", "webcam", "clipboard"], label="Your image", height=PANEL_HEIGHT,
                             elem_id="beit-input")
            examples_box = gr.Examples(examples=examples, inputs=image, label="Example photos") if examples else None
        with gr.Column(scale=3):
            gr.Markdown(HELP_TOKENS, elem_classes=["vitviz-help"])
            with gr.Row(equal_height=True):
                original = gr.Image(label="the model's view, 14×14 patches", elem_id="beit-original",
                                    height=PANEL_HEIGHT, **img_kw)
                token_img = gr.Image(label="token map: each patch's code (click one)", elem_id="beit-token-map",
                                     height=PANEL_HEIGHT, **img_kw)
                decoded = gr.Image(label="decoded from its own tokens", elem_id="beit-decoded",
                                   height=PANEL_HEIGHT, **img_kw)
            token_text = gr.Markdown(elem_id="beit-token-text")
            with gr.Accordion("Token map to hover, and the ids as JSON", open=False):
                token_plot = gr.Plot(label="token map (hover a patch: its code and count)", elem_id="beit-token-plot")
                ids_json = gr.JSON(elem_id="beit-ids")

    gr.Markdown(HELP_CODEBOOK, elem_classes=["vitviz-help"])
    codebook_text = gr.Markdown(elem_id="beit-codebook-text")
    with gr.Row():
        codebook = gr.Image(label="the codebook, most used first (click a code)", elem_id="beit-codebook",
                            scale=3, **img_kw)
        with gr.Column(scale=1, min_width=240):
            highlight = gr.Image(label="where the code occurs", elem_id="beit-highlight", height=PANEL_HEIGHT,
                                 **img_kw)
            highlight_text = gr.Markdown("Click a code in the codebook to highlight it here.",
                                         elem_id="beit-highlight-text")

    gr.Markdown(HELP_PREDICT, elem_classes=["vitviz-help"])
    with gr.Row():
        model = gr.Dropdown(choices=choices, value=bv.BEIT_MODEL if choices else None, label="BEiT model",
                            elem_id="beit-model", scale=2)
        pattern = gr.Radio(list(bv.PATTERNS), value="block", label="Mask pattern", elem_id="beit-pattern", scale=2)
        ratio = gr.Slider(RATIO_MIN, RATIO_MAX, value=0.4, step=0.05, label="Masking ratio", elem_id="beit-ratio",
                          scale=2)
        seed = gr.Number(value=0, precision=0, minimum=0, label="Seed", elem_id="beit-seed", scale=1, min_width=90)
    model_info = gr.Markdown(bv.model_note(bv.BEIT_MODEL), elem_id="beit-model-note")
    with gr.Row(equal_height=True):
        masked = gr.Image(label="masked input (click to paint)", elem_id="beit-masked", height=PANEL_HEIGHT, **img_kw)
        predicted = gr.Image(label="predicted tokens: decoded, or ids", elem_id="beit-predicted",
                             height=PANEL_HEIGHT, **img_kw)
        correct = gr.Image(label="right / top-5 / wrong", elem_id="beit-correct", height=PANEL_HEIGHT, **img_kw)
        confidence = gr.Image(label="confidence of the top-1 guess", elem_id="beit-confidence",
                              height=PANEL_HEIGHT, **img_kw)
    predict_text = gr.Markdown(elem_id="beit-predict-text")
    with gr.Accordion("Numbers (JSON)", open=False):
        numbers = gr.JSON(elem_id="beit-numbers")

    gr.Markdown(HELP_COMPARE, elem_classes=["vitviz-help"])
    with gr.Row(equal_height=True):
        beit_panel = gr.Image(label="beit-tiny: predicted tokens, decoded", elem_id="beit-compare-beit",
                              height=PANEL_HEIGHT, **img_kw)
        mae_panel = gr.Image(label="mae-tiny: predicted pixels", elem_id="beit-compare-mae", height=PANEL_HEIGHT,
                             **img_kw)
    compare_text = gr.Markdown(elem_id="beit-compare-text")

    quick: dict[str, Any] = dict(api_visibility="private", trigger_mode="always_last", show_progress="minimal")
    tok_out = [original, token_plot, decoded, token_text, token_img, ids_json]
    pred_in = [image, model, ratio, seed, pattern, painted]
    pred_out = [masked, predicted, correct, confidence, predict_text, numbers, beit_panel, mae_panel, compare_text,
                current_mask]
    show = dict(fn=update_predict, inputs=pred_in, outputs=pred_out, **quick)
    write_url = dict(fn=None, inputs=[model, ratio, seed, pattern], outputs=None, js=urlstate.WRITE_JS,
                     queue=False, api_visibility="private")

    demo.load(update_tokens, image, tok_out, api_visibility="private").then(
        update_codebook, selected, [codebook, layout, codebook_text], api_visibility="private").then(**show)
    # the old image's highlight is cleared first, so a code clicked while the new panels compute is never wiped
    image.change(lambda: (None, "Click a code in the codebook to highlight it here."), None,
                 [highlight, highlight_text], api_visibility="private", queue=False).then(
        update_tokens, image, tok_out, **quick).then(**show)
    model.change(bv.model_note, model, model_info, api_visibility="private", queue=False)
    for control in (model, ratio, seed):
        control.change(**show)
        control.change(**write_url)
    pattern.change(**show)
    pattern.change(**write_url)
    codebook.select(click_code, [layout, image], [selected, codebook, highlight, highlight_text, token_plot],
                    api_visibility="private")
    token_img.select(click_token, image, [selected, codebook, highlight, highlight_text, token_plot],
                     api_visibility="private")
    masked.select(paint_click, current_mask, [painted, pattern], api_visibility="private").then(**show)
    endpoint(tokenize_endpoint, image, [token_img, ids_json, decoded, gr.Number(visible=False)], api_name="tokenize")
    endpoint(predict_endpoint, [image, model, ratio, seed, pattern], [masked, predicted, correct, confidence, numbers],
             api_name="beit_predict")
    return BEiTTab(model, ratio, seed, pattern, show, ImageInput(image, examples_box))
