"""A live stream's frames outside Gradio's queue: one POST per frame, the panels back as bytes.

Gradio 6.31 streams a webcam as a queue event: each next frame is ``POST .../stream/EVENT_ID`` (the
JSON body of every input value and the ``session_hash``, the frame as a JPEG data URL), which wakes the
event's loop in the queue; the answer travels as a message of the event stream (``/queue/data``) and the
page's Svelte code re-renders the output components. For mae-tiny's 30-60 ms frame that transport and the
page's update took 26-35 and 30-47 ms more (``bench/live.py``).

:class:`LiveFrames` (ASGI middleware, in :func:`vitviz.ui.serve.middleware`) answers
``POST .../vitviz-live/stream/EVENT_ID`` -- the route Gradio's own next-frame route would be, with the
same body the page's Gradio client built for it -- without the queue:

* it computes a frame only for a session whose stream Gradio runs: the handler declared with :func:`fast`
  notes its session each time Gradio calls it (the stream's first frame, and the page's keep-alive frame
  every few seconds), and the route answers a session noted less than :data:`KEEP_S` ago. So the stream
  still starts, waits for its slot, is refused as a second stream and ends at its time limit or when the
  camera stops, all in Gradio's queue;
* by the fast path the handler declares, with the same inputs: each input's value as the page sent it,
  and for one the page sends empty (a ``gr.State``) the value of Gradio's last call;
* one frame of a stream computes at a time; of the frames that arrive meanwhile the newest waits and
  the others are answered at once without work (``204``): frames are dropped, never queued;
* on a worker thread of its own (:func:`workers`, one per live slot, named ``vitviz-live``: its model calls
  run as live ones, :func:`vitviz.models.costs.current`);
* the answer is a small JSON part (the line, the stamp, ...) and the pictures as bytes
  (``x-vitviz-parts`` lists their lengths); the page module draws them (``js/page.js``, part ``live``).

A frame of a session whose stream is not running is answered ``410`` with a sentence (``{"stop": ...}``);
the page then sends its next frames through Gradio again. So is a frame of a run past the stream's time
limit (``VITVIZ_LIVE_SECONDS``), counted from the run's first frame across the stream events Gradio's
webcam opens one after another (:func:`over_time`), with ``"ended": true``: the page then stops the camera.
The door (:class:`.http.Hardening`, outside) caps the body at ``VITVIZ_MAX_FRAME`` as for Gradio's route.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from starlette.types import Receive, Scope, Send

from ... import settings
from .asgi import Middleware, read_body, respond

#: The path of a frame sent outside the queue (ends as Gradio's next-frame route, so the door's frame cap applies).
PATH = re.compile(r"/vitviz-live/stream/([0-9a-f]{8,64})$")
#: Attribute naming a streaming handler's fast path (:func:`fast`).
ATTRIBUTE = "__vitviz_fast_frames__"
#: The sentence for a frame whose stream is not running (stopped, or never started).
NOT_RUNNING = "The live stream has stopped: start the camera again to go on."
#: ... for a frame of a stream that ran and has a time limit (Gradio's ``time_limit``, ``VITVIZ_LIVE_SECONDS``).
TIMED_OUT = "■ Stopped after {limit} s, this server's limit for one live run: start the camera again to go on."
#: Seconds between a session's last frame and its next stream's first under which both streams are one run:
#: Gradio's webcam opens a new stream event by itself when one ends at its time limit (its queue join), so
#: the time limit counts from the run's first frame, across those events.
REJOIN_S = 3.0
#: Seconds a stream counts as running after Gradio last called its handler: the page sends Gradio a frame
#: without its picture every 5 s (``js/page.js``, ``KEEP_MS``) to keep its stream event open.
KEEP_S = 12.0

#: A fast path: ``(values, request) -> (meta, parts)``; ``values`` has one value per input of the event
#: (as the page sent it; a ``gr.State``'s from Gradio's last call), ``request`` has ``session_hash`` and
#: ``request`` (the stream's request), ``meta`` is JSON-able, ``parts`` are the pictures' bytes.
FastPath = Callable[[list, Any], tuple[dict, list[bytes]]]


@dataclass
class _Stream:
    """One session's running stream: Gradio's last call (its values and request) and the frames' turn."""

    values: list
    request: Any
    path: FastPath
    seen: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    newest: int = 0


_STREAMS: dict[str, _Stream] = {}  # session -> its stream (pruned after KEEP_S)
_RUNS: dict[str, list[float]] = {}  # session -> [first frame, last frame] of its run (pruned after REJOIN_S)
_LOCK = threading.Lock()


def fast(path: FastPath) -> Callable[[Any], Any]:
    """Decorator on a streaming handler (one whose last parameter is a ``gr.Request``): its frames may also come
    by :class:`LiveFrames`, computed by ``path``; each call by Gradio notes the session's stream as running."""

    def mark(fn: Any) -> Any:
        @functools.wraps(fn)
        def noted(*args: Any) -> Any:
            request = args[-1] if args else None
            session = getattr(request, "session_hash", None)
            if isinstance(session, str):
                with _LOCK:
                    old = _STREAMS.get(session)  # its frames' turn goes on: one frame at a time across Gradio's calls
                    turn = {} if old is None else {"lock": old.lock, "newest": old.newest}
                    _STREAMS[session] = _Stream(list(args[:-1]), request, path, time.monotonic(), **turn)
            return fn(*args)

        setattr(noted, ATTRIBUTE, path)
        return noted

    return mark


@functools.cache
def workers() -> ThreadPoolExecutor:
    """The live frames' worker threads (one per live slot, ``VITVIZ_LIVE_STREAMS``), made on first use."""
    return ThreadPoolExecutor(max_workers=max(1, settings.live_limits()[0]), thread_name_prefix="vitviz-live")


def over_time(session: str, limit: float | None, now: float) -> bool:
    """Note a frame of ``session``'s run at ``now`` (monotonic seconds); True once the run, counted from its
    first frame across the stream events that follow one another within :data:`REJOIN_S`, passed ``limit``."""
    for known in [k for k, (_, last) in _RUNS.items() if now - last > REJOIN_S]:
        del _RUNS[known]
    run = _RUNS.setdefault(session, [now, now])
    run[1] = now
    return bool(limit) and now - run[0] > float(limit)


def running(session: str, now: float) -> _Stream | None:
    """``session``'s stream if Gradio called its handler less than :data:`KEEP_S` ago (older ones forgotten)."""
    with _LOCK:
        for known in [k for k, s in _STREAMS.items() if now - s.seen > KEEP_S]:
            del _STREAMS[known]
        return _STREAMS.get(session)


def _json(status: int, payload: dict) -> tuple[int, list, bytes]:
    return status, [(b"content-type", b"application/json")], json.dumps(payload).encode()


def answer(meta: dict, parts: list[bytes]) -> tuple[int, list, bytes]:
    """The response of one computed frame: ``meta`` as JSON, then ``parts``; ``x-vitviz-parts`` gives the lengths."""
    head = json.dumps(meta).encode()
    lengths = ",".join(str(len(p)) for p in (head, *parts)).encode()
    return 200, [(b"content-type", b"application/octet-stream"), (b"x-vitviz-parts", lengths)], b"".join([head, *parts])


async def frame(body: bytes) -> tuple[int, list, bytes]:
    """Answer one frame (``body``: Gradio's JSON body of a next frame: ``data`` and ``session_hash``)."""
    try:
        sent = json.loads(body)
        data, session = sent.get("data"), sent.get("session_hash")
    except (ValueError, AttributeError):
        data, session = None, None
    now = time.monotonic()
    stream = running(session, now) if isinstance(session, str) else None
    if stream is None:
        return _json(410, {"stop": NOT_RUNNING})
    limit = settings.live_limits()[1]
    if over_time(session, limit, now):
        return _json(410, {"stop": TIMED_OUT.format(limit=limit), "ended": True})
    if not isinstance(data, list) or len(data) != len(stream.values):
        return _json(400, {"error": f"A live frame carries {len(stream.values)} input values as JSON."})
    values = [sent_value if sent_value is not None else last for sent_value, last in zip(data, stream.values)]
    stream.newest += 1
    mine = stream.newest
    async with stream.lock:  # one frame of a stream at a time
        if mine != stream.newest:
            return 204, [], b""  # a newer frame came while this one waited: dropped
        request = SimpleNamespace(session_hash=session, request=getattr(stream.request, "request", None))
        loop = asyncio.get_running_loop()
        meta, parts = await loop.run_in_executor(workers(), stream.path, values, request)
    return answer(meta, parts)


class LiveFrames(Middleware):
    """ASGI middleware: ``POST .../vitviz-live/stream/EVENT_ID`` answered by :func:`frame`; all else passed on."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = PATH.search(scope.get("path", "")) if scope.get("type") == "http" else None
        if found is None or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        sent = await read_body(receive)
        if sent is None:
            return  # the page went away
        status, headers, body = await frame(sent)
        await respond(send, status, body, [*headers, (b"cache-control", b"no-store")])
