"""A live stream's frames outside Gradio's queue: one POST per frame, the panels back as bytes.

Gradio 6.31 streams a webcam as a queue event: each next frame is ``POST .../stream/EVENT_ID`` (the
JSON body of every input value, the frame as a JPEG data URL), which wakes the event's loop in the
queue; the answer travels as a message of the event stream (``/queue/data``) and the page's Svelte
code re-renders the output components. For mae-tiny's 30-60 ms frame that transport and the page's
update took 26-35 and 30-47 ms more (``bench/live.py``).

:class:`LiveFrames` (ASGI middleware, in :func:`vitviz.ui.serve.middleware`) answers
``POST .../vitviz-live/stream/EVENT_ID`` -- the route Gradio's own next-frame route would be, with the
same body the page's Gradio client built for it -- without the queue:

* it computes a frame only for a streaming event that Gradio's queue is **running** now: the stream
  still starts, waits for its slot, is refused as a second stream of a session (or address on a public
  host) and ends at its time limit or when the camera stops, all in Gradio's queue and
  :mod:`.limits` as before; the page's first frame goes through Gradio and opens the event;
* by the fast path the event's handler declares (:func:`fast`), with the same inputs: each input's
  value as the page sent it, a ``gr.State``'s from the session (the page sends none);
* one frame of a stream computes at a time; of the frames that arrive meanwhile the newest waits and
  the others are answered at once without work (``204``): frames are dropped, never queued;
* on a worker thread of its own (:data:`WORKERS`, one per live slot), inside the event's Gradio
  context so that :mod:`.threads` gives its model call the stream's share of the cores;
* the answer is a small JSON part (the line, the stamp, ...) and the pictures as bytes
  (``x-vitviz-parts`` lists their lengths): no data URLs, no files, no event-stream message; the page
  module draws them (``js/page.js``, part ``live``).

A request for an event that is not a running stream is answered ``410`` with a sentence
(``{"stop": ...}``); the page then sends its next frames through Gradio again. So is a frame of a
session's run past the stream's time limit (``VITVIZ_LIVE_SECONDS``), counted from the run's first frame
across the stream events Gradio's webcam opens one after another (:func:`over_time`), with
``"ended": true``: the page then stops the camera. The door
(:class:`.http.Hardening`, outside) caps the body at ``VITVIZ_MAX_FRAME`` as for Gradio's route (its
path ends in ``/stream/EVENT_ID``). Contacts with Gradio's internals: the queue's
``event_ids_to_events`` and ``active_jobs``, an event's ``fn``, ``session_hash``, ``closed`` and
``request``, ``Blocks.state_holder``, ``gradio.context.LocalContext``
(tests/ui/test_serve_contacts.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import re
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from ... import settings
from .http import Receive, Scope, Send

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

#: A fast path: ``(values, request) -> (meta, parts)``; ``values`` has one value per input of the event
#: (as the page sent it; a ``gr.State``'s from the session), ``request`` has ``session_hash`` and
#: ``request`` (the stream's Starlette request), ``meta`` is JSON-able, ``parts`` are the pictures' bytes.
FastPath = Callable[[list, Any], tuple[dict, list[bytes]]]


def fast(path: FastPath) -> Callable[[Any], Any]:
    """Decorator on a streaming handler: its frames may also come by :class:`LiveFrames`, computed by ``path``."""

    def mark(fn: Any) -> Any:
        setattr(fn, ATTRIBUTE, path)
        return fn

    return mark


def fast_path(fn: Any) -> FastPath | None:
    """The fast path declared on ``fn`` (looking through ``functools.wraps`` wrappers), or None."""
    for _ in range(16):
        if fn is None:
            return None
        found = getattr(fn, ATTRIBUTE, None)
        if found is not None:
            return found
        fn = getattr(fn, "__wrapped__", None)
    return None


_WORKERS: list[ThreadPoolExecutor] = []


def workers() -> ThreadPoolExecutor:
    """The live frames' worker threads (one per live slot, ``VITVIZ_LIVE_STREAMS``), made on first use."""
    if not _WORKERS:
        _WORKERS.append(ThreadPoolExecutor(max_workers=max(1, settings.live_limits()[0]),
                                           thread_name_prefix="vitviz-live"))
    return _WORKERS[0]


@dataclass
class _Stream:
    """One running stream's frames: the one computing holds ``lock``; ``newest`` numbers the latest to arrive."""

    event: Any
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    newest: int = 0


_STREAMS: dict[str, _Stream] = {}  # event id -> its frames (only running streams: pruned on each frame)
_RUNS: dict[str, list[float]] = {}  # session -> [first frame, last frame] of its run (pruned after REJOIN_S)


def over_time(session: str, limit: float | None, now: float) -> bool:
    """Note a frame of ``session``'s run at ``now`` (monotonic seconds); True once the run, counted from its
    first frame across the stream events that follow one another within :data:`REJOIN_S`, passed ``limit``."""
    for known in [k for k, (_, last) in _RUNS.items() if now - last > REJOIN_S]:
        del _RUNS[known]
    run = _RUNS.setdefault(session, [now, now])
    run[1] = now
    return bool(limit) and now - run[0] > float(limit)


def running_stream(queue: Any, event_id: str) -> Any:
    """The streaming event ``event_id`` if Gradio's queue is running it now (not closed), else None."""
    event = queue.event_ids_to_events.get(event_id)
    if event is None or getattr(event, "closed", True) or getattr(event.fn, "connection", None) != "stream":
        return None
    running = any(e is event for job in list(queue.active_jobs) if job for e in job)
    return event if running else None


def input_values(blocks: Any, event: Any, data: list) -> list:
    """One value per input of ``event``'s function: ``data``'s, a ``gr.State``'s from the session's state."""
    holder = blocks.state_holder
    state = holder[event.session_hash] if event.session_hash in holder else None
    values = []
    for block, value in zip(event.fn.inputs, data):
        if getattr(block, "stateful", False):
            value = state[block._id] if state is not None else getattr(block, "value", None)
        values.append(value)
    return values


def _json(status: int, payload: dict) -> tuple[int, list, bytes]:
    return status, [(b"content-type", b"application/json")], json.dumps(payload).encode()


def answer(meta: dict, parts: list[bytes]) -> tuple[int, list, bytes]:
    """The response of one computed frame: ``meta`` as JSON, then ``parts``; ``x-vitviz-parts`` gives the lengths."""
    head = json.dumps(meta).encode()
    lengths = ",".join(str(len(p)) for p in (head, *parts)).encode()
    return 200, [(b"content-type", b"application/octet-stream"), (b"x-vitviz-parts", lengths)], b"".join([head, *parts])


def _in_event(blocks: Any, event_id: str, work: Callable[[], Any]) -> Callable[[], Any]:
    """``work`` run in a context where Gradio's ``LocalContext`` names the stream's event (:mod:`.threads`)."""
    from gradio.context import LocalContext

    def run() -> Any:
        LocalContext.blocks.set(blocks)
        LocalContext.event_id.set(event_id)
        return work()

    context = contextvars.copy_context()
    return lambda: context.run(run)


async def frame(app: Any, event_id: str, body: bytes) -> tuple[int, list, bytes]:
    """Answer one frame of the running stream ``event_id`` (``body``: Gradio's JSON body of a next frame)."""
    blocks = app.get_blocks()
    queue = blocks._queue
    ran = _STREAMS.get(event_id)
    for known in [k for k in _STREAMS if running_stream(queue, k) is None]:
        del _STREAMS[known]
    event = running_stream(queue, event_id)
    path = fast_path(getattr(event.fn, "fn", None)) if event is not None else None
    if event is None or path is None:
        limit = getattr(ran.event.fn, "time_limit", None) if ran is not None and event is None else None
        return _json(410, {"stop": TIMED_OUT.format(limit=limit), "ended": True} if limit else {"stop": NOT_RUNNING})
    limit = getattr(event.fn, "time_limit", None)
    if over_time(event.session_hash, limit, time.monotonic()):
        return _json(410, {"stop": TIMED_OUT.format(limit=limit), "ended": True})
    try:
        data = json.loads(body).get("data")
    except (ValueError, AttributeError):
        data = None
    if not isinstance(data, list) or len(data) != len(event.fn.inputs):
        return _json(400, {"error": f"A live frame carries {len(event.fn.inputs)} input values as JSON."})
    stream = _STREAMS.get(event_id)
    if stream is None or stream.event is not event:
        stream = _STREAMS[event_id] = _Stream(event)
    stream.newest += 1
    mine = stream.newest
    async with stream.lock:  # one frame of a stream at a time
        if mine != stream.newest:
            return 204, [], b""  # a newer frame came while this one waited: dropped
        request = SimpleNamespace(session_hash=event.session_hash, request=event.request)
        values = input_values(blocks, event, data)
        loop = asyncio.get_running_loop()
        meta, parts = await loop.run_in_executor(workers(), _in_event(blocks, event_id, lambda: path(values, request)))
    return answer(meta, parts)


class LiveFrames:
    """ASGI middleware: ``POST .../vitviz-live/stream/EVENT_ID`` answered by :func:`frame`; all else passed on."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = PATH.search(scope.get("path", "")) if scope.get("type") == "http" else None
        if found is None or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        parts = []
        while True:
            message = await receive()
            if message.get("type") != "http.request":
                return  # the page went away
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        status, headers, body = await frame(scope["app"], found.group(1), b"".join(parts))
        await send({"type": "http.response.start", "status": status,
                    "headers": [*headers, (b"cache-control", b"no-store"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
