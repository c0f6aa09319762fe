"""The MAE tab's live panels as the page shows them: a camera or video frame at the tab's controls
(:class:`Controls`, :func:`frame_panels`), the two panels as one piece of HTML with JPEG data URLs inside
(:func:`panels_html`), a frame as the page sends it (:func:`picture`), and the section's sentences.

No Gradio here: :mod:`vitviz.ui.mae_live` wires these to the camera's stream, the frames route and the video
player; every frame's pixels come from :mod:`vitviz.views.live`.
"""

from __future__ import annotations

import base64
import html
import io
import re
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from ..errors import ImageError
from . import live
from .common import as_seed

#: Panel height of the live section, in px: the two live panels share two thirds of the panel column (about
#: 300 px each at 1280 px, 450 at 1920), large enough for a projector; 240 left them about 200 px on the screen.
HEIGHT = 320

HELP_LIVE = (
    "**Live camera**: *in your browser* (mae-tiny, above) or on the server (any model): click the camera's "
    "button to start; every frame is masked and rebuilt by the model above at "
    "the current **ratio**, **seed** and **pattern** (move them while it runs). The mask stays put while the "
    "picture moves, so you can point at one hidden patch; tick *New mask every frame* to redraw it. While "
    "*Paint the mask* is ticked, the painted mask is used. The server computes only the newest frame and drops "
    "the ones that arrive meanwhile, so the picture never falls behind; the line under the panels says how many "
    "frames a second reach the page and how long from a frame leaving the page to its reconstruction showing. "
    "*The live panels show* can switch to where dinov2-small's class token looks in each frame (its last layer, "
    "the mean of the heads and each head): slower, and no mask."
)
#: The line of a frame that gave way; the page sends fewer frames while it starts with "Paused" (page.js, live).
PAUSED = ("Paused: other requests (yours or other visitors') are computed first: frames are dropped until they "
          "finish.")

HELP_VIDEO = (
    "**No camera?** Upload a short video (at most 60 s, Full HD, the upload size limit) and play it through the "
    "same reconstruction: the controls above act while it plays. *At the video's own speed* drops the frames "
    "whose time passed while one was computing; unticked, every frame is rebuilt in turn, as fast as they compute."
)
#: Sentence while no video is chosen.
NO_VIDEO = "Upload a video file first (MP4, WebM, MOV, MKV or AVI), then press Play."

#: JPEG quality of the live panels (they travel inside the answer, as data URLs).
JPEG_QUALITY = 85
#: What the live panels can show (the radio's values).
RECONSTRUCTION, ATTENTION = "reconstruction", "attention"
#: The live panels' element ids (the page's rate watches the second one's picture).
PANELS = ("mae-live-masked", "mae-live-pasted")
#: Their captions for the MAE reconstruction, and for the class-token attention.
CAPTIONS = ("Live: masked input", "Live: reconstruction + visible")
ATTENTION_CAPTIONS = (f"Live: where {live.ATTENTION_MODEL}'s class token looks (mean of heads)", "Live: each head")
_FIGURE = ("<figure id='{id}' style='margin:0;flex:1;min-width:0;text-align:center'>"
           "<figcaption style='font-size:var(--text-sm);text-align:left;margin-bottom:4px'>{caption}</figcaption>"
           "{body}</figure>")
_IMG = "<img alt='{caption}' src='{src}' style='height:{h}px;max-width:100%;object-fit:contain'>"
_EMPTY = ("<div style='height:{h}px;display:flex;align-items:center;justify-content:center;"
          "border:1px dashed var(--border-color-primary);color:var(--body-text-color-subdued)'>"
          "start the camera or play a video</div>")


def jpeg(rgb: np.ndarray) -> bytes:
    """``(H, W, 3)`` uint8 RGB as JPEG bytes (:data:`JPEG_QUALITY`)."""
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb)).save(buf, format="JPEG", quality=JPEG_QUALITY)
    return buf.getvalue()


def data_url(rgb: np.ndarray) -> str:
    """``(H, W, 3)`` uint8 RGB as a JPEG ``data:`` URL."""
    return "data:image/jpeg;base64," + base64.b64encode(jpeg(rgb)).decode("ascii")


def panels_html(masked: np.ndarray | None, pasted: np.ndarray | None, stamp: str = "",
                captions: tuple[str, str] = CAPTIONS) -> str:
    """The two live panels, side by side, as one piece of HTML with the pictures inside it; ``stamp`` is
    what the page's rate reads (``data-live``: ``sent:entered:left`` in milliseconds, or ``video``).

    One output whose pictures travel in the answer itself: Gradio writes no file for them and the page
    fetches nothing (two ``gr.Image`` outputs cost two JPEG files written in Gradio's cache and two
    requests per frame; ``bench/live.py`` measures the difference).
    """
    return figures_html(tuple(None if rgb is None else data_url(rgb) for rgb in (masked, pasted)), stamp, captions)


def figures_html(sources: tuple[str | None, ...], stamp: str = "", captions: tuple[str, str] = CAPTIONS) -> str:
    """:func:`panels_html` with each picture given by its ``src`` (None: the empty panel); the camera's frames
    that come outside the queue (:func:`fast_step`) get ``""``, filled in by the page with the picture's bytes."""
    figures = []
    for elem, caption, src in zip(PANELS, captions, sources):
        caption = html.escape(caption)
        body = _EMPTY.format(h=HEIGHT) if src is None else _IMG.format(caption=caption, src=src, h=HEIGHT)
        figures.append(_FIGURE.format(id=elem, caption=caption, body=body))
    tag = stamp if re.fullmatch(r"video|[0-9:]{1,60}", stamp) else ""
    return f"<div data-live='{tag}' style='display:flex;gap:8px;width:100%'>" + "".join(figures) + "</div>"


def timing_tag(stamp: Any, entered_ms: float) -> str:
    """What a frame's answer carries back for the page's rate: ``sent:entered:left`` in milliseconds (the page's
    send time, the server's clock on entering the handler and now), or "" when the page sent no stamp."""
    sent = page_stamp(stamp)
    return sent and f"{sent}:{entered_ms:.0f}:{time.time() * 1000.0:.0f}"


def page_stamp(value: Any) -> str:
    """The page's send time of a frame (milliseconds, digits only), or "" for anything else."""
    text = str(value) if isinstance(value, (str, int)) else ""
    return text if re.fullmatch(r"\d{1,16}", text) else ""


@dataclass(frozen=True)
class Controls:
    """The controls a live frame is computed with (read again for every frame of a playing video)."""

    model: str
    ratio: float
    seed: Any
    pattern: str
    fresh: bool
    paint: bool
    painted: Any
    show: str = RECONSTRUCTION

    @classmethod
    def of(cls, model: str, ratio: float, seed: Any, pattern: str, fresh: Any, paint: Any, painted: Any,
           show: str) -> Controls:
        """The controls as the page sends them (the check boxes as booleans)."""
        return cls(model, ratio, seed, pattern, bool(fresh), bool(paint), painted, show)


def frame_panels(c: Controls, rgb: np.ndarray, number: int) -> tuple[np.ndarray, np.ndarray, tuple[str, str], str]:
    """One frame at the controls: the two panels, their captions, and the line under them.

    The tab's MAE reconstruction (:func:`vitviz.views.live.live_frame`), or with ``show`` = ``attention``
    where dinov2-small's class token looks (:func:`vitviz.views.live.attention_frame`; the mask controls
    do not apply).
    """
    if c.show == ATTENTION:
        a = live.attention_frame(rgb)
        return a.mean, a.heads, ATTENTION_CAPTIONS, live.attention_line(a)
    mask = np.asarray(c.painted, dtype=bool) if c.paint and c.painted is not None else None
    f = live.live_frame(c.model, rgb, c.ratio, as_seed(c.seed), c.pattern, number, c.fresh, mask)
    return f.masked, f.pasted, CAPTIONS, live.frame_line(f)


def picture(value: Any) -> np.ndarray:
    """A camera frame as the page sends it (a ``data:image/...;base64`` URL, or Gradio's file data holding
    one) -> ``(H, W, 3)`` uint8 RGB.

    Raises:
        ImageError: anything else.
    """
    url = value.get("url") if isinstance(value, dict) else value
    head, _, payload = str(url or "").partition(",")
    if not (head.startswith("data:image/") and head.endswith(";base64")):
        raise ImageError("A live frame must be a picture (a data:image URL).")
    try:
        with Image.open(io.BytesIO(base64.b64decode(payload, validate=True))) as im:
            return np.asarray(im.convert("RGB"))
    except (ValueError, OSError) as exc:
        raise ImageError("This live frame is not a picture vitviz can read.") from exc


def video_line(line: str, due: live.Due) -> str:
    return (f"{line} · video frame {due.frame.index} at {due.frame.time:.1f} s"
            + (f" · {due.dropped} dropped so far" if due.dropped else ""))
