"""The Patches tab: how an image becomes a sequence of tokens.

Wiring only: every number and image comes from :mod:`vitviz.views.patches`.

Named endpoints: ``patch_grid`` (image, patch size, resolution -> overlay, readout,
numbers) and ``pos_similarity`` (model, row, column -> similarity map, full grid of maps).
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import numpy as np

from ..core.patches import grid_view
from ..render.patches import MosaicLayout, OverlayLayout, StripLayout, patch_grid_overlay
from ..views import patches as pv
from ..views.patches import DEFAULT_POINT, PATCH_SIZES, readout_markdown, readouts
from .common import as_seed, endpoint, example_images, memo_view, require_image, user_errors
from .shared_image import ImageInput, default_image
from ..views.common import trained_default
from .serve.costs import Cost, cost, model_cost

TAB_ID, LABEL = "patches", "Patches"
TOUR_TITLE = "Patches"
TOUR_TEXT = ("A ViT cuts the image into a grid of patches, flattens each one and projects it to a token; position "
             "embeddings tell the model where each token came from.")
DEFAULT_MODEL = "mae-tiny"
DEFAULT_PATCH = 16
DEFAULT_RESOLUTION = 224
RES_MIN, RES_MAX = 112, 448

INTRO = (
    "A Vision Transformer reads an image as a **sequence**: it cuts the picture into P×P patches, "
    "flattens each one into P·P·3 numbers, multiplies it by one learned matrix **E** to get a token, puts "
    "a **[CLS]** token in front and adds a **position embedding** to every token, since attention by "
    "itself cannot tell where a token came from (ViT and MAE add an absolute one; Swin, by default, adds none "
    "and puts a learned *relative position bias* inside each window's attention instead — see the Swin tab). "
    "Take each step apart below. **Click a patch** on the grid, the token strip or the map of maps to follow "
    "it everywhere. *(ViT §3.1, eq. 1; Swin §3.2, eq. 4)*"
)
POLICY = (
    "**Crop/resize policy:** the resolution is rounded to the nearest multiple of the patch size; the "
    "image's shorter side is resized to it and the longer side is centre-cropped to a square (the "
    "darkened bands are cut off). This is what the models here do with any photo."
)
EXPLAIN_STRIP = (
    "**The token strip** is what the transformer actually receives: [CLS] first, then the patches in "
    "raster order (row by row, left to right), wrapped into lines here only to fit the page. Nothing in the "
    "sequence itself says which patch was above which: that is the position embedding's job. *(ViT §3.1)*"
)
EXPLAIN_POS = (
    "**Position embeddings:** each tile of the big picture is one patch's position embedding compared "
    "(cosine similarity) with every other patch's, drawn at that patch's place — the ViT paper's figure 7. "
    "Click a tile to select its patch. *(ViT fig. 7, centre)*"
)
EXPLAIN_RES = (
    "**Another resolution:** a ViT trained at one grid can run at another if its position embeddings are "
    "resampled to the new grid. timm does it bicubically (`timm.layers.resample_abs_pos_embed`); MAE's "
    "fixed sin-cos embeddings can instead be recomputed for the new grid. *(ViT §3.2; mae util/pos_embed.py)*"
)
EXPLAIN_SHUFFLE = (
    "**Shuffle the patches:** the patch tokens are permuted *without* their positions. Self-attention, "
    "LayerNorm and the MLP treat tokens as a set, so without position embeddings each patch's output is the "
    "same wherever it sits (the encoder is *permutation-equivariant*). Adding the position embeddings — which "
    "stay in place while the contents move — breaks this: the same patch now gets a different output. "
    "*(ViT §3.1)*"
)


# ----------------------------------------------------------------------------- handlers


@cost(Cost.VIEW)
@user_errors
def patch_grid(image: str | None, patch_size: float, resolution: float) -> tuple[np.ndarray, str, dict]:
    """Endpoint ``patch_grid``: (image, patch size, resolution) -> overlay, readout (Markdown), numbers (JSON)."""
    require_image(image)
    g, resized, _ = grid_view(image, int(patch_size), int(resolution))
    overlay, _ = patch_grid_overlay(g, resized)
    return overlay, readout_markdown(g), readouts(g)


@cost(Cost.VIEW)
@user_errors
@memo_view()
def update_grid(image: str | None, patch_size: float, resolution: float, point: Any, on_cls: bool) -> tuple:
    """Grid, readouts, token strip and the selected patch's pixels (private)."""
    return pv.grid_views(image, patch_size, resolution, point, on_cls)


@cost(model_cost(1))
@user_errors
@memo_view()
def update_model(image: str | None, model_key: str, resolution: float, point: Any, on_cls: bool) -> tuple:
    """Row/column of the selected patch in the model's grid, its embedding E·x, the model note (private)."""
    return pv.embedding_views(image, model_key, resolution, point, on_cls)


@cost(model_cost(0))
@user_errors
def pos_similarity(model_key: str, row: float, col: float) -> tuple[np.ndarray, np.ndarray]:
    """Endpoint ``pos_similarity``: (model, row, column) -> that patch's map, the full grid of maps."""
    one, mosaic, _ = pv.pos_views(model_key, row, col)
    return one, mosaic


@cost(model_cost(0))
@user_errors
def pos_views(model_key: str, row: float, col: float) -> tuple[np.ndarray, np.ndarray, MosaicLayout]:
    """Like :func:`pos_similarity`, plus the mosaic's layout for clicks (private)."""
    return pv.pos_views(model_key, row, col)


@cost(model_cost(1))
@user_errors
@memo_view()
def update_resolution(image: str | None, model_key: str, resolution: float) -> tuple:
    """The model at another resolution: interpolated maps and, for an MAE, reconstructions (private)."""
    text, interp, recomputed, recon = pv.resolution_views(image, model_key, resolution)
    mae = recomputed is not None
    return (text, interp, gr.update(value=recomputed, visible=mae), gr.update(visible=mae), recon)


@cost(model_cost(1))
@user_errors
@memo_view()
def update_shuffle(image: str | None, model_key: str, seed: float, row: float, col: float) -> tuple:
    """The shuffle demonstration for the selected patch (private)."""
    return pv.shuffle_views(image, model_key, seed, row, col)


@user_errors
def next_seed(seed: float | None) -> int:
    """The next permutation seed."""
    return 0 if seed is None else as_seed(seed) + 1


# ----------------------------------------------------------------------------- clicks


@cost(Cost.VIEW)
@user_errors
def click_overlay(evt: gr.SelectData, layout: OverlayLayout | None, point: Any) -> tuple:
    """A click on the grid selects the patch under it (clicks on the cropped bands are ignored)."""
    return pv.click_overlay(layout, float(evt.index[0]), float(evt.index[1]), point)


@cost(Cost.VIEW)
@user_errors
def click_strip(evt: gr.SelectData, layout: StripLayout | None, patch_size: float, resolution: float,
                point: Any, on_cls: bool) -> tuple:
    """A click on the token strip selects that token ([CLS] or a patch)."""
    return pv.click_strip(layout, float(evt.index[0]), float(evt.index[1]), patch_size, resolution, point, on_cls)


@cost(Cost.VIEW)
@user_errors
def click_mosaic(evt: gr.SelectData, layout: MosaicLayout | None, point: Any) -> tuple:
    """A click on a tile of the map of maps selects that tile's patch."""
    return pv.click_mosaic(layout, float(evt.index[0]), float(evt.index[1]), point)


@cost(model_cost(0))
@user_errors
def rowcol_to_point(model_key: str, row: float, col: float) -> tuple:
    """Typed row/column (in the model's grid) -> the selected point."""
    return pv.rowcol_to_point(model_key, row, col)


# ----------------------------------------------------------------------------- layout


def build(demo: gr.Blocks) -> ImageInput:
    """Create the Patches tab's components inside the caller's ``gr.Tab`` context.

    Args:
        demo: the enclosing app; its page load draws the first example at once.
    """
    examples = example_images()
    choices = pv.model_choices()
    default_model = trained_default(choices, DEFAULT_MODEL)
    point = gr.State(list(DEFAULT_POINT))
    on_cls = gr.State(False)
    overlay_layout, strip_layout, mosaic_layout = gr.State(None), gr.State(None), gr.State(None)
    img_kw: dict[str, Any] = dict(type="numpy", format="png", interactive=False, buttons=["download", "fullscreen"])

    gr.Markdown(INTRO, elem_classes=["vitviz-help"])  # hidden in the presenter layout
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            image = gr.Image(value=default_image(), type="filepath",
                             sources=["upload", "webcam", "clipboard"], label="Your image", height=240,
                             elem_id="patches-input")
            examples_box = (gr.Examples(examples=examples, inputs=image, label="Example photos",
                                        elem_id="patches-examples") if examples else None)
            patch = gr.Radio(list(PATCH_SIZES), value=DEFAULT_PATCH, label="Patch size P (px)",
                             elem_id="patches-size")
            res = gr.Slider(RES_MIN, RES_MAX, value=DEFAULT_RESOLUTION, step=8, label="Input resolution (px)",
                            elem_id="patches-resolution")
            gr.Markdown(POLICY)
        with gr.Column(scale=2):
            overlay = gr.Image(label="The patch grid (click a patch)", height=460, elem_id="patches-overlay",
                               **img_kw)
            readout = gr.Markdown(elem_id="patches-readout")
            with gr.Accordion("Numbers (JSON)", open=False):
                numbers = gr.JSON(elem_id="patches-numbers")

    gr.Markdown("### The token sequence")
    gr.Markdown(EXPLAIN_STRIP)
    strip = gr.Image(label="Tokens in order: [CLS], p1 … pN (click a token)", elem_id="patches-strip", **img_kw)
    token_text = gr.Markdown(elem_id="patches-token-text")
    with gr.Row():
        model = gr.Dropdown(choices=choices, value=default_model, label="Model (for E, positions, shuffle)",
                            elem_id="patches-model", scale=2)
        row = gr.Number(value=4, precision=0, minimum=0, label="row (model grid)", elem_id="patches-row", scale=0,
                        min_width=110)
        col = gr.Number(value=9, precision=0, minimum=0, label="column (model grid)", elem_id="patches-col",
                        scale=0, min_width=110)
    note = gr.Markdown(elem_id="patches-model-note")
    with gr.Row(equal_height=True):
        pixels_plot = gr.Plot(label="flattened pixel vector", elem_id="patches-pixels")
        embed_plot = gr.Plot(label="embedding E·x + b", elem_id="patches-embedding")
    embed_text = gr.Markdown(elem_id="patches-embedding-text")

    gr.Markdown("### Position embeddings")
    gr.Markdown(EXPLAIN_POS)
    with gr.Row():
        sim_map = gr.Image(label="cosine similarity of the selected patch's position with all others",
                           elem_id="patches-sim-map", scale=1, **img_kw)
        mosaic = gr.Image(label="every patch's map, at its place (click a tile)", elem_id="patches-sim-grid",
                          scale=2, **img_kw)

    gr.Markdown("### Another resolution")
    gr.Markdown(EXPLAIN_RES)
    res2 = gr.Slider(RES_MIN, RES_MAX, value=320, step=16, label="Run the model at (px)",
                     elem_id="patches-model-resolution")
    res_text = gr.Markdown(elem_id="patches-res-text")
    with gr.Row():
        res_interp = gr.Image(label="maps after bicubic interpolation (timm)", elem_id="patches-res-interp",
                              height=460, **img_kw)
        res_sincos = gr.Image(label="maps of sin-cos recomputed for the new grid (MAE)", elem_id="patches-res-sincos",
                              visible=False, height=460, **img_kw)
    with gr.Row(visible=False) as mae_row:
        res_recon = gr.Image(label="MAE reconstruction at that resolution", elem_id="patches-res-recon", height=360,
                             **img_kw)

    gr.Markdown("### Shuffle the patches")
    gr.Markdown(EXPLAIN_SHUFFLE)
    with gr.Row():
        seed = gr.Number(value=0, precision=0, minimum=0, label="Permutation seed", elem_id="patches-seed",
                         min_width=120, scale=0)
        shuffle_btn = gr.Button("Shuffle again (next seed)", elem_id="patches-shuffle", scale=0)
    with gr.Row():
        before = gr.Image(label="in place (selected patch outlined)", elem_id="patches-before", height=400, **img_kw)
        after = gr.Image(label="shuffled (the same patch, outlined)", elem_id="patches-after", height=400, **img_kw)
    shuffle_text = gr.Markdown(elem_id="patches-shuffle-text")

    grid_in = [image, patch, res, point, on_cls]
    grid_out = [overlay, readout, numbers, overlay_layout, strip, strip_layout, pixels_plot, token_text]
    model_in = [image, model, res, point, on_cls]
    model_out = [row, col, embed_plot, embed_text, note]
    pos_in, pos_out = [model, row, col], [sim_map, mosaic, mosaic_layout]
    res_in, res_out = [image, model, res2], [res_text, res_interp, res_sincos, mae_row, res_recon]
    shuffle_in, shuffle_out = [image, model, seed, row, col], [before, after, shuffle_text]
    quick: dict[str, Any] = dict(api_visibility="private", trigger_mode="always_last", show_progress="minimal")

    def selection_chain(event: Any) -> Any:
        """Everything that follows a new selection (or a new image)."""
        return (event.then(update_grid, grid_in, grid_out, **quick)
                .then(update_model, model_in, model_out, **quick)
                .then(pos_views, pos_in, pos_out, **quick)
                .then(update_shuffle, shuffle_in, shuffle_out, **quick))

    def model_chain(event: Any) -> Any:
        """Everything that depends on the model."""
        return (event.then(pos_views, pos_in, pos_out, **quick)
                .then(update_shuffle, shuffle_in, shuffle_out, **quick)
                .then(update_resolution, res_in, res_out, **quick))

    model_chain(demo.load(update_grid, grid_in, grid_out, api_visibility="private").then(
        update_model, model_in, model_out, **quick))
    model_chain(image.change(update_grid, grid_in, grid_out, **quick).then(update_model, model_in, model_out, **quick))
    model_chain(model.change(update_model, model_in, model_out, **quick))
    for control in (patch, res):
        control.change(update_grid, grid_in, grid_out, **quick).then(update_model, model_in, model_out, **quick)
    selection_chain(overlay.select(click_overlay, [overlay_layout, point], [point, on_cls], api_visibility="private"))
    selection_chain(strip.select(click_strip, [strip_layout, patch, res, point, on_cls], [point, on_cls],
                                 api_visibility="private"))
    selection_chain(mosaic.select(click_mosaic, [mosaic_layout, point], [point, on_cls], api_visibility="private"))
    selection_chain(gr.on([row.submit, col.submit], rowcol_to_point, [model, row, col], [point, on_cls],
                          api_visibility="private"))
    res2.change(update_resolution, res_in, res_out, **quick)
    seed.submit(update_shuffle, shuffle_in, shuffle_out, **quick)
    shuffle_btn.click(next_seed, seed, seed, api_visibility="private", queue=False).then(
        update_shuffle, shuffle_in, shuffle_out, **quick)
    endpoint(patch_grid, [image, patch, res], [overlay, readout, numbers], api_name="patch_grid")
    endpoint(pos_similarity, [model, row, col], [sim_map, mosaic], api_name="pos_similarity")
    return ImageInput(image, examples_box)
