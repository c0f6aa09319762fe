"""The MAE tab's live section: the webcam's picture rebuilt by the masked autoencoder, frame by frame.

Wiring only: each frame is :func:`vitviz.views.live.live_frame` at the tab's own model, ratio,
seed and pattern (and its painted mask while painting), read from the controls with every frame,
so the slider acts on the next frame. Gradio's streaming webcam input (6.31:
``gr.Image(sources=["webcam"], streaming=True)`` and ``.stream(stream_every=..., time_limit=...)``)
sends a frame every :data:`STREAM_EVERY` seconds; the server keeps only the newest frame that
arrived while it computed (Gradio's stream keeps one pending chunk per event and overwrites it), so
frames are dropped, never queued, and the picture stays live. Stopping the camera closes the
stream and the server's loop ends with it.

The stream is its own cost class (:attr:`~vitviz.ui.serve.costs.Cost.LIVE`): its own slots
(``VITVIZ_LIVE_STREAMS``), one stream per session, a time limit on a public host
(``VITVIZ_LIVE_SECONDS``), and a frame gives way to any other session's request, and for a second after one
(:func:`vitviz.ui.serve.limits.others_busy`).

The page shows frames per second and frame-to-panel latency (:file:`js/page.js`, part ``live``):
the page stamps each frame it sends with its own clock, the server echoes the stamp of the frame
it computed, and the page measures until the reconstruction panel has loaded.
"""

from __future__ import annotations

import itertools
import re
import time
from dataclasses import dataclass
from typing import Any

import gradio as gr
import numpy as np

from .. import settings
from ..views import live
from ..views.common import as_seed
from . import js
from .common import report
from .serve.costs import Cost, cost
from .serve.limits import LIVE, others_busy

#: Seconds between the frames the page sends (at most 20 a second; the server computes the newest).
STREAM_EVERY = 0.05
#: The camera picture asked for: small frames (about 30 KB each as JPEG) cross the network fast and the
#: model sees a 224-pixel square of them anyway.
CONSTRAINTS = {"video": {"width": {"ideal": 320}, "height": {"ideal": 240}}}
#: Placeholder value of the stamp box, replaced by the page with its clock in every frame it sends.
STAMP = js.LIVE_STAMP
#: Panel height of the live section.
HEIGHT = 240

HELP_LIVE = (
    "**Live camera**: click the camera's button to start; every frame is masked and rebuilt by the model above at "
    "the current **ratio**, **seed** and **pattern** (move them while it runs). The mask stays put while the "
    "picture moves, so you can point at one hidden patch; tick *New mask every frame* to redraw it. While "
    "*Paint the mask* is ticked, the painted mask is used. The server computes only the newest frame and drops "
    "the ones that arrive meanwhile, so the picture never falls behind; the line under the panels says how many "
    "frames a second reach the page and how long from a frame leaving the page to its reconstruction showing."
)
#: Seconds a frame that gives way waits before its answer (the stream's own slot; nothing else waits).
PAUSE_S = 0.25
PAUSED = ("⏸ Other requests (yours or other visitors') are computed first: frames are dropped until they "
          "finish.")

#: Numbers the frames (a new mask every frame draws its seed from it).
FRAMES = itertools.count()
#: Frames this process has reconstructed (the tests read it to see that a stopped stream stops the work).
_computed = [0]


def frames_computed() -> int:
    """How many live frames this process has reconstructed so far."""
    return _computed[0]


@dataclass
class LiveBox:
    """Handles on the live section's components."""

    camera: gr.Image
    fresh: gr.Checkbox
    masked: gr.Image
    pasted: gr.Image
    line: gr.Markdown
    echo: gr.Textbox
    stamp: gr.Textbox


def build() -> LiveBox:
    """Create the live section (a closed accordion) in the caller's layout context."""
    with gr.Accordion("Live camera: the model rebuilds what your webcam sees", open=False, elem_id="mae-live-box"):
        gr.Markdown(HELP_LIVE, elem_classes=["vitviz-help"])
        with gr.Row(equal_height=True):
            camera = gr.Image(sources=["webcam"], streaming=True, type="numpy", label="Camera",
                              webcam_options=gr.WebcamOptions(mirror=True, constraints=CONSTRAINTS),
                              height=HEIGHT, elem_id="mae-live-camera")
            kw: dict[str, Any] = dict(type="numpy", format="jpeg", interactive=False, height=HEIGHT)
            masked = gr.Image(label="Live: masked input", elem_id="mae-live-masked", **kw)
            pasted = gr.Image(label="Live: reconstruction + visible", elem_id="mae-live-pasted", **kw)
        fresh = gr.Checkbox(False, label="New mask every frame", elem_id="mae-live-fresh")
        line = gr.Markdown(elem_id="mae-live-line")
        gr.HTML("", html_template="<span id='mae-live-rate-text'></span>", js_on_load=js.read("mae_live_rate"),
                elem_id="mae-live-rate", padding=False, container=False)
        echo = gr.Textbox("", visible="hidden", elem_id="mae-live-echo", show_label=False, container=False)
        stamp = gr.Textbox(STAMP, visible="hidden", elem_id="mae-live-stamp", show_label=False, container=False)
    return LiveBox(camera, fresh, masked, pasted, line, echo, stamp)


def _stamp(value: Any) -> str:
    """The page's send time of a frame (milliseconds, digits only), or "" for anything else."""
    text = str(value) if isinstance(value, (str, int)) else ""
    return text if re.fullmatch(r"\d{1,16}", text) else ""


@cost(Cost.LIVE)
def live_step(frame: np.ndarray | None, model_name: str, ratio: float, seed: float, pattern: str, fresh: bool,
              paint: bool, painted: list | None, stamp: str, request: gr.Request) -> tuple:
    """One streamed frame -> masked panel, reconstruction panel, its line, the echoed stamp (private)."""
    if frame is None:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip()
    if others_busy(request):
        time.sleep(PAUSE_S)  # the page sends its next frame after this answer: a paused stream costs little
        return gr.skip(), gr.skip(), PAUSED, gr.skip()
    try:
        mask = np.asarray(painted, dtype=bool) if paint and painted is not None else None
        f = live.live_frame(model_name, frame, ratio, as_seed(seed), pattern, next(FRAMES), bool(fresh), mask)
    except Exception as exc:  # noqa: BLE001 - every failure is a sentence; the stream and the app stay up
        return None, None, f"⚠️ {report('live_step', exc)}", gr.skip()
    _computed[0] += 1
    return f.masked, f.pasted, live.frame_line(f), _stamp(stamp)


def wire(box: LiveBox, model: Any, ratio: Any, seed: Any, pattern: Any, paint: Any, painted: Any) -> None:
    """Connect the camera's stream to the tab's controls, and the page's measurements to the answers."""
    streams, seconds = settings.live_limits()
    box.camera.stream(live_step, [box.camera, model, ratio, seed, pattern, box.fresh, paint, painted, box.stamp],
                      [box.masked, box.pasted, box.line, box.echo], stream_every=STREAM_EVERY, time_limit=seconds,
                      concurrency_limit=streams, concurrency_id=LIVE, show_progress="hidden",
                      api_visibility="private")
    box.echo.change(None, [box.echo], None, js=js.read("mae_live_echo"), queue=False, api_visibility="private")
