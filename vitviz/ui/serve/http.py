"""The door of the served app: ordinary ASGI middleware on the app Gradio serves (``launch(app_kwargs=...)``).

* every response says ``X-Content-Type-Options: nosniff``, so an uploaded file served back is never
  sniffed into HTML or script by a browser;
* the page (every HTML answer outside ``/in-browser/``, which sends its own) is cross-origin isolated
  (:data:`PAGE_ISOLATION`): the MAE tab's in-page model (``vitviz/web/static/mae_tab.js``) may then run several
  WebAssembly threads;
* an upload carries one file, an image (or a video the live section plays), within the address's disk
  budget (:mod:`.uploads`), checked before Gradio writes anything;
* every other request body is capped at ``VITVIZ_MAX_REQUEST`` (a queue join needs kilobytes), except a
  live-camera frame (``VITVIZ_MAX_FRAME``: a stream's first frame rides in its queue join, each next one to
  ``/stream/EVENT_ID``) and an MCP message (an image inline);
* queue joins are capped per session and per client address, expensive ones on their own (:mod:`.limits`),
  and enter Gradio's queue only as fast as their class runs them, least-recently-served address first
  (:mod:`.admission`: the others wait here);
* the requests that cost the server work outside the queue -- uploads and the page configuration
  (``/config``, the API description) -- are rate-limited per client address (``VITVIZ_CLIENT_REQUESTS``
  per minute, bursts of an eighth of that), and so are the front end's files (:data:`ASSETS_PER_MINUTE`);
  over the limit, HTTP 429 after a one-second pause. A file the address had uploaded already (``gradio_client``
  sends it again for every call) gives its request back, as it gives back its disk budget (:mod:`.uploads`);
* a ``session_hash`` is at most :data:`.clients.MAX_SESSION_ID` characters;
* the front end's files and the page are answered from memory once compressed (:class:`StaticCache`).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
from typing import Any

from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ... import settings
from ...cache import LRU
from ...ledger import RateLimiter
from ...models.costs import Cost
from . import uploads
from .admission import ADMISSION, Refused
from .asgi import TEXT, Middleware, read_body, respond
from .clients import BAD_SESSION, MAX_SESSION_ID, client_address, exempt, long_session
from .limits import JOINS, REFUSAL_PAUSE_S, CompletedEvents, of_join
from .uploads import capped

UPLOAD_PATHS = ("/gradio_api/upload", "/upload")
#: (method, path suffix) of the requests counted by the per-address rate limit.
COSTLY = (("POST", "/upload"), ("GET", "/config"), ("GET", "/gradio_api/info"))
#: A queue join: the page's and ``gradio_client``'s (``/queue/join``), or the HTTP API's (``/call/API``).
JOIN = re.compile(r"/queue/join$|/call/[\w-]+$")
#: The end of an HTTP API call's event stream (``GET /call/API/EVENT_ID``).
CALL_STREAM = re.compile(r"/call/[\w-]+/([0-9a-zA-Z_-]{1,64})$")
#: A live stream's next frame: ``POST .../stream/EVENT_ID`` (Gradio's route for streamed chunks, and vitviz's).
STREAM_CHUNK = re.compile(r"/stream/[0-9a-f]{8,64}$")
#: What a camera frame looks like inside a join's JSON (a data URL): only such a join may pass VITVIZ_MAX_REQUEST.
FRAME_MARK = b'"data:image/'
TOO_LARGE_REQUEST = "This request is larger than any the app needs."
BAD_JOIN = "There is no endpoint with this function index, or the request cannot be read."


LIMITER = RateLimiter()
#: The front end's files (:data:`STATIC_PREFIXES`) one client address may fetch: a first visit fetches about
#: 120 at once (then its browser keeps them), so two visits' worth at once and as many a minute.
ASSETS_PER_MINUTE = 240
ASSETS = RateLimiter()


def _allowed(scope: Scope, address: str) -> bool:
    """False for a costly request (:data:`COSTLY`) or a front-end file asked beyond this address's rate."""
    if exempt(address):
        return True
    method, path = scope.get("method", ""), scope.get("path", "").rstrip("/")
    if any(method == m and path.endswith(p) for m, p in COSTLY) and not LIMITER.allow(
            address, settings.get("VITVIZ_CLIENT_REQUESTS")):
        return False
    if scope.get("method") == "GET" and scope.get("path", "").startswith(STATIC_PREFIXES):
        return ASSETS.allow(address, ASSETS_PER_MINUTE, burst=ASSETS_PER_MINUTE)
    return True


def _body_limit(path: str) -> int:
    """The largest body of a request to ``path`` that is not an upload nor a join."""
    limit = settings.get("VITVIZ_MAX_REQUEST")
    if "/mcp" in path:  # an MCP message may carry an image inline
        limit = max(limit, settings.max_upload_bytes() + uploads.SLACK_BYTES)
    if STREAM_CHUNK.search(path):
        limit = max(limit, settings.get("VITVIZ_MAX_FRAME"))
    return limit


async def _read_join(scope: Scope, receive: Receive) -> bytes | None:
    """A join's body, read whole (None: the client left): at most ``VITVIZ_MAX_FRAME`` bytes when it carries a
    camera frame (a stream's first), ``VITVIZ_MAX_REQUEST`` otherwise (HTTP 413)."""
    limit = settings.get("VITVIZ_MAX_REQUEST")
    body = await read_body(capped(scope, receive, max(limit, settings.get("VITVIZ_MAX_FRAME")), TOO_LARGE_REQUEST))
    if body is not None and len(body) > limit and FRAME_MARK not in body:
        raise uploads.RefusedUpload(413, TOO_LARGE_REQUEST)
    return body


def _session(body: bytes) -> tuple[str, Any]:
    """The ``session_hash`` a join's JSON names ("" when none or not JSON), and its ``fn_index`` (or None)."""
    try:
        found = json.loads(body)
        session, index = found.get("session_hash"), found.get("fn_index")
    except (ValueError, AttributeError):
        return "", None
    return (session if isinstance(session, str) else ""), index


async def _refuse(send: Send, status: int, text: str, kind: bytes = TEXT) -> None:
    """A refusal, answered after :data:`.limits.REFUSAL_PAUSE_S` (a flooding script waits instead of spinning);
    called outside every lock, so nobody waits behind a refusal."""
    await asyncio.sleep(REFUSAL_PAUSE_S)
    await respond(send, status, text, [(b"content-type", kind)])


#: Headers that make the app's page cross-origin isolated (``self.crossOriginIsolated``), which WebAssembly threads
#: need. COEP ``credentialless`` rather than ``require-corp``: a cross-origin file the page loads without CORS (none
#: in the app itself: Gradio's fonts, Plotly and the in-browser model are the app's own) still loads, without the
#: visitor's cookies, instead of needing a ``Cross-Origin-Resource-Policy`` header. Where the page is embedded in
#: another site's frame (a Hugging Face Space inside huggingface.co, which is not isolated) the frame is not isolated
#: either: the tab then runs its model on one thread, as it did before these headers.
PAGE_ISOLATION = ((b"cross-origin-opener-policy", b"same-origin"), (b"cross-origin-embedder-policy", b"credentialless"))


def _isolated(headers: list) -> list:
    """An HTML answer's headers with :data:`PAGE_ISOLATION` added (unless it says its own: ``/in-browser/``)."""
    names = {k.lower() for k, _ in headers}
    kind = next((v for k, v in headers if k.lower() == b"content-type"), b"")
    if not kind.lower().startswith(b"text/html") or b"cross-origin-embedder-policy" in names:
        return headers
    return [*headers, *(h for h in PAGE_ISOLATION if h[0] not in names)]


class Hardening(Middleware):
    """ASGI middleware: the door (the module's text)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return

        async def nosniff(message: Message) -> None:
            if message.get("type") == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-content-type-options"]
                message["headers"] = _isolated([*headers, (b"x-content-type-options", b"nosniff")])
            await send(message)

        if long_session(scope):
            await respond(nosniff, 400, BAD_SESSION, [(b"content-type", TEXT)])
            return
        if scope.get("method") == "HEAD" and scope.get("path", "") in ("", "/"):
            # Gradio's launch asks for the page once (a HEAD, 3 s timeout: a start under load failed): the page is
            # there when the app answers, so nothing is rendered for nobody
            await respond(nosniff, 200, b"", [(b"content-type", b"text/html; charset=utf-8")])
            return
        address = client_address(Request(scope), settings.trusted_proxies())
        if not _allowed(scope, address):
            await _refuse(nosniff, 429, "Too many requests from you: wait a moment (this server is shared).")
            return
        method, path = scope.get("method"), scope.get("path", "").rstrip("/")
        try:
            if method == "POST" and JOIN.search(path):
                await self._join(scope, receive, nosniff, address)
                return
            if method == "GET" and path.endswith("/queue/data"):
                await self.app(scope, receive, CompletedEvents(send=nosniff))
                return
            if method == "GET" and CALL_STREAM.search(path):
                try:
                    await self.app(scope, receive, nosniff)
                finally:
                    JOINS.completed(CALL_STREAM.search(path).group(1))
                return
            if method in ("POST", "PUT", "PATCH"):
                if path.endswith(UPLOAD_PATHS):
                    JOINS.note(address)  # a visitor's upload: live streams give way (limits.others_busy)
                    receive = uploads.checked_upload(scope, receive, address, exempt(address), lambda: LIMITER.allow(
                        address, settings.get("VITVIZ_CLIENT_REQUESTS"), take_tokens=-1.0))
                else:
                    receive = capped(scope, receive, _body_limit(path), TOO_LARGE_REQUEST)
            await self.app(scope, receive, nosniff)
        except uploads.RefusedUpload as refused:
            await respond(nosniff, refused.status, refused.message, [(b"content-type", TEXT)])

    async def _join(self, scope: Scope, receive: Receive, send: Send, address: str) -> None:
        """A queue join, admitted by the caps of :mod:`.limits` (refused: HTTP 503, as Gradio's full queue)."""
        body = await _read_join(scope, receive)
        if body is None:  # the client left
            return
        session, index = _session(body)
        if len(session) > MAX_SESSION_ID:
            await _refuse(send, 400, BAD_SESSION)
            return
        path = scope.get("path", "").rstrip("/")
        cls = of_join(index, path.rpartition("/")[2] if "/call/" in path else None)
        ticket, refusal = JOINS.admit(session or f"address:{address}", address, live=FRAME_MARK in body,
                                      heavy=cls is Cost.HEAVY)
        token, left = None, ticket is None
        if ticket is not None:
            try:
                token, left = await _admitted(cls, address, receive)  # left: the client closed the request
            except Refused as full:
                refusal, left = str(full), True
            if left:
                JOINS.answered(ticket, None)
        if refusal:
            await _refuse(send, 503, json.dumps({"detail": refusal}), b"application/json")
        if left:
            return
        replay = [{"type": "http.request", "body": body, "more_body": False}]

        async def replayed() -> Message:
            return replay.pop() if replay else await receive()

        answer: dict[str, Any] = {"status": 0, "body": b""}

        async def watched(message: Message) -> None:
            if message.get("type") == "http.response.start":
                answer["status"] = message.get("status", 0)
                if answer["status"] >= 400:  # a malformed join (no such endpoint, wrong values): a script waits
                    await asyncio.sleep(REFUSAL_PAUSE_S)
            elif message.get("type") == "http.response.body" and len(answer["body"]) < 4096:
                answer["body"] += message.get("body", b"")
            await send(message)

        event_id = None
        try:
            await self.app(scope, replayed, watched)
            if answer["status"] == 200:
                found = json.loads(answer["body"] or b"{}").get("event_id")
                event_id = found if isinstance(found, str) else None
                if event_id is not None:
                    ADMISSION.named(cls, token, event_id)
        except ValueError:
            pass
        except Exception:  # noqa: BLE001 - Gradio failed on the join itself (an unknown fn_index: KeyError)
            if answer["status"]:
                raise
            await _refuse(send, 400, json.dumps({"detail": BAD_JOIN}), b"application/json")
        finally:
            if event_id is None:  # the join did not enter Gradio's queue: its place goes to the next
                ADMISSION.give_back(cls, token)
            JOINS.answered(ticket, event_id)


async def _admitted(c: Cost | None, address: str, receive: Receive) -> tuple[int | None, bool]:
    """Wait at the door for the join's turn (:mod:`.admission`): ``(token, False)``, or ``(None, True)`` when
    the client closed the request first (its place is given back). Raises :class:`.admission.Refused`."""
    entering = asyncio.ensure_future(ADMISSION.enter(c, address))
    await asyncio.sleep(0)  # no one waiting and room: let in at once
    leaving: asyncio.Future | None = None
    while not entering.done():
        leaving = leaving or asyncio.ensure_future(receive())
        await asyncio.wait((entering, leaving), return_when=asyncio.FIRST_COMPLETED)
        if not entering.done() and leaving.done():
            if leaving.result().get("type") == "http.disconnect":
                entering.cancel()
                return None, True
            leaving = None
    if leaving is not None:
        leaving.cancel()
    return entering.result(), False


#: Content types the app's gzip leaves alone: Starlette's list (images, archives, event streams) and
#: binary files such as the slider's packed PNG panels (compressed already: 4.8 MB per page load).
NOT_GZIPPED: tuple[str, ...] = (*DEFAULT_EXCLUDED_CONTENT_TYPES, "application/octet-stream")
#: Path prefixes of the files of Gradio's front end and of vitviz's page module (:class:`~vitviz.ui.serve.pageconfig.PageConfig`), which do
#: not change while the server runs.
STATIC_PREFIXES = ("/assets/", "/static/", "/vitviz/")
#: Query parameters of Gradio's page route that change the page (vitviz's own, ``tab=`` etc., do not).
PAGE_PARAMETERS = (b"page=", b"deep_link=")
#: Request headers the page's root URL is built from (with the scope's ``root_path``).
ROOT_HEADERS = ("host", "x-forwarded-host", "x-forwarded-proto", "x-forwarded-port", "x-forwarded-prefix",
                "forwarded")
#: Largest response :class:`StaticCache` keeps.
STATIC_MAX_BYTES = 16 * 1024 * 1024  # Plotly's bundle is 4.6 MB


class StaticCache(Middleware):
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

    def __init__(self, app: ASGIApp, capacity: int = 512,
                 pages: int = 8) -> None:
        super().__init__(app)
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
        path, headers = scope.get("path", ""), Request(scope).headers
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
            body = gzip.compress(body, compresslevel=6)
        headers += [(b"content-encoding", encoding.encode()), (b"vary", b"Accept-Encoding")]
    headers.append((b"content-length", str(len(body)).encode()))
    return {"type": "http.response.start", "status": 200, "headers": headers}, body
