"""The MAE tab: drop an image, move the masking-ratio slider, watch the reconstruction.

Wiring only: every number and image comes from :mod:`vitviz.views.mae` and
:mod:`vitviz.mae`. The mask painting handlers are in :mod:`vitviz.ui.mae_paint`.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np
from PIL import Image

from ..cache import LRU
from ..compute.formulas import mae_flops
from ..core.masking import MAX_RATIO, NESTED_PATTERNS, PATTERNS
from ..mae.reconstruct import prepare
from ..mae.sweep import STOPS, image_key, reconstruct_cached, sweep
from ..models.loading import load_model
from ..models.mae import MAEConfig
from ..models.registry import MAE_TINY_CONFIG
from ..plots.mae import sweep_figure
from ..views import mae as mae_view
from ..views.mae import model_note
from . import mae_live, mae_provenance, scrub, urlstate
from .serve import files
from .common import as_seed, endpoint, example_images, memo_view, quiet_errors, require_image, shown_once, user_errors
from .mae_paint import HELP_PAINT, paint_controls, paint_stroke, painted_controls, start_paint
from .shared_image import ImageInput, default_image
from .serve.costs import Cost, cost, model_cost

TAB_ID, LABEL = "mae", "MAE"
TOUR_TITLE = "Masked autoencoder"
TOUR_TEXT = ("Hide 75% of the patches and the encoder sees only the rest; a decoder, light per token, has to paint "
             "the hidden ones back from context.")
PANEL_HEIGHT = 240
#: The presenter layout's large ratio readout (``vitviz.mae.readout`` in the page module writes the value).
RATIO_READOUT = ('<div class="vitviz-readout"><span class="vitviz-readout-value">75%</span>'
                 '<span class="vitviz-readout-unit">hidden</span></div>')
NO_COMPARE = scrub.NO_COMPARE  # the comparison dropdown's "no comparison" (one home: the page checks it too)

HELP_RATIO = (
    "**Masking ratio**: the share of patches hidden from the encoder. The MAE paper trains at **75%**: images "
    "are so redundant that a lone missing patch can be filled in from its neighbours with little "
    "understanding of the scene. In its sweep, **linear probing** rises steadily with the ratio up to 75%; "
    "**fine-tuning** is less sensitive (ratios from about 40% to 80% work well), and every ratio it tried "
    "still beat training from scratch. Lower ratios reconstruct better without giving better features: the "
    "error in the sweep chart is not what MAE optimises for, and linear probing and fine-tuning can "
    "disagree about a setting. mae-tiny was trained at random ratios around 75% (its model card gives the range). "
    "*(MAE §1, §4.1, fig. 5)*"
)


def nesting_sentence() -> str:
    """Which patterns keep, for one seed, the patches of a lower ratio hidden at a higher one.

    Built from :data:`vitviz.core.masking.NESTED_PATTERNS`, which the tests check pattern by pattern.
    """
    nested = [p for p in PATTERNS if p in NESTED_PATTERNS]
    redrawn = [p for p in PATTERNS if p not in NESTED_PATTERNS]
    text = "With one **seed**, raising the ratio hides more of the same patches"
    if nested:
        text += " for " + " and ".join(f"*{p}*" for p in nested)
        text += " (the same rectangles grow)" if "block" in nested else ""
    if redrawn:
        text += "; " + " and ".join(f"*{p}*" for p in redrawn) + " is redrawn at every ratio"
    return text + "."


HELP_PATTERN = (
    "**Pattern**: *random* hides patches uniformly (MAE's choice); *block* hides rectangles of at least 16 "
    "patches (BEiT's blockwise masking, made for about 40%); *grid* keeps one patch in every k — a true 2×2 "
    "lattice only at 75% (at 50% it keeps every other column). In MAE's ablation at 75%, block masking made the "
    "task *harder* (higher training loss, blurrier reconstructions) and grid made it *easier* (lower training "
    "loss, sharper reconstructions), and both gave worse features than random (fine-tuning / linear probing: "
    "random 84.9 / 73.5, block 82.8 / 63.9, grid 84.0 / 66.0): an easier task is not better features. "
    + nesting_sentence() + " *(MAE §4.1, table 1f, fig. 6; BEiT §2.3)*"
)

HELP_SWEEP = (
    "**Reading the sweep:** the error rises with the ratio, yet MAE trains at 75%. Its goal is the encoder's "
    "*features*, not the reconstruction: in the paper, 75% gave the best linear-probing accuracy (fine-tuning "
    "was good from about 40% to 80%), not the lowest error. *(MAE §4.1, fig. 5)*"
)


def encoder_help(config: MAEConfig = MAE_TINY_CONFIG, name: str = "mae-tiny") -> str:
    """Why the encoder skips hidden patches, with the decoder's computed cost at 75%."""
    f = mae_flops(config, 0.75)
    return (
        "**Why the encoder skips hidden patches**: MAE's encoder runs only on the visible patches (no mask "
        "tokens), so at 75% it processes a quarter of them. The decoder is light *per token* but runs on "
        f"every token, visible ones and mask tokens: for {name} at 75% it costs {f['decoder'] / 1e9:.2f} GFLOPs "
        f"against the encoder's {f['encoder'] / 1e9:.2f} (see Compute). It exists only for pre-training: "
        "afterwards it is thrown away, and fine-tuning and inference run the encoder on all patches. "
        "*(MAE §3, table 1c)*"
    )


HELP_ENCODER = encoder_help()
HELP_VISIBLE = (
    "The raw **reconstruction** redraws the visible patches too. They look worse than the input because the "
    "loss is computed on hidden patches only; **reconstruction + visible** pastes the real pixels back. "
    "The paper's final target is each patch's pixels *normalised by that patch's mean and variance* "
    "(norm_pix_loss), which gives better features (85.4 vs 84.9 fine-tuning); the `-normpix` checkpoints "
    "predict that target, so their raw reconstructions look odd. *(MAE §3, table 1d)*"
)


@cost(model_cost(1))
@user_errors
def run_reconstruct(image: str | None, model_name: str, mask_ratio: float, seed: float, pattern: str
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
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
    return r.original, r.masked, r.reconstruction, r.pasted, mae_view.metrics_markdown(mae_view.metrics(model, r, image))


def _view_cleared(message: str) -> tuple:
    """The view's outputs after a problem: no panels, the message where the numbers were, no comparison
    (the painted mask and the URL's mask code are kept)."""
    return (None, None, None, None, None, f"⚠️ {message}", gr.update(), gr.update(), gr.update(visible=False),
            None, None, None, "")


@cost(model_cost(1))
@shown_once(_view_cleared)
def update_view(image: str | None, model_name: str, mask_ratio: float, seed: float, pattern: str,
                paint: bool, painted: list | None, compare_name: str) -> tuple:
    """Everything on screen for the current controls (private endpoint used by the page)."""
    require_image(image)
    s = as_seed(seed)
    painting = bool(paint and painted is not None)
    model, r = mae_view.result(image, model_name, mask_ratio, s, pattern,
                               np.asarray(painted, dtype=bool) if painting else None)
    p = mae_view.panels(r, painting=painting)
    m = mae_view.metrics(model, r, image)
    out = [p.original, p.masked, p.reconstruction, p.pasted, p.error, mae_view.metrics_markdown(m),
           r.mask.tolist(), urlstate.encode_mask(r.mask) if painting else ""]
    if compare_name and compare_name != NO_COMPARE:
        other, q = mae_view.compare(image, model, r, compare_name)
        pq = mae_view.panels(q, error_vmax=float(r.error_map[r.mask].max()) if r.mask.any() else None)
        out += [gr.update(visible=True), pq.reconstruction, pq.pasted, pq.error,
                mae_view.metrics_markdown(mae_view.metrics(other, q))]
    else:
        out += [gr.update(visible=False), None, None, None, ""]
    return tuple(out)


@cost(Cost.HEAVY)
@user_errors
def run_sweep(image: str | None, model_name: str, seed: float, pattern: str,
              progress: gr.Progress = gr.Progress()) -> tuple:
    """Endpoint ``sweep``: every slider stop in batched passes -> chart, thumbnails, chart data."""
    return _sweep(image, model_name, seed, pattern, progress)


@cost(Cost.HEAVY)
@quiet_errors(lambda: (None, [], None))
def page_sweep(image: str | None, model_name: str, seed: float, pattern: str,
               progress: gr.Progress = gr.Progress()) -> tuple:
    """The page's sweep (beside the view): a problem is shown once, by the view, not a second time."""
    return _sweep(image, model_name, seed, pattern, progress)


def _sweep(image: str | None, model_name: str, seed: float, pattern: str, progress: gr.Progress) -> tuple:
    require_image(image)
    model = load_model(model_name)
    progress(0.0, desc="Reconstructing every slider stop")
    sweep(model, image, as_seed(seed), pattern, STOPS, progress=lambda f: progress(f, desc="Every slider stop"))
    return _sweep_outputs(image, model_name, as_seed(seed), pattern)


@memo_view()
def _sweep_outputs(image: str, model_name: str, seed: int, pattern: str) -> tuple:
    """Chart, thumbnails and chart data of a cached sweep (kept: every visitor's page load asks for them)."""
    model = load_model(model_name)
    s = sweep(model, image, seed, pattern, STOPS)
    data = mae_view.sweep_data(model, s)
    return sweep_figure(data), mae_view.thumbnails(s), data


#: Scrubbing payloads already built: (sweep key, image path) -> payload JSON, most recent last.
_PAYLOADS: LRU[tuple[str, str], str] = LRU(256)


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
    from gradio.processing_utils import save_img_array_to_cache
    from gradio.utils import get_upload_folder

    try:
        require_image(image)
        model = load_model(model_name)
        original = prepare(model, image)  # decoded once, not once per stop
        s = as_seed(seed)
        memo = (image_key(model, original, s, pattern), str(image))
        known = _PAYLOADS.get(memo)
        if known is not None:
            return known
        folder = get_upload_folder()
        stops, complete = [], True
        for ratio in STOPS:
            r, hit = reconstruct_cached(model, original, ratio, s, pattern)
            if not hit:
                complete = False
                continue
            p = mae_view.panels(r)
            files = {kind: save_img_array_to_cache(getattr(p, kind), cache_dir=folder, format="png")
                     for kind in scrub.PANEL_KINDS}
            stops.append(scrub.StopPanels(ratio, files, mae_view.metrics_markdown(mae_view.metrics(model, r, image))))
        key = {"image": image, "model": model_name, "seed": s, "pattern": pattern}
        payload = scrub.build_payload(key, stops, folder) if stops else ""
        if complete:
            _PAYLOADS.put(memo, payload)
        return payload
    except Exception:  # noqa: BLE001 - without a payload the page uses the server path
        return ""


@cost(Cost.HEAVY)
@user_errors
def export(image: str | None, model_name: str, mask_ratio: float, seed: float, pattern: str, paint: bool,
           painted: list | None, compare_name: str) -> tuple[str, str]:
    """Write the panels (one PNG) and the metrics (JSON) to files for download."""
    require_image(image)
    s = as_seed(seed)
    painting = bool(paint and painted is not None)
    model, r = mae_view.result(image, model_name, mask_ratio, s, pattern,
                               np.asarray(painted, dtype=bool) if painting else None)
    items = [mae_view.metrics(model, r, image)]
    q = None
    compared = compare_name if compare_name and compare_name != NO_COMPARE else None
    if compared:
        other, q = mae_view.compare(image, model, r, compared)
        items.append(mae_view.metrics(other, q))
    lines = [mae_view.metrics_text(m) for m in items]
    buffer = io.BytesIO()
    Image.fromarray(mae_view.export_png(r, q, (model_name, compared or ""), metrics=lines,
                                        painting=painting)).save(buffer, format="png")
    controls = {"model": model_name, "compare": compared, "mask_ratio": None if painting else float(mask_ratio),
                "seed": s, "pattern": pattern, "painted": painting}
    record = mae_view.export_json(mae_view.export_record(Path(str(image)).name, controls, r.mask, items))
    # Both files go to Gradio's cleaned cache (deleted after VITVIZ_CACHE_SECONDS), never the temp folder.
    return (files.write_bytes(buffer.getvalue(), "vitviz-mae-panels.png"),
            files.write_text(record, "vitviz-mae-metrics.json"))


@dataclass
class MaeTab:
    """Handles on the tab's components, for the app's URL state and page-load event."""

    model: gr.Dropdown
    ratio: gr.Slider
    seed: gr.Number
    pattern: gr.Radio
    show: dict  # keyword arguments of the event that renders the current view
    sweep: dict  # keyword arguments of the event that fills every slider stop
    prewarm: dict  # keyword arguments of the event that ships every stop's panels to the page (scrubbing)
    paint: gr.Checkbox | None = None
    mask: gr.State | None = None  # the painted mask ((gh, gw) bool as lists)
    image_input: ImageInput | None = None  # the image box, shared with the other tabs
    url: tuple | None = None  # (fields, components, read): what the page's URL sets


def build(demo: gr.Blocks) -> MaeTab:
    """Create the MAE tab's components inside the caller's ``gr.Tab`` context.

    Args:
        demo: the enclosing app (its page load, wired by the app, renders the first view).

    Returns:
        Handles the app uses to apply URL state and render the first view on page load.
    """
    examples = example_images()
    choices = mae_view.model_choices()
    default_model = choices[0][1] if choices else None
    mask_state = gr.State(None)
    examples_box = None
    with gr.Row(elem_id="mae-layout"):
        with gr.Column(scale=1, min_width=300, elem_id="mae-controls"):
            image = gr.Image(value=default_image(), type="filepath", image_mode=None,
                             sources=["upload", "webcam", "clipboard"], label="Your image (drop, paste or webcam)",
                             height=220, elem_id="mae-input")
            if examples:
                with gr.Group(elem_classes=["vitviz-secondary"]):
                    examples_box = gr.Examples(examples=examples, inputs=image, label="Example photos",
                                               elem_id="mae-examples")
            model = gr.Dropdown(choices=choices, value=default_model, label="Model", elem_id="mae-model")
            note = gr.Markdown(model_note(default_model), elem_id="mae-model-note", elem_classes=["vitviz-secondary"])
            with gr.Row():
                seed = gr.Number(value=0, precision=0, step=1, label="Seed", elem_id="mae-seed", min_width=80)
                pattern = gr.Radio(list(PATTERNS), value="random", label="Pattern", elem_id="mae-pattern")
            gr.Markdown(HELP_PATTERN, elem_classes=["vitviz-help"])
            paint = gr.Checkbox(False, label="Paint the mask (click or drag on the Original panel)",
                                elem_id="mae-paint", elem_classes=["vitviz-secondary"])
            gr.Markdown(HELP_PAINT, elem_classes=["vitviz-help"])
            compare = gr.Dropdown(choices=[(NO_COMPARE, NO_COMPARE)] + choices, value=NO_COMPARE,
                                  label="Compare with another model (same image, same mask)", elem_id="mae-compare",
                                  elem_classes=["vitviz-secondary"])
        with gr.Column(scale=3, elem_id="mae-main"):
            # The slider and the four panels a lecturer points at come first: above the fold at 1280x720
            # (the error map too: issue 34); the presenter layout keeps three, larger.
            with gr.Row(elem_id="mae-ratio-row"):
                ratio = gr.Slider(0.0, MAX_RATIO, value=0.75, step=0.05, label="Masking ratio", elem_id="mae-ratio",
                                  scale=6)
                # the presenter layout's large readout of the slider (the page module keeps it current)
                gr.HTML(RATIO_READOUT, elem_id="mae-ratio-readout", padding=False, min_width=150, scale=1)
            kw: dict[str, Any] = dict(type="numpy", format="png", interactive=False, buttons=["download"])
            with gr.Row(equal_height=True, elem_id="mae-panels"):
                original = gr.Image(label="Original (click or drag to paint)", elem_id="panel-original", **kw)
                masked = gr.Image(label="Masked input", elem_id="panel-masked", **kw)
                pasted = gr.Image(label="Reconstruction + visible", elem_id="panel-pasted", **kw)
                error = gr.Image(label="Error of hidden patches (MSE)", elem_id="panel-error", **kw)
            metrics = gr.Markdown(elem_id="mae-metrics")
            with gr.Row(equal_height=True, elem_id="mae-panels-more"):
                recon = gr.Image(label="Reconstruction (raw)", elem_id="panel-reconstruction", **kw)
                with gr.Column(min_width=200, scale=2, elem_classes=["vitviz-help"]):
                    gr.Markdown(HELP_RATIO + "\n\n" + HELP_VISIBLE)
            provenance = mae_provenance.build()  # click a hidden patch of a reconstruction
            live = mae_live.build()  # the webcam, rebuilt frame by frame (a closed accordion)
            with gr.Row(visible=False, equal_height=True) as compare_row:
                c_recon = gr.Image(label="Comparison: reconstruction", elem_id="panel-compare-reconstruction",
                                   height=PANEL_HEIGHT, **kw)
                c_pasted = gr.Image(label="Comparison: + visible", elem_id="panel-compare-pasted", height=PANEL_HEIGHT,
                                    **kw)
                c_error = gr.Image(label="Comparison: error (same scale)", elem_id="panel-compare-error",
                                   height=PANEL_HEIGHT, **kw)
            c_metrics = gr.Markdown(elem_id="mae-compare-metrics")
            gr.Markdown(HELP_ENCODER, elem_classes=["vitviz-help"])
            with gr.Row():
                chart = gr.Plot(label="Ratio sweep", elem_id="mae-sweep-chart")
            gr.Markdown(HELP_SWEEP, elem_classes=["vitviz-help"])
            thumbs = gr.Gallery(label="Reconstructions at 25%, 50%, 75%, 90% (caption: hidden share and MSE)",
                                columns=4, height="auto", object_fit="contain", format="png", elem_id="mae-thumbs",
                                allow_preview=True)
            with gr.Accordion("Sweep data (JSON)", open=False, elem_classes=["vitviz-secondary"]):
                sweep_json = gr.JSON(elem_id="mae-sweep-json")
            with gr.Accordion("Export what the tab shows", open=False, elem_id="mae-export-box",
                              elem_classes=["vitviz-secondary"]):
                export_btn = gr.Button("Export panels and metrics (PNG) and every control (JSON)",
                                       elem_id="mae-export", size="sm")
                with gr.Row():
                    png_file = gr.File(label="Panels PNG", elem_id="mae-export-png")
                    json_file = gr.File(label="Metrics JSON", elem_id="mae-export-json")
    stroke = gr.HTML("", html_template="<span></span>", js_on_load=urlstate.PAINT_JS, elem_id="mae-paint-stroke",
                     padding=False, container=False)
    mask_code = gr.Textbox("", visible="hidden", elem_id="mae-mask-code", show_label=False, container=False)
    scrubber = scrub.build()

    view_inputs = [image, model, ratio, seed, pattern, paint, mask_state, compare]
    view_outputs = [original, masked, recon, pasted, error, metrics, mask_state, mask_code, compare_row, c_recon,
                    c_pasted, c_error, c_metrics]
    sweep_inputs = [image, model, seed, pattern]
    sweep_outputs = [chart, thumbs, sweep_json]
    quick = dict(api_visibility="private", trigger_mode="always_last", show_progress="minimal")
    prewarm = dict(fn=scrub_payload, inputs=sweep_inputs, outputs=scrubber.payload, api_visibility="private",
                   trigger_mode="always_last", show_progress="hidden")

    write_url = dict(fn=None, inputs=[model, ratio, seed, pattern], outputs=None, js=urlstate.WRITE_JS,
                     queue=False, api_visibility="private")
    for control in (model, ratio, seed, pattern):
        control.change(**write_url)
    # The note never waits on a model: it is registry text, answered at once for the last pick. Registered
    # before the view and the sweep: the page runs a trigger's listeners one after the other, in the order
    # they were registered, so after them it waited for the new model to load and sweep (issue 34, bug 3).
    model.change(model_note, model, note, api_visibility="private", queue=False, trigger_mode="always_last")
    # Every control that changes the view is one listener, so Gradio runs its calls in the order the
    # browser made them (always the last one after a burst): an older, slower call can never land after
    # a newer one and leave panels that disagree with the controls. The slider's own moves are decided in
    # the page (vitviz.ui.scrub): a stop the page holds is shown there, any other bumps scrubber.request.
    # After a server view, the page puts back the slider's stop if it holds it (a late answer never wins).
    resync = scrub.wire(scrubber, ratio, [image, model, seed, pattern, paint, compare],
                        [masked, recon, pasted, error], metrics, [image.change, model.change, seed.change, pattern.change])
    gr.on([image.change, model.change, scrubber.request.change, seed.change, pattern.change, compare.change],
          update_view, view_inputs, view_outputs, **quick).then(
        None, resync, [masked, recon, pasted, error, metrics, scrubber.request], js=scrub.RESYNC_JS, queue=False,
        api_visibility="private", show_progress="hidden")
    # A new image, model, seed or pattern also fills every slider stop (beside the view, not after it).
    gr.on([image.change, model.change, seed.change, pattern.change], page_sweep, sweep_inputs, sweep_outputs,
          api_visibility="private", trigger_mode="always_last", show_progress="full").then(**prewarm)
    # Painting: a click or drag on the Original panel (urlstate.PAINT_JS) sends its points; ticking the box
    # starts from the slider stop on screen. While painting, slider, seed and pattern are off and the slider
    # says how much is painted; the URL carries the mask (mask_code, urlstate.MASK_JS).
    # The slider's label follows the painted mask after each stroke or tick, not on every view's new mask
    # (a round trip that changed nothing while not painting: every page load and server view made one).
    relabel = dict(fn=painted_controls, inputs=[paint, mask_state], outputs=[ratio, seed, pattern],
                   api_visibility="private", queue=False)
    for painted in (stroke.change(paint_stroke, [stroke, mask_state, image, model, ratio, seed, pattern, paint],
                                  [mask_state, paint], api_visibility="private"),
                    paint.input(start_paint, [paint, mask_state, image, model, ratio, seed, pattern], mask_state,
                                api_visibility="private")):
        painted.then(update_view, view_inputs, view_outputs, **quick)
        painted.then(**relabel)
    paint.change(paint_controls, [paint, mask_state], [ratio, seed, pattern], api_visibility="private", queue=False)
    mask_code.change(None, [mask_code], None, js=urlstate.MASK_JS, queue=False, api_visibility="private")
    export_btn.click(export, view_inputs, [png_file, json_file], api_visibility="private")
    endpoint(run_reconstruct, [image, model, ratio, seed, pattern], [original, masked, recon, pasted, metrics],
             api_name="reconstruct")
    endpoint(run_sweep, sweep_inputs, sweep_outputs, api_name="sweep")
    mae_provenance.wire(provenance, [image, model, ratio, seed, pattern, paint, mask_state], metrics)
    mae_live.wire(live, model, ratio, seed, pattern, paint, mask_state)
    return MaeTab(model, ratio, seed, pattern,
                  show=dict(fn=update_view, inputs=view_inputs, outputs=view_outputs, api_visibility="private",
                            show_progress="minimal"),
                  sweep=dict(fn=page_sweep, inputs=sweep_inputs, outputs=sweep_outputs, api_visibility="private",
                             show_progress="full"),
                  prewarm=prewarm, paint=paint, mask=mask_state, image_input=ImageInput(image, examples_box),
                  url=(("model", "ratio", "seed", "pattern", "paint", "mask"),
                       [model, ratio, seed, pattern, paint, mask_state], url_controls))


def url_controls(state: Any) -> dict[str, Any]:
    """The controls the URL sets: model, ratio, seed, pattern, and a painted mask (paint mode on)."""
    found = {"model": state.model, "ratio": state.ratio, "seed": state.seed, "pattern": state.pattern}
    if state.mask is not None:
        found.update(paint=True, mask=state.mask.tolist())
    return {k: v for k, v in found.items() if v is not None}
