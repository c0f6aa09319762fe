"""The MAE tab: drop an image, move the masking-ratio slider, watch the reconstruction.

Every number and image comes from :mod:`vitviz.views.mae`. Painting the mask is :mod:`vitviz.ui.mae_paint`,
a clicked hidden patch :mod:`vitviz.ui.mae_provenance`, the slider's stops held in the page
:mod:`vitviz.ui.scrub`, the webcam :mod:`vitviz.ui.mae_live`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import plotly.graph_objects as go

from ..cache import LRU
from ..core.masking import MAX_RATIO, PATTERNS
from ..models.costs import Cost, cost, model_cost
from ..views import mae as mae_view
from ..views import mae_paint as mp
from ..views.mae import NO_COMPARE, compared, model_note, url_controls
from ..views.mae_scrub import PANEL_KINDS, StopPanels
from ..views.urlstate import encode_mask
from . import helptext, js, mae_doctor, mae_live, mae_paint, mae_provenance, scrub, urlstate
from .binder import Binder
from .common import (as_seed, handler, help_text, in_page, memo_view, picture, quiet_errors, require_image,
                     shown_once, signal)
from .serve import files, image_cache
from .shared_image import image_box

TAB_ID, LABEL = "mae", "MAE"
PANEL_HEIGHT = 240
#: The presenter layout's large ratio readout (``vitviz.mae.readout`` in the page module writes the value).
RATIO_READOUT = ('<div class="vitviz-readout"><span class="vitviz-readout-value">75%</span>'
                 '<span class="vitviz-readout-unit">hidden</span></div>')
#: Which path computes the panels; ``vitviz.inpage`` (page module) rewrites it once mae-tiny runs in the page.
PATH_LINE = '<span id="mae-path" data-path="server">Computed on the server.</span>'
#: The model's or the comparison's change: the path line follows it (in the page, no server call).
PATH_JS = js.read("mae_inpage_path", no_compare=NO_COMPARE)


@dataclass(frozen=True)
class Controls:
    """What the tab's view depends on (each field named as its component)."""

    image: str | None
    model_name: str
    mask_ratio: float
    seed: float
    pattern: str
    paint: bool
    painted: list | None  # the painted mask ((gh, gw) bool as lists)
    compare_name: str


@dataclass(frozen=True)
class Panels:
    """Endpoint ``reconstruct``'s answer: the model's view, the masked input, the reconstruction, the
    reconstruction with the visible pixels pasted back (uint8 RGB), and the metrics (Markdown)."""

    original: Any
    masked: Any
    reconstruction: Any
    pasted: Any
    metrics: str


@dataclass(frozen=True)
class View(Panels):
    """Everything on screen for the controls: :class:`Panels`, the error map, the mask shown (and its URL
    code while painting), the comparison with another model, and the model's own view of the photo
    (uint8 RGB at its input size, no grid: the hidden input of the computation in the page)."""

    error: Any
    painted: Any
    mask_code: Any
    compare_row: Any
    c_reconstruction: Any
    c_pasted: Any
    c_error: Any
    c_metrics: str
    model_view: Any


@dataclass(frozen=True)
class Sweep:
    """Endpoint ``sweep``'s answer: the chart, the thumbnails, the chart's data."""

    chart: go.Figure | None
    thumbs: list
    sweep_json: dict | None


@dataclass(frozen=True)
class Export:
    png_file: str
    json_file: str


@handler(model_cost(1))
def run_reconstruct(image: str | None, model_name: str, mask_ratio: float, seed: float, pattern: str) -> Panels:
    """Endpoint ``reconstruct``: hide patches of an image and let a Masked Autoencoder rebuild them.

    Args:
        image: the photo (a file path or URL; JPEG, PNG or WebP).
        model_name: an MAE model name, e.g. ``mae-tiny`` (the embedded one) or one of the starter's own
            checkpoints (``--model NAME=PATH``).
        mask_ratio: share of patches hidden from the encoder, 0 to 0.95.
        seed: seed of the random mask (the same seed gives the same mask; masks nest as the ratio rises).
        pattern: ``random``, ``block`` or ``grid``.

    Returns:
        The model's view of the image, the masked input (hidden patches grey), the reconstruction, the
        reconstruction with the visible pixels pasted back (all uint8 RGB), and the metrics as Markdown
        (hidden-patch MSE and PSNR, tokens encoded).
    """
    require_image(image)
    model, r = mae_view.result(image, model_name, mask_ratio, as_seed(seed), pattern, None)
    return Panels(r.original, r.masked, r.reconstruction, r.pasted,
                  mae_view.metrics_markdown(mae_view.metrics(model, r, image)))


def _no_comparison() -> tuple:
    """The comparison's outputs of :class:`View` while none is asked for: its row hidden, its panels empty."""
    return gr.update(visible=False), None, None, None, ""


def _view_cleared(message: str) -> View:
    """The view after a problem: no panels, the message where the numbers were, no comparison (the painted
    mask and the URL's mask code are kept)."""
    return View(None, None, None, None, f"⚠️ {message}", None, gr.update(), gr.update(), *_no_comparison(),
                gr.update())


@cost(model_cost(1))
@shown_once(_view_cleared)
def update_view(c: Controls) -> View:
    """Everything on screen for the current controls (private endpoint used by the page)."""
    require_image(c.image)
    painted = mp.painted_mask(c.paint, c.painted)
    model, r = mae_view.result(c.image, c.model_name, c.mask_ratio, as_seed(c.seed), c.pattern, painted)
    p = mae_view.panels(r, painting=painted is not None)
    metrics = mae_view.metrics_markdown(mae_view.metrics(model, r, c.image))
    code = encode_mask(r.mask) if painted is not None else ""
    other_name = compared(c.compare_name, c.model_name)
    comparison = _no_comparison()
    if other_name is not None:
        other, q = mae_view.compare(c.image, model, r, other_name)
        pq = mae_view.panels(q, error_vmax=float(r.error_map[r.mask].max()) if r.mask.any() else None)
        comparison = (gr.update(visible=True), pq.reconstruction, pq.pasted, pq.error,
                      mae_view.metrics_markdown(mae_view.metrics(other, q)))
    return View(p.original, p.masked, p.reconstruction, p.pasted, metrics, p.error, r.mask.tolist(), code, *comparison,
                r.original)


@handler(Cost.HEAVY)
def run_sweep(image: str | None, model_name: str, seed: float, pattern: str,
              progress: gr.Progress = gr.Progress()) -> Sweep:
    """Endpoint ``sweep``: every slider stop in batched passes -> chart, thumbnails, chart data."""
    return _sweep(image, model_name, seed, pattern, progress)


@cost(Cost.HEAVY)
@quiet_errors(lambda: Sweep(None, [], None))
def page_sweep(image: str | None, model_name: str, seed: float, pattern: str,
               progress: gr.Progress = gr.Progress()) -> Sweep:
    """The page's sweep (beside the view): a problem is shown once, by the view, not a second time."""
    return _sweep(image, model_name, seed, pattern, progress)


def _sweep(image: str | None, model_name: str, seed: float, pattern: str, progress: gr.Progress) -> Sweep:
    require_image(image)
    progress(0.0, desc="Reconstructing every slider stop")
    mae_view.sweep_stops(image, model_name, as_seed(seed), pattern,
                         progress=lambda f: progress(f, desc="Every slider stop"))
    return _sweep_outputs(image, model_name, as_seed(seed), pattern)


@memo_view()
def _sweep_outputs(image: str, model_name: str, seed: int, pattern: str) -> Sweep:
    """Chart, thumbnails and chart data of a cached sweep (kept: every visitor's page load asks for them)."""
    return Sweep(*mae_view.sweep_outputs(image, model_name, seed, pattern))


#: Scrubbing payloads already built: (sweep key, image path) -> payload JSON, most recent last.
_PAYLOADS: LRU[tuple, str] = LRU(256)


@cost(Cost.HEAVY)
def scrub_payload(image: str | None, model_name: str, seed: float, pattern: str) -> str:
    """Every cached slider stop's panels, shipped once to the page (private, after a sweep).

    Encodes the panels of each stop the sweep filled into Gradio's image cache (the content
    memo of :mod:`vitviz.ui.serve.image_cache` then serves a later server view of that stop
    without encoding it again) and packs them for the browser
    (:func:`vitviz.ui.scrub.build_payload`): the slider then moves through those stops with
    no server call. A payload already built is reused (the next visitor on the same
    example). Any failure gives an empty payload, and the page keeps using the server.
    """
    try:
        require_image(image)
        s = as_seed(seed)
        key, original = mae_view.sweep_key(image, model_name, s, pattern)
        memo = (key, str(image))
        known = _PAYLOADS.get(memo)
        if known is not None:
            return known
        stops, complete = mae_view.cached_stops(image, model_name, s, pattern, original)
        folder = str(files.cache_folder())
        shipped = [StopPanels(stop.ratio, {kind: image_cache.save_array(getattr(stop.panels, kind), folder)
                                                 for kind in PANEL_KINDS}, stop.metrics) for stop in stops]
        payload = scrub.build_payload({"image": image, "model": model_name, "seed": s, "pattern": pattern}, shipped,
                                      folder) if shipped else ""
        if complete:
            _PAYLOADS.put(memo, payload)
        return payload
    except Exception:  # noqa: BLE001 - without a payload the page uses the server path
        return ""


@handler(Cost.HEAVY)
def export(c: Controls) -> Export:
    """Write the panels (one PNG) and the metrics (JSON) to files for download."""
    require_image(c.image)
    png, record = mae_view.export_files(c.image, c.model_name, c.mask_ratio, as_seed(c.seed), c.pattern,
                                        mp.painted_mask(c.paint, c.painted),
                                        compared(c.compare_name, c.model_name))
    # Both files go to Gradio's cleaned cache (deleted after VITVIZ_CACHE_SECONDS), never the temp folder.
    return Export(files.write_bytes(png, "vitviz-mae-panels.png"), files.write_text(record, "vitviz-mae-metrics.json"))


def build(demo: gr.Blocks) -> Binder:
    """Create the MAE tab's components inside the caller's ``gr.Tab`` context."""
    ui = Binder()
    choices = mae_view.model_choices()
    default_model = choices[0][1] if choices else None
    with gr.Row(elem_id="mae-layout"):
        with gr.Column(scale=1, min_width=300, elem_id="mae-controls"):
            image_box(ui, TAB_ID, "mae", height=220, image_mode=None, examples_id="mae-examples",
                                              examples_class="vitviz-secondary")
            ui.model_name = gr.Dropdown(choices=choices, value=default_model, label="Model", elem_id="mae-model")
            ui.note = gr.Markdown(model_note(default_model), elem_id="mae-model-note",
                                  elem_classes=["vitviz-secondary"])
            with gr.Row():
                ui.seed = gr.Number(value=0, precision=0, step=1, label="Seed", elem_id="mae-seed", min_width=80)
                ui.pattern = gr.Radio(list(PATTERNS), value="random", label="Pattern", elem_id="mae-pattern")
            help_text(helptext.read(TAB_ID, "pattern", nesting=mae_view.nesting_sentence()))
            ui.paint = gr.Checkbox(False, label="Paint the mask (click or drag on the Original panel)",
                                   elem_id="mae-paint", elem_classes=["vitviz-secondary"])
            help_text(helptext.read(TAB_ID, "paint"))
            others, none_here = mae_view.compare_choices()
            ui.compare_name = gr.Dropdown(choices=[(NO_COMPARE, NO_COMPARE)] + others, value=NO_COMPARE,
                                          label="Compare with another model (same image, same mask)",
                                          info=none_here or None, interactive=not none_here,
                                          elem_id="mae-compare", elem_classes=["vitviz-secondary"])
        with gr.Column(scale=3, elem_id="mae-main"):
            # The slider and the four panels a lecturer points at come first: above the fold at 1280x720
            # (the error map too); the presenter layout keeps three, larger.
            with gr.Row(elem_id="mae-ratio-row"):
                ui.mask_ratio = gr.Slider(0.0, MAX_RATIO, value=0.75, step=0.05, label="Masking ratio",
                                          elem_id="mae-ratio", scale=6)
                # the presenter layout's large readout of the slider (the page module keeps it current)
                gr.HTML(RATIO_READOUT, elem_id="mae-ratio-readout", padding=False, min_width=150, scale=1)
            with gr.Row(equal_height=True, elem_id="mae-panels"):
                ui.original = picture("Original (click or drag to paint)", "panel-original")
                ui.masked = picture("Masked input", "panel-masked")
                ui.pasted = picture("Reconstruction + visible", "panel-pasted")
                ui.error = picture("Error of hidden patches (MSE)", "panel-error")
            ui.metrics = gr.Markdown(elem_id="mae-metrics")
            gr.HTML(PATH_LINE, elem_id="mae-path-line", padding=False, elem_classes=["vitviz-secondary"])
            ui.model_view = gr.Image(type="numpy", format="png", interactive=False, visible="hidden",
                                     elem_id="mae-model-view", show_label=False)
            # The second model right under the main panels, in their columns (its + visible under the main
            # one's, error under error, on one scale): compared at a glance; its numbers take the first column.
            with gr.Row(visible=False, equal_height=True, elem_id="mae-compare-row") as ui.compare_row:
                ui.c_metrics = gr.Markdown(elem_id="mae-compare-metrics")
                ui.c_reconstruction = picture("Comparison: reconstruction", "panel-compare-reconstruction",
                                              height=PANEL_HEIGHT)
                ui.c_pasted = picture("Comparison: + visible", "panel-compare-pasted", height=PANEL_HEIGHT)
                ui.c_error = picture("Comparison: error (same scale)", "panel-compare-error", height=PANEL_HEIGHT)
            with gr.Row(equal_height=True, elem_id="mae-panels-more"):
                ui.reconstruction = picture("Reconstruction (raw)", "panel-reconstruction")
                with gr.Column(min_width=200, scale=2, elem_classes=["vitviz-help"]):
                    gr.Markdown(helptext.read(TAB_ID, "ratio") + "\n\n" + helptext.read(TAB_ID, "visible"))
            mae_provenance.build(ui)  # click a hidden patch of a reconstruction
            mae_doctor.build(ui)  # the checkpoint doctor (a closed accordion)
            mae_live.build(ui)  # the webcam, rebuilt frame by frame (a closed accordion)
            help_text(mae_view.encoder_help())
            with gr.Row():
                ui.chart = gr.Plot(label="Ratio sweep", elem_id="mae-sweep-chart")
            help_text(helptext.read(TAB_ID, "sweep"))
            ui.thumbs = gr.Gallery(label="Reconstructions at 25%, 50%, 75%, 90% (caption: hidden share and MSE)",
                                   columns=4, height="auto", object_fit="contain", format="png",
                                   elem_id="mae-thumbs", allow_preview=True)
            with gr.Accordion("Sweep data (JSON)", open=False, elem_classes=["vitviz-secondary"]):
                ui.sweep_json = gr.JSON(elem_id="mae-sweep-json")
            with gr.Accordion("Export what the tab shows", open=False, elem_id="mae-export-box",
                              elem_classes=["vitviz-secondary"]):
                export_btn = gr.Button("Export panels and metrics (PNG) and every control (JSON)",
                                       elem_id="mae-export", size="sm")
                with gr.Row():
                    ui.png_file = gr.File(label="Panels PNG", elem_id="mae-export-png")
                    ui.json_file = gr.File(label="Metrics JSON", elem_id="mae-export-json")
    ui.stroke = signal(urlstate.PAINT_JS, "mae-paint-stroke", container=False)
    ui.mask_code = gr.Textbox("", visible="hidden", elem_id="mae-mask-code", show_label=False, container=False)
    # The mask on screen ((gh, gw) booleans) and the page's request for the server's painting
    # (vitviz.ui.mae_paint): components, not session state, since the page writes them when it paints itself.
    ui.painted = gr.JSON(None, visible="hidden", elem_id="mae-painted", show_label=False)
    ui.painted_request = gr.Textbox("", visible="hidden", elem_id="mae-paint-request", show_label=False,
                                    container=False)
    scrub.build(ui)

    view = ui.bind(update_view)
    sweep = dict(ui.bind(page_sweep, quick=False), trigger_mode="always_last", show_progress="full")
    prewarm = ui.bind(scrub_payload, outputs="payload", show_progress="hidden")
    controls = [ui.model_name, ui.mask_ratio, ui.seed, ui.pattern]
    in_page([c.change for c in controls], controls, urlstate.WRITE_JS)
    # The note never waits on a model: it is registry text, answered at once for the last pick. Registered
    # before the view and the sweep: the page runs a trigger's listeners one after the other, in the order
    # they were registered, so after them the note would wait for the new model to load and sweep.
    ui.model_name.change(**ui.bind(model_note, inputs=["model_name"], outputs="note", quick=False, queue=False,
                                   trigger_mode="always_last"))
    # Every control that changes the view is one listener, so Gradio runs its calls in the order the
    # browser made them (always the last one after a burst): an older, slower call can never land after
    # a newer one and leave panels that disagree with the controls. Moves of the slider, the seed and the
    # pattern are decided in the page first (vitviz.ui.scrub says how); what needs the server bumps
    # ui.scrub_request (and ui.scrub_sweep), and after a server view the page puts back its own stop.
    new_picture = [ui.new_image.change, ui.model_name.change, ui.seed.change, ui.pattern.change]
    served = [ui.new_image.change, ui.model_name.change]
    panels = [ui.masked, ui.reconstruction, ui.pasted, ui.error]
    resync = scrub.wire(ui, panels, new_picture)
    gr.on(served + [ui.scrub_request.change, ui.compare_name.change], **view).then(
        None, resync, panels + [ui.metrics, ui.scrub_request], js=scrub.RESYNC_JS, queue=False,
        api_visibility="private", show_progress="hidden")
    # A new image, model, seed or pattern also fills every slider stop (beside the view, not after it).
    gr.on(served + [ui.scrub_sweep.change], **sweep).then(**prewarm)
    in_page([ui.model_name.change, ui.compare_name.change], [ui.model_name, ui.compare_name], PATH_JS)
    mae_paint.wire(ui, view)
    in_page(ui.mask_code.change, [ui.mask_code], urlstate.MASK_JS)
    export_btn.click(**ui.bind(export, quick=False))
    ui.endpoint(run_reconstruct, api_name="reconstruct")
    ui.endpoint(run_sweep, api_name="sweep")
    mae_provenance.wire(ui)
    mae_doctor.wire(ui)
    mae_live.wire(ui)
    demo.load(**ui.bind(update_view, quick=False, show_progress="minimal")).then(
        **ui.bind(page_sweep, quick=False)).then(**prewarm)
    ui.follow_url(("model_name", "mask_ratio", "seed", "pattern", "paint", "painted"), url_controls)
    return ui
