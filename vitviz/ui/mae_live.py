"""The MAE tab's live section: the webcam's picture rebuilt by the masked autoencoder, frame by frame.

Wiring only: each frame is :func:`vitviz.views.live.live_frame` at the tab's own model, ratio,
seed and pattern (and its painted mask while painting), read from the controls with every frame,
so the slider acts on the next frame; the panels, their HTML and the section's sentences are
:mod:`vitviz.views.live_panels` (``lp``). Gradio's streaming webcam input (6.31:
``gr.Image(sources=["webcam"], streaming=True)`` and ``.stream(stream_every=..., time_limit=...)``)
offers a frame every :data:`STREAM_EVERY` seconds. Its first frame opens the stream's event in
Gradio's queue (:func:`live_step`); the page sends each next one to the app's own route outside the queue
(:mod:`vitviz.ui.serve.frames`, which says when it computes a frame and when it drops one), computed by
:func:`fast_step`. Where the route is missing or refuses, the frames go through Gradio as before.

The stream is its own cost class (:attr:`~vitviz.models.costs.Cost.LIVE`): its own slots
(``VITVIZ_LIVE_STREAMS``), one stream per session, a time limit on a public host
(``VITVIZ_LIVE_SECONDS``), and a frame gives way to any other session's request, and for
:data:`~vitviz.ui.serve.limits.GIVE_WAY_S` after one (:func:`vitviz.ui.serve.limits.others_busy`); its model
calls run on one thread (:mod:`vitviz.ui.serve.threads`), and the page sends a frame only while fewer
than two are unanswered (``js/page.js``, part ``live``), so a paused stream costs little.

The page shows frames per second and frame-to-panel latency (:file:`js/page.js`, part ``live``):
the page stamps each frame it sends with its own clock, the answer carries the stamp of the frame it
computed back (with the server's clock on entering and leaving the handler, which ``bench/live.py``
uses to split a frame's time where page and server share a clock), and the page measures until the
reconstruction panel has loaded. Through Gradio the answer is one piece of HTML with both panels
inside it as JPEG data URLs (:func:`lp.panels_html`): no files written, nothing fetched, one output.

Where no camera is present, an uploaded video plays through the same per-frame reconstruction
(:func:`play_video`, one generator event of the same cost class and rules: its own slot, one per
session, the time limit, giving way to others). The file is read with ``gr.Video(sources=["upload"])``:
with no ``format`` and its audio kept, Gradio 6.31 passes the uploaded file's path on as it is,
without calling ``ffmpeg`` (which this app does not need); vitviz decodes it in-process
(:mod:`vitviz.core.video`). A generator's inputs are fixed when it starts, so the controls' changes
reach a playing video through :func:`note_controls` (the latest controls of each session that is
playing, dropped when it stops).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import gradio as gr
import numpy as np

from .. import settings
from ..models.costs import Cost, cost
from ..views import live
from ..views import live_panels as lp
from . import js
from .binder import Binder
from .common import help_text, hidden, in_page, report
from .serve.frames import fast
from .serve.limits import LIVE, others_busy

#: Seconds between the frames the page sends (at most 20 a second; the server computes the newest).
STREAM_EVERY = 0.05
#: The camera picture asked for: small frames (about 30 KB each as JPEG) cross the network fast and the
#: model sees a 224-pixel square of them anyway.
CONSTRAINTS = {"video": {"width": {"ideal": 320}, "height": {"ideal": 240}}}
#: Placeholder value of the stamp box, replaced by the page with its clock in every frame it sends.
STAMP = js.LIVE_STAMP
#: Seconds a frame that gives way waits before its answer (the stream's own slot; nothing else waits).
PAUSE_S = 0.25
#: Numbers the frames (a new mask every frame draws its seed from it).
FRAMES = itertools.count()
#: Frames this process has reconstructed (the tests read it to see that a stopped stream stops the work).
_computed = [0]


def frames_computed() -> int:
    """How many live frames this process has reconstructed so far."""
    return _computed[0]


def build(ui: Binder) -> None:
    """Create the live section (a closed accordion) on the MAE tab's binder (``ui.live_camera``...), in the caller's
    layout context."""
    with gr.Accordion("Live camera: the model rebuilds what your webcam sees", open=False, elem_id="mae-live-box"):
        help_text(lp.HELP_LIVE)
        # the camera computed in the page (mae-tiny): built there (vitviz.inpage.mount)
        gr.HTML("", html_template="<div id='mae-inpage-live'></div>", js_on_load=js.read("mae_live_inpage"),
                elem_id="mae-inpage-camera", padding=False, container=False)
        with gr.Row(equal_height=True):
            ui.live_camera = gr.Image(sources=["webcam"], streaming=True, type="numpy", label="Camera",
                                      webcam_options=gr.WebcamOptions(mirror=True, constraints=CONSTRAINTS),
                                      height=lp.HEIGHT, elem_id="mae-live-camera")
            ui.live_panels = gr.HTML(lp.panels_html(None, None), elem_id="mae-live-panels", scale=2, padding=False)
        ui.live_line = gr.Markdown(elem_id="mae-live-line")
        gr.HTML("", html_template="<span id='mae-live-rate-text'></span>", js_on_load=js.read("mae_live_rate"),
                elem_id="mae-live-rate", padding=False, container=False)
        with gr.Row():
            ui.live_show = gr.Radio([("the MAE reconstruction (the tab's model, ratio, seed and pattern)",
                                      lp.RECONSTRUCTION),
                                     (f"where {live.ATTENTION_MODEL}'s class token looks (no mask; slower)",
                                      lp.ATTENTION)],
                                    value=lp.RECONSTRUCTION, label="The live panels show", elem_id="mae-live-show",
                                    scale=3)
            ui.live_fresh = gr.Checkbox(False, label="New mask every frame", elem_id="mae-live-fresh", scale=1)
        help_text(lp.HELP_VIDEO)
        with gr.Row():
            ui.live_video = gr.Video(sources=["upload"], label="Video file", height=lp.HEIGHT,
                                     elem_id="mae-live-video", scale=2)
            with gr.Column(scale=1):
                ui.live_pace = gr.Checkbox(True, label="At the video's own speed", elem_id="mae-live-pace")
                ui.live_play = gr.Button("▶ Play the video through the model", elem_id="mae-live-play",
                                         variant="primary")
                ui.live_stop = gr.Button("■ Stop", elem_id="mae-live-stop")
        ui.live_stamp = gr.Textbox(STAMP, visible="hidden", elem_id="mae-live-stamp", show_label=False,
                                   container=False)
        # bumped by the page while the server plays a video: its change hands that video the new controls
        ui.live_notify = hidden(gr.Number, 0, "mae-live-notify")


def computed(c: lp.Controls, rgb: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None, tuple[str, str],
                                                       str]:
    """:func:`frame_panels` for the next frame of a stream, counted; a failure is a sentence (no panels)."""
    try:
        first, second, captions, line = lp.frame_panels(c, rgb, next(FRAMES))
    except Exception as exc:  # noqa: BLE001 - every failure is a sentence; the stream and the app stay up
        return None, None, lp.CAPTIONS, f"⚠️ {report('live_step', exc)}"
    _computed[0] += 1
    return first, second, captions, line


def fast_step(values: list, request: Any) -> tuple[dict, list[bytes]]:
    """One camera frame that came outside Gradio's queue (:mod:`vitviz.ui.serve.frames`; the inputs of
    :func:`live_step`, as the page sent them) -> what the page draws: ``line``, ``live`` (the stamp, as
    ``data-live``) and ``html`` (:func:`lp.figures_html`, empty sources) beside the two panels' JPEG bytes; or
    only ``line`` (and ``paused``) while the stream gives way, or for a frame that failed."""
    entered = time.time() * 1000.0
    frame, model_name, ratio, seed, pattern, fresh, paint, painted, show, stamp = values
    if others_busy(request):
        time.sleep(PAUSE_S)  # as live_step: the page sends about one frame a second while paused
        return {"line": lp.PAUSED, "paused": True}, []
    try:
        rgb = lp.picture(frame)
    except Exception as exc:  # noqa: BLE001 - a sentence, the stream goes on
        return {"line": f"⚠️ {report('live_step', exc)}"}, []
    c = lp.Controls.of(model_name, ratio, seed, pattern, fresh, paint, painted, show)
    first, second, captions, line = computed(c, rgb)
    if first is None or second is None:
        return {"line": line}, []
    parts = [lp.jpeg(first), lp.jpeg(second)]
    html = lp.figures_html(("", ""), "", captions)
    return {"line": line, "live": lp.timing_tag(stamp, entered), "html": html}, parts


@fast(fast_step)
@cost(Cost.LIVE)
def live_step(frame: np.ndarray | None, model_name: str, ratio: float, seed: float, pattern: str, fresh: bool,
              paint: bool, painted: list | None, show: str, stamp: str, request: gr.Request) -> tuple:
    """One streamed frame -> the two panels (:func:`lp.panels_html`, carrying the frame's stamp back), its line
    (private). The page sends the stream's first frame here, and its next ones to :func:`fast_step` by
    :mod:`vitviz.ui.serve.frames` (here again if that path is not installed); a frame without a picture
    keeps the stream open (the page's keep-alive)."""
    entered = time.time() * 1000.0
    if frame is None:
        return gr.skip(), gr.skip()
    if others_busy(request):
        time.sleep(PAUSE_S)  # a paused stream costs little: the frames meanwhile are dropped
        return gr.skip(), lp.PAUSED
    first, second, captions, line = computed(
        lp.Controls.of(model_name, ratio, seed, pattern, fresh, paint, painted, show), frame)
    if first is None:
        return lp.panels_html(None, None), line
    return lp.panels_html(first, second, lp.timing_tag(stamp, entered), captions), line


#: The latest controls of each session whose video is playing (set by :func:`play_video` while it runs,
#: updated by :func:`note_controls`): at most one entry per live slot, each gone when its video stops.
_PLAYING: dict[str, lp.Controls] = {}
_PLAYING_LOCK = threading.Lock()


def note_controls(model_name: str, ratio: float, seed: float, pattern: str, fresh: bool, paint: bool,
                  painted: list | None, show: str, request: gr.Request) -> None:
    """A control changed: a video playing for this session takes it from its next frame (private)."""
    session = getattr(request, "session_hash", None)
    with _PLAYING_LOCK:
        if session in _PLAYING:
            _PLAYING[session] = lp.Controls.of(model_name, ratio, seed, pattern, fresh, paint, painted, show)


@cost(Cost.LIVE)
def play_video(path: str | None, model_name: str, ratio: float, seed: float, pattern: str, fresh: bool,
               paint: bool, painted: list | None, show: str, pace: bool, request: gr.Request) -> Iterator[tuple]:
    """Play an uploaded video through the live reconstruction: the two panels (:func:`lp.panels_html`), their
    line, and a frame tag for the page's rate, for every frame computed (private; a generator)."""
    if not path:
        yield gr.skip(), lp.NO_VIDEO
        return
    session = getattr(request, "session_hash", None) or f"anonymous-{id(request)}"
    with _PLAYING_LOCK:
        _PLAYING[session] = lp.Controls.of(model_name, ratio, seed, pattern, fresh, paint, painted, show)
    limit = settings.live_limits()[1]
    start = time.monotonic()
    done, due = 0, None
    try:
        for due in live.paced(live.video_frames(model_name, path), bool(pace)):
            if limit is not None and time.monotonic() - start > limit:
                yield gr.skip(), f"■ Stopped after {limit} s, this server's limit for one live run."
                return
            if others_busy(request):
                time.sleep(PAUSE_S)
                yield gr.skip(), lp.PAUSED
                continue
            with _PLAYING_LOCK:
                c = _PLAYING.get(session)
            first, second, captions, line = lp.frame_panels(c, due.frame.rgb, due.frame.index)
            _computed[0] += 1
            done += 1
            yield lp.panels_html(first, second, "video", captions), lp.video_line(line, due)
        dropped = due.dropped if due is not None else 0
        yield gr.skip(), (f"■ End of the video: {done} frames rebuilt, {dropped} dropped (their time "
                                     "passed while others were computing). Press Play to run it again.")
    except Exception as exc:  # noqa: BLE001 - every failure is a sentence; the app stays up
        yield gr.skip(), f"⚠️ {report('play_video', exc)}"
    finally:
        with _PLAYING_LOCK:
            _PLAYING.pop(session, None)


def wire(ui: Binder) -> None:
    """Connect the camera's stream to the tab's controls, and the page's measurements to the answers."""
    streams, seconds = settings.live_limits()
    controls = ui.components(("model_name", "mask_ratio", "seed", "pattern", "live_fresh", "paint", "painted",
                              "live_show"))
    shown = [ui.live_panels, ui.live_line]
    live = dict(concurrency_limit=streams, concurrency_id=LIVE, show_progress="hidden", api_visibility="private")
    ui.live_camera.stream(live_step, [ui.live_camera, *controls, ui.live_stamp], shown, stream_every=STREAM_EVERY,
                          time_limit=seconds, **live)
    playing = ui.live_play.click(play_video, [ui.live_video, *controls, ui.live_pace], shown,
                                 js=js.read("mae_live_play", playing=True), **live)
    stopped = dict(queue=False, api_visibility="private", js=js.read("mae_live_play", playing=False))
    ui.live_stop.click(None, None, None, cancels=[playing], **stopped)
    ui.live_video.change(None, None, None, cancels=[playing], **stopped)
    # The ratio reaches a playing video when the slider is let go (release), not at each step: after a sweep
    # a drag must stay in the page (no server call per step: ui/scrub.py, tests/ui/test_scrub.py).
    # Only while a video plays (the page knows: mae_live_play.js): otherwise a change of the controls computed
    # in the page (vitviz.inpage) would still cost a server call.
    triggers = [ui.mask_ratio.release] + [c.change for c in controls if c is not ui.mask_ratio]
    in_page(triggers, ui.live_notify, js.read("mae_live_note"), ui.live_notify)
    ui.live_notify.change(note_controls, controls, None, queue=False, show_progress="hidden",
                          api_visibility="private", trigger_mode="always_last")
