"""The Patches tab: how an image becomes a sequence of tokens.

Every number and image comes from :mod:`vitviz.views.patches`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import numpy as np

from ..core.patches import grid_view
from ..models.costs import Cost, model_cost
from ..render.patches import MosaicLayout, OverlayLayout, StripLayout, patch_grid_overlay
from ..views import patches as pv
from ..views.common import trained_default
from ..views.patches import (DEFAULT_POINT, PATCH_SIZES, EmbeddingViews, GridViews, PosViews, Selection,
                             ShuffleViews, readout_markdown, readouts)
from . import helptext
from .binder import Binder
from .common import as_seed, handler, help_text, memo_view, panel, require_image, section, shown_if, user_errors
from .shared_image import image_box

TAB_ID, LABEL = "patches", "Patches"
DEFAULT_MODEL = "mae-tiny"
DEFAULT_PATCH = 16
DEFAULT_RESOLUTION = 224
RES_MIN, RES_MAX = 112, 448


@dataclass(frozen=True)
class Grid:
    """Endpoint ``patch_grid``'s answer: the overlay, the readout (Markdown), the numbers (JSON)."""

    overlay: np.ndarray
    readout: str
    numbers: dict


@dataclass(frozen=True)
class Similarity:
    """Endpoint ``pos_similarity``'s answer: that patch's map, the full grid of maps."""

    sim_map: np.ndarray
    mosaic: np.ndarray


@dataclass(frozen=True)
class Resolution:
    """The model at another resolution: words, interpolated maps and, for an MAE, recomputed maps and
    reconstructions (shown only then)."""

    res_text: str
    res_interp: np.ndarray
    res_sincos: Any
    mae_row: Any
    res_recon: Any


@handler(Cost.VIEW)
def patch_grid(image: str | None, patch_size: float, resolution: float) -> Grid:
    """Endpoint ``patch_grid``: (image, patch size, resolution) -> overlay, readout (Markdown), numbers (JSON)."""
    require_image(image)
    g, resized, _ = grid_view(image, int(patch_size), int(resolution))
    overlay, _ = patch_grid_overlay(g, resized)
    return Grid(overlay, readout_markdown(g), readouts(g))


@handler(Cost.VIEW)
@memo_view()
def update_grid(image: str | None, patch_size: float, resolution: float, point: Any, on_cls: bool) -> GridViews:
    """Grid, readouts, token strip and the selected patch's pixels (private)."""
    return pv.grid_views(image, patch_size, resolution, point, on_cls)


@handler(model_cost(1))
@memo_view()
def update_model(image: str | None, model_key: str, resolution: float, point: Any, on_cls: bool
                 ) -> EmbeddingViews:
    """Row/column of the selected patch in the model's grid, its embedding E·x, the model note (private)."""
    return pv.embedding_views(image, model_key, resolution, point, on_cls)


@handler(model_cost(0))
def pos_similarity(model_key: str, row: float, col: float) -> Similarity:
    """Endpoint ``pos_similarity``: (model, row, column) -> that patch's map, the full grid of maps."""
    v = pv.pos_views(model_key, row, col)
    return Similarity(v.sim_map, v.mosaic)


@handler(model_cost(0))
def pos_views(model_key: str, row: float, col: float) -> PosViews:
    """Like :func:`pos_similarity`, plus the mosaic's layout for clicks (private)."""
    return pv.pos_views(model_key, row, col)


@handler(model_cost(1))
@memo_view()
def update_resolution(image: str | None, model_key: str, res2: float) -> Resolution:
    """The model at another resolution: interpolated maps and, for an MAE, reconstructions (private)."""
    text, interp, recomputed, recon = pv.resolution_views(image, model_key, res2)
    return Resolution(text, interp, shown_if(recomputed), gr.update(visible=recomputed is not None), recon)


@handler(model_cost(1))
@memo_view()
def update_shuffle(image: str | None, model_key: str, seed: float, row: float, col: float) -> ShuffleViews:
    """The shuffle demonstration for the selected patch (private)."""
    return pv.shuffle_views(image, model_key, seed, row, col)


@user_errors
def next_seed(seed: float | None) -> int:
    """The next permutation seed."""
    return 0 if seed is None else as_seed(seed) + 1


@handler(Cost.VIEW)
def click_overlay(evt: gr.SelectData, overlay_layout: OverlayLayout | None, point: Any) -> Selection:
    """A click on the grid selects the patch under it (clicks on the cropped bands are ignored)."""
    return pv.click_overlay(overlay_layout, float(evt.index[0]), float(evt.index[1]), point)


@handler(Cost.VIEW)
def click_strip(evt: gr.SelectData, strip_layout: StripLayout | None, patch_size: float, resolution: float,
                point: Any, on_cls: bool) -> Selection:
    """A click on the token strip selects that token ([CLS] or a patch)."""
    return pv.click_strip(strip_layout, float(evt.index[0]), float(evt.index[1]), patch_size, resolution, point,
                          on_cls)


@handler(Cost.VIEW)
def click_mosaic(evt: gr.SelectData, mosaic_layout: MosaicLayout | None, point: Any) -> Selection:
    """A click on a tile of the map of maps selects that tile's patch."""
    return pv.click_mosaic(mosaic_layout, float(evt.index[0]), float(evt.index[1]), point)


@handler(model_cost(0))
def rowcol_to_point(model_key: str, row: float, col: float) -> Selection:
    """Typed row/column (in the model's grid) -> the selected point."""
    return pv.rowcol_to_point(model_key, row, col)


def build(demo: gr.Blocks) -> Binder:
    """Create the Patches tab's components inside the caller's ``gr.Tab`` context."""
    ui = Binder()
    choices = pv.model_choices()
    default_model = trained_default(choices, DEFAULT_MODEL)
    ui.point, ui.on_cls = gr.State(list(DEFAULT_POINT)), gr.State(False)
    ui.overlay_layout, ui.strip_layout, ui.mosaic_layout = gr.State(None), gr.State(None), gr.State(None)

    help_text(helptext.read(TAB_ID, "intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            image_box(ui, TAB_ID, "patches", label="Your image", height=240,
                                              examples_id="patches-examples")
            ui.patch_size = gr.Radio(list(PATCH_SIZES), value=DEFAULT_PATCH, label="Patch size P (px)",
                                     elem_id="patches-size")
            ui.resolution = gr.Slider(RES_MIN, RES_MAX, value=DEFAULT_RESOLUTION, step=8,
                                      label="Input resolution (px)", elem_id="patches-resolution")
            gr.Markdown(helptext.read(TAB_ID, "policy"))
        with gr.Column(scale=2):
            ui.overlay = panel("The patch grid (click a patch)", "patches-overlay", height=460)
            ui.readout = gr.Markdown(elem_id="patches-readout")
            with gr.Accordion("Numbers (JSON)", open=False):
                ui.numbers = gr.JSON(elem_id="patches-numbers")

    section("### The token sequence", helptext.read(TAB_ID, "strip"))
    ui.strip = panel("Tokens in order: [CLS], p1 … pN (click a token)", "patches-strip")
    ui.token_text = gr.Markdown(elem_id="patches-token-text")
    with gr.Row():
        ui.model_key = gr.Dropdown(choices=choices, value=default_model, label="Model (for E, positions, shuffle)",
                                   elem_id="patches-model", scale=2)
        ui.row = gr.Number(value=4, precision=0, minimum=0, label="row (model grid)", elem_id="patches-row",
                           scale=0, min_width=110)
        ui.col = gr.Number(value=9, precision=0, minimum=0, label="column (model grid)", elem_id="patches-col",
                           scale=0, min_width=110)
    ui.note = gr.Markdown(elem_id="patches-model-note")
    with gr.Row(equal_height=True):
        ui.pixels_plot = gr.Plot(label="flattened pixel vector", elem_id="patches-pixels")
        ui.embed_plot = gr.Plot(label="embedding E·x + b", elem_id="patches-embedding")
    ui.embed_text = gr.Markdown(elem_id="patches-embedding-text")

    section("### Position embeddings", helptext.read(TAB_ID, "pos"))
    with gr.Row():
        ui.sim_map = panel("cosine similarity of the selected patch's position with all others", "patches-sim-map",
                           scale=1)
        ui.mosaic = panel("every patch's map, at its place (click a tile)", "patches-sim-grid", scale=2)

    section("### Another resolution", helptext.read(TAB_ID, "res"))
    ui.res2 = gr.Slider(RES_MIN, RES_MAX, value=320, step=16, label="Run the model at (px)",
                        elem_id="patches-model-resolution")
    ui.res_text = gr.Markdown(elem_id="patches-res-text")
    with gr.Row():
        ui.res_interp = panel("maps after bicubic interpolation (timm)", "patches-res-interp", height=460)
        ui.res_sincos = panel("maps of sin-cos recomputed for the new grid (MAE)", "patches-res-sincos",
                              visible=False, height=460)
    with gr.Row(visible=False) as ui.mae_row:
        ui.res_recon = panel("MAE reconstruction at that resolution", "patches-res-recon", height=360)

    section("### Shuffle the patches", helptext.read(TAB_ID, "shuffle"))
    with gr.Row():
        ui.seed = gr.Number(value=0, precision=0, minimum=0, label="Permutation seed", elem_id="patches-seed",
                            min_width=120, scale=0)
        shuffle_btn = gr.Button("Shuffle again (next seed)", elem_id="patches-shuffle", scale=0)
    with gr.Row():
        ui.before = panel("in place (selected patch outlined)", "patches-before", height=400)
        ui.after = panel("shuffled (the same patch, outlined)", "patches-after", height=400)
    ui.shuffle_text = gr.Markdown(elem_id="patches-shuffle-text")

    grid, model, pos, res, shuffle = (ui.bind(f) for f in (update_grid, update_model, pos_views, update_resolution,
                                                             update_shuffle))

    def selection_chain(event: Any) -> Any:
        """Everything that follows a new selection (or a new image)."""
        return event.then(**grid).then(**model).then(**pos).then(**shuffle)

    def model_chain(event: Any) -> Any:
        """Everything that depends on the model."""
        return event.then(**pos).then(**shuffle).then(**res)

    model_chain(demo.load(**ui.bind(update_grid, quick=False)).then(**model))
    model_chain(ui.new_image.change(**grid).then(**model))
    model_chain(ui.model_key.change(**model))
    gr.on([ui.patch_size.change, ui.resolution.change], **grid).then(**model)
    selection_chain(ui.overlay.select(**ui.bind(click_overlay, quick=False)))
    selection_chain(ui.strip.select(**ui.bind(click_strip, quick=False)))
    selection_chain(ui.mosaic.select(**ui.bind(click_mosaic, quick=False)))
    selection_chain(gr.on([ui.row.submit, ui.col.submit], **ui.bind(rowcol_to_point, quick=False)))
    ui.res2.change(**res)
    ui.seed.submit(**shuffle)
    shuffle_btn.click(**ui.bind(next_seed, outputs="seed", quick=False, queue=False)).then(**shuffle)
    ui.endpoint(patch_grid, api_name="patch_grid")
    ui.endpoint(pos_similarity, api_name="pos_similarity")
    return ui
