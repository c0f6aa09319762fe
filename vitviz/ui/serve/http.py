"""HTTP hardening of the served app (an ASGI middleware, installed through ``launch_options``).

* every response says ``X-Content-Type-Options: nosniff``, so an uploaded file served
  back is never sniffed into HTML or script by a browser;
* an upload request carries one file (the page never sends more), and an image: a request
  with several files is refused with HTTP 400, a file that does not start like a JPEG, PNG,
  WebP, GIF, BMP or TIFF with HTTP 415 and a sentence naming them (the page shows it), before
  Gradio writes anything to disk (vitviz's reader checks the whole file later);
* a request body is capped at ``VITVIZ_MAX_REQUEST`` (a queue join needs kilobytes), except a live-camera
  frame (``VITVIZ_MAX_FRAME``): Gradio 6.31 sends a stream's first frame inside its queue join, read
  whole by the door to see that it opens a stream, and each next one to ``/stream/EVENT_ID``;
* the requests that cost the server work outside the queue -- uploads (parsed and
  written to disk) and the page configuration (``/config``, about 1 MB, and the API
  description) -- are rate-limited per client address (``VITVIZ_CLIENT_REQUESTS`` per
  minute, bursts of an eighth of that): a script whose every attempt uploads a photo and
  opens a new client spent a core on this alone while its queued calls were refused; and
  so are the front end's files (:data:`ASSETS_PER_MINUTE`, two first visits' worth at once).
  Over the limit, the answer is HTTP 429 after a one-second pause;
* text responses (the page and its configuration) are gzip-compressed at level 1
  (9 ms and 110 KB for the 1.3 MB configuration of the time; level 9 took 105 ms of the event
  loop per page load for 70 KB); binary files (PNG panels, the slider's packed panels) are not;
* the page's own files (``/assets/``, ``/static/``: Gradio's front end, fixed while the server
  runs) are answered from memory once sent (:class:`StaticCache`): every new visitor's
  browser fetches about 120 of them (6.3 MB before compression), and Gradio compressed
  each with Brotli again for every visitor, a third of the server's CPU per page load.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from types import SimpleNamespace
from typing import Any

from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES

from ... import settings
from ...cache import LRU
from . import ledger, uploads
from .clients import BAD_SESSION, long_session
from .limits import REFUSAL_PAUSE_S

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

UPLOAD_PATHS = ("/gradio_api/upload", "/upload")
#: (method, path suffix) of the requests counted by the per-address rate limit.
COSTLY = (("POST", "/upload"), ("GET", "/config"), ("GET", "/gradio_api/info"))


class RateLimiter:
    """Token buckets per client address: ``per_minute`` requests a minute, bursts of ``max(10, per_minute / 8)``;
    bounded, thread-safe. Each page configuration costs the server a deep copy of about 1.3 MB.

    The buckets are a :class:`~.ledger.Ledger`, not a cache: a bucket not yet full again is never evicted (an
    evicted bucket was a full one again), and a new address that finds every bucket in use is refused."""

    def __init__(self, capacity: int = ledger.DEFAULT_CAPACITY) -> None:
        # address -> (tokens, time, when full again)
        self._buckets: ledger.Ledger[str, tuple[float, float, float]] = ledger.Ledger(
            lambda bucket, now: now < bucket[2], capacity)

    def allow(self, address: str, per_minute: int, now: float | None = None, burst: float | None = None) -> bool:
        """Take one token from ``address``'s bucket (``burst`` tokens at most: default an eighth of a minute's,
        at least 10); False when it is empty."""
        now = time.monotonic() if now is None else now
        burst = max(10.0, per_minute / 8) if burst is None else float(burst)
        rate = max(per_minute, 1e-9) / 60.0

        def take(bucket: tuple[float, float, float] | None) -> tuple[tuple[float, float, float], bool]:
            tokens, last, _ = bucket or (burst, now, now)
            tokens = min(burst, tokens + (now - last) * rate)
            ok = tokens >= 1.0
            left = tokens - 1.0 if ok else tokens
            return (left, now, now + (burst - left) / rate), ok

        try:
            return self._buckets.update(address, take, now)
        except ledger.LedgerFull:
            return False


LIMITER = RateLimiter()
#: The front end's files (:data:`STATIC_PREFIXES`) one client address may fetch: a first visit fetches about
#: 120 at once (then its browser keeps them), so two visits' worth at once and as many a minute. A script
#: asking for Plotly's bundle (1.1 MB compressed) with a new query string each time was answered as fast as
#: it asked, and the sending took the event loop from every other visitor.
ASSETS_PER_MINUTE = 240
ASSETS = RateLimiter()


def _costly(scope: Scope) -> bool:
    method, path = scope.get("method", ""), scope.get("path", "").rstrip("/")
    return any(method == m and path.endswith(p) for m, p in COSTLY)


def _allowed(address: str) -> bool:
    from .limits import exempt

    return exempt(address) or LIMITER.allow(address, settings.get("VITVIZ_CLIENT_REQUESTS"))


def _asset_allowed(scope: Scope, address: str) -> bool:
    """False for a front-end file asked beyond this address's :data:`ASSETS_PER_MINUTE`."""
    from .limits import exempt

    if scope.get("method") != "GET" or not scope.get("path", "").startswith(STATIC_PREFIXES) or exempt(address):
        return True
    return ASSETS.allow(address, ASSETS_PER_MINUTE, burst=ASSETS_PER_MINUTE)


def _address(scope: Scope) -> str:
    from .limits import client_address

    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    client = scope.get("client") or ("unknown", 0)
    request = SimpleNamespace(client=SimpleNamespace(host=client[0]), headers=headers)
    return client_address(request, settings.trusted_proxies())


TOO_LARGE_REQUEST = "This request is larger than any the app needs."


#: A live stream's next frame: ``POST .../stream/EVENT_ID`` (Gradio 6.31's route for streamed chunks).
STREAM_CHUNK = re.compile(r"/stream/[0-9a-f]{8,64}$")


def _capped_body(scope: Scope, receive: Receive) -> Receive:
    """``receive`` for a request that is not an upload: refused (HTTP 413) once its body passes
    ``VITVIZ_MAX_REQUEST``, before the application has buffered it (Gradio reads a queue join whole).
    MCP messages (``/mcp``) may carry an image inline: they may be as large as the largest upload.
    A live stream's next frame (:data:`STREAM_CHUNK`) may reach ``VITVIZ_MAX_FRAME``; a queue join
    goes through :func:`_stream_join` (:func:`_capped`)."""
    limit = settings.get("VITVIZ_MAX_REQUEST")
    path = scope.get("path", "").rstrip("/")
    if "/mcp" in path:
        limit = max(limit, settings.max_upload_bytes() + uploads.SLACK_BYTES)
    frames = settings.get("VITVIZ_MAX_FRAME")
    if frames > limit and STREAM_CHUNK.search(path):
        limit = frames
    for k, v in scope.get("headers", []):
        if k.lower() == b"content-length" and v.isdigit() and int(v) > limit:
            raise uploads.RefusedUpload(413, TOO_LARGE_REQUEST)
    seen = [0]

    async def wrapped() -> Message:
        message = await receive()
        if message.get("type") == "http.request":
            seen[0] += len(message.get("body", b""))
            if seen[0] > limit:
                raise uploads.RefusedUpload(413, TOO_LARGE_REQUEST)
        return message

    return wrapped


def _streaming(scope: Scope, body: bytes) -> bool:
    """True when a queue join's body names a streaming event (``connection == "stream"``) of the app."""
    try:
        index = json.loads(body).get("fn_index")
        fn = scope["app"].get_blocks().fns.get(index)
    except Exception:  # noqa: BLE001 - not JSON, no such event, no app: not a stream
        return False
    return fn is not None and getattr(fn, "connection", None) == "stream"


async def _stream_join(scope: Scope, receive: Receive, limit: int, frames: int) -> Receive:
    """Read a queue join whole (at most ``frames`` bytes) before the app sees it, and refuse it (HTTP 413)
    past ``limit`` unless it opens a live stream (its first frame rides in it); returns a ``receive``
    that hands the app the body read."""
    for k, v in scope.get("headers", []):
        if k.lower() == b"content-length" and v.isdigit() and int(v) > frames:
            raise uploads.RefusedUpload(413, TOO_LARGE_REQUEST)
    parts, seen = [], 0
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            break  # a disconnect: the app reads it next
        parts.append(message.get("body", b""))
        seen += len(parts[-1])
        if seen > frames:
            raise uploads.RefusedUpload(413, TOO_LARGE_REQUEST)
        if not message.get("more_body", False):
            break
    body = b"".join(parts)
    if seen > limit and not _streaming(scope, body):
        raise uploads.RefusedUpload(413, TOO_LARGE_REQUEST)
    replay = [{"type": "http.request", "body": body, "more_body": False}]

    async def wrapped() -> Message:
        return replay.pop() if replay else await receive()

    return wrapped


async def _capped(scope: Scope, receive: Receive) -> Receive:
    """:func:`_capped_body`, or for a queue join that may carry a live frame, :func:`_stream_join`."""
    limit, frames = settings.get("VITVIZ_MAX_REQUEST"), settings.get("VITVIZ_MAX_FRAME")
    if frames > limit and scope.get("path", "").rstrip("/").endswith("/queue/join"):
        return await _stream_join(scope, receive, limit, frames)
    return _capped_body(scope, receive)


class Hardening:
    """ASGI middleware: ``nosniff`` on every response, request bodies capped, uploads checked
    (:mod:`.uploads`), costly requests rate-limited per address."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return

        held: list[Message] = []
        run_route = "/run/" in scope.get("path", "")

        async def send_with_headers(message: Message) -> None:
            if run_route and (held or (message.get("type") == "http.response.start" and message.get("status") == 500)):
                # Gradio's /run/ route answers every failure with HTTP 500, a sentence (gr.Error, see
                # .errors) included: that is the client's error, 400
                if not held:
                    held.append(message)
                    return
                start, held[:] = held[0], []
                if b'"error":' in message.get("body", b"") and b'"error":null' not in message.get("body", b""):
                    start = {**start, "status": 400}
                await send_with_headers_final(start)
            await send_with_headers_final(message)

        async def send_with_headers_final(message: Message) -> None:
            if message.get("type") == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-content-type-options"]
                headers.append((b"x-content-type-options", b"nosniff"))
                message["headers"] = headers
            await send(message)

        if long_session(scope):
            await send_with_headers({"type": "http.response.start", "status": 400,
                                     "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
            await send({"type": "http.response.body", "body": BAD_SESSION.encode()})
            return
        address = _address(scope)
        if (_costly(scope) and not _allowed(address)) or not _asset_allowed(scope, address):
            await asyncio.sleep(REFUSAL_PAUSE_S)  # a flooding script waits instead of spinning
            await send_with_headers({"type": "http.response.start", "status": 429,
                                     "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
            await send({"type": "http.response.body",
                        "body": b"Too many requests from you: wait a moment (this server is shared)."})
            return
        try:
            if scope.get("method") in ("POST", "PUT", "PATCH"):
                if scope.get("path", "").rstrip("/").endswith(UPLOAD_PATHS):
                    from .limits import exempt, note_request

                    note_request(address)  # a visitor's upload: live streams give way (limits.others_busy)

                    receive = uploads.checked_upload(scope, receive, address, exempt(address))
                else:
                    receive = await _capped(scope, receive)
            await self.app(scope, receive, send_with_headers)
        except uploads.RefusedUpload as refused:
            await send_with_headers({"type": "http.response.start", "status": refused.status,
                                     "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
            await send({"type": "http.response.body", "body": refused.message.encode()})


#: Content types the app's gzip leaves alone: Starlette's list (images, archives, event streams) and
#: binary files such as the slider's packed PNG panels (compressed already: 4.8 MB per page load).
NOT_GZIPPED: tuple[str, ...] = (*DEFAULT_EXCLUDED_CONTENT_TYPES, "application/octet-stream")
#: Path prefixes of the files of Gradio's front end and of vitviz's page module (:class:`~vitviz.ui.serve.page_module.PageModule`), which do
#: not change while the server runs.
STATIC_PREFIXES = ("/assets/", "/static/", "/vitviz/")
#: Query parameters of Gradio's page route that change the page (vitviz's own, ``tab=`` etc., do not).
PAGE_PARAMETERS = (b"page=", b"deep_link=")
#: Request headers the page's root URL is built from (with the scope's ``root_path``).
ROOT_HEADERS = ("host", "x-forwarded-host", "x-forwarded-proto", "x-forwarded-port", "x-forwarded-prefix",
                "forwarded")
#: Size of the pieces files are sent in.
FILE_CHUNK_BYTES = 1024 * 1024
#: Largest response :class:`StaticCache` keeps.
STATIC_MAX_BYTES = 16 * 1024 * 1024  # Plotly's bundle is 4.6 MB


class StaticCache:
    """ASGI middleware: the front end's files and the page, compressed once and then answered from memory.

    The page (``/``: the HTML with the page configuration and the API description, the same
    for every visitor: vitviz's own query, ``?tab=...``, is read by the page) cost about 40 ms
    of server CPU per visitor to copy, serialise and compress; it is kept per root URL (the
    headers it is built from) unless the request asks for another page or a deep link, or
    carries a cookie or credentials.

    A file is fetched once per compression a request accepts (``br``, ``gzip`` or none),
    uncompressed from the app, compressed here (Brotli quality 5, gzip level 6: once per file,
    so a better ratio than the per-request levels) and kept with its headers in a bounded LRU
    (at most ``capacity`` responses). Gradio's own Brotli middleware, outside this one, leaves
    an encoded answer alone. Only whole ``200`` answers to plain ``GET`` requests are kept (no
    ``Range`` or conditional request); anything else is passed on as it came.
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], capacity: int = 512,
                 pages: int = 8) -> None:
        self.app = app
        self.responses: LRU[tuple[str, bytes, str], tuple[Message, bytes]] = LRU(capacity)
        #: The page per root URL: few (a client choosing its Host header must not fill memory).
        self.pages: LRU[tuple[str, bytes, str], tuple[Message, bytes]] = LRU(pages)
        self._locks: LRU[tuple[str, bytes, str], asyncio.Lock] = LRU(4 * capacity)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = self._key(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        store = self.pages if key[0] == "/" else self.responses
        hit = store.get(key)
        if hit is None:
            lock = self._locks.get_or_compute(key, asyncio.Lock)
            async with lock:  # one fetch and one compression per file, however many ask at once
                hit = store.get(key)
                if hit is None:
                    kept: list[Message] = []

                    async def keep(message: Message) -> None:
                        kept.append(message)

                    plain = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"accept-encoding"]
                    # a static file is the same whatever the query string (a new one per request cost a
                    # compression and a cache entry each)
                    query = b"" if key[0] != "/" else scope.get("query_string", b"")
                    await self.app({**scope, "headers": plain, "query_string": query}, receive, keep)
                    # compressed off the event loop (Brotli of Plotly's 4.6 MB bundle: 0.4 s)
                    hit = await asyncio.to_thread(_encoded, kept, key[2])
                    if hit is None:  # not a whole 200 answer: passed on as it came, not kept
                        for message in kept:
                            await send(message)
                        return
                    store.put(key, hit)
        start, body = hit
        await send({**start, "headers": list(start["headers"])})
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    def _key(scope: Scope) -> tuple[str, bytes, str] | None:
        if scope.get("type") != "http" or scope.get("method") != "GET":
            return None
        path = scope.get("path", "")
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if any(h in headers for h in ("range", "if-none-match", "if-modified-since", "if-range", "cookie",
                                      "authorization")):
            return None
        accepted = headers.get("accept-encoding", "")
        encoding = "br" if "br" in accepted else "gzip" if "gzip" in accepted else ""
        if path.startswith(STATIC_PREFIXES):
            return path, b"", encoding
        query = scope.get("query_string", b"")
        if path == "/" and not any(p in query for p in PAGE_PARAMETERS):
            # the page: the same for every visitor but for the root URL (built from these headers)
            where = "|".join(headers.get(h, "") for h in ROOT_HEADERS) + "|" + str(scope.get("root_path", ""))
            return path, where.encode("latin-1", "replace"), encoding
        return None


#: How often Gradio's queue looks for work while it has none or every slot is busy (Gradio 6.31: every 1 ms,
#: 0.026 s of server CPU per idle second here), and how often it looks for progress to send (10 ms).
QUEUE_POLL_S = 0.005
PROGRESS_POLL_S = 0.05


def calm_queue(demo: Any) -> None:
    """Lighten ``demo``'s queue (call after ``demo.queue()``; measured in bench/README.md).

    * It looks for work every :data:`QUEUE_POLL_S` and for progress every :data:`PROGRESS_POLL_S`: a queued
      call starts at most 5 ms later, and an idle server wakes a fifth as often (0.014 s of CPU per idle
      second instead of 0.026 here; a page load's few seconds of waiting counted it).
    * It no longer rebuilds the statistics of Gradio's monitoring page (unused here) after every queued call:
      a pandas table of up to 10,000 past calls, 4-9 ms of CPU per call.
    """
    queue = getattr(demo, "_queue", None)
    if queue is None:
        return
    queue.sleep_when_free = QUEUE_POLL_S
    queue.progress_update_sleep_when_free = PROGRESS_POLL_S
    if hasattr(queue, "ANAYLTICS_CACHE_FREQUENCY"):  # Gradio's spelling: recompute every that many calls
        queue.ANAYLTICS_CACHE_FREQUENCY = 2**62


def _compressible(content_type: str) -> bool:
    media = content_type.partition(";")[0].strip().lower()
    return media.startswith("text/") or media in {"application/javascript", "application/json",
                                                  "application/xml", "image/svg+xml"}


def _encoded(messages: list[Message], encoding: str) -> tuple[Message, bytes] | None:
    """A captured uncompressed ``200`` answer as ``(start message, body)`` in ``encoding``; None if not one."""
    start = next((m for m in messages if m.get("type") == "http.response.start"), None)
    bodies = [m for m in messages if m.get("type") == "http.response.body"]
    if start is None or start.get("status") != 200 or len(messages) != 1 + len(bodies):
        return None
    body = b"".join(m.get("body", b"") for m in bodies)
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in (b"content-length", b"content-encoding")]
    content_type = next((v.decode("latin-1") for k, v in headers if k.lower() == b"content-type"), "")
    if len(body) > STATIC_MAX_BYTES:
        return None
    if encoding and len(body) >= 512 and _compressible(content_type):
        if encoding == "br":
            import brotli

            body = brotli.compress(body, quality=5)
        else:
            import gzip

            body = gzip.compress(body, compresslevel=6)
        headers += [(b"content-encoding", encoding.encode()), (b"vary", b"Accept-Encoding")]
    headers.append((b"content-length", str(len(body)).encode()))
    return {"type": "http.response.start", "status": 200, "headers": headers}, body


_INSTALLED = False


def install() -> None:
    """Send files in 1 MiB pieces (idempotent).

    Starlette's ``FileResponse.chunk_size`` is 64 KiB: every piece is a hand-off to a worker
    thread and a pass through every middleware, and each page load sends the slider's 4.8 MB
    of packed panels (75 pieces; a sixth of a warm page load's server CPU).
    """
    global _INSTALLED
    if _INSTALLED:
        return
    from starlette.responses import FileResponse

    FileResponse.chunk_size = FILE_CHUNK_BYTES
    _INSTALLED = True
