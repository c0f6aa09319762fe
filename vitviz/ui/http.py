"""HTTP hardening of the served app (an ASGI middleware, installed through ``launch_options``).

* every response says ``X-Content-Type-Options: nosniff``, so an uploaded file served
  back is never sniffed into HTML or script by a browser;
* an upload request carries one file (the page never sends more); a request with
  several is refused with HTTP 400;
* the requests that cost the server work outside the queue -- uploads (parsed and
  written to disk) and the page configuration (``/config``, about 1 MB, and the API
  description) -- are rate-limited per client address (``VITVIZ_CLIENT_REQUESTS`` per
  minute, bursts of an eighth of that): a script whose every attempt uploads a photo and
  opens a new client spent a core on this alone while its queued calls were refused.
  Over the limit, the answer is HTTP 429 after a one-second pause;
* text responses (the page and its 1.3 MB configuration) are gzip-compressed at level 1
  (9 ms and 110 KB; level 9 took 105 ms of the event loop per page load for 70 KB).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from types import SimpleNamespace
from typing import Any

from .. import settings
from ..cache import LRU

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

UPLOAD_PATHS = ("/gradio_api/upload", "/upload")
#: (method, path suffix) of the requests counted by the per-address rate limit.
COSTLY = (("POST", "/upload"), ("GET", "/config"), ("GET", "/gradio_api/info"))


class RateLimiter:
    """Token buckets per client address: ``per_minute`` requests a minute, bursts of ``max(10, per_minute / 8)``;
    bounded, thread-safe. Each page configuration costs the server a deep copy of about 1.3 MB."""

    def __init__(self, capacity: int = 10_000) -> None:
        self._buckets: LRU[str, tuple[float, float]] = LRU(capacity)  # address -> (tokens, time)
        self._lock = threading.Lock()

    def allow(self, address: str, per_minute: int, now: float | None = None) -> bool:
        """Take one token from ``address``'s bucket; False when it is empty."""
        now = time.monotonic() if now is None else now
        burst = max(10.0, per_minute / 8)
        with self._lock:
            tokens, last = self._buckets.get(address) or (burst, now)
            tokens = min(burst, tokens + (now - last) * per_minute / 60.0)
            ok = tokens >= 1.0
            self._buckets.put(address, (tokens - 1.0 if ok else tokens, now))
            return ok


LIMITER = RateLimiter()


def _costly(scope: Scope) -> bool:
    method, path = scope.get("method", ""), scope.get("path", "").rstrip("/")
    return any(method == m and path.endswith(p) for m, p in COSTLY)


def _allowed(address: str) -> bool:
    from .limits import exempt

    return exempt(address) or LIMITER.allow(address, settings.get("VITVIZ_CLIENT_REQUESTS"))


def _address(scope: Scope) -> str:
    from .limits import client_address

    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    client = scope.get("client") or ("unknown", 0)
    request = SimpleNamespace(client=SimpleNamespace(host=client[0]), headers=headers)
    return client_address(request, settings.trusted_proxies())


class Hardening:
    """ASGI middleware: ``nosniff`` on every response, one file per upload request."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message.get("type") == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-content-type-options"]
                headers.append((b"x-content-type-options", b"nosniff"))
                message["headers"] = headers
            await send(message)

        if _costly(scope) and not _allowed(_address(scope)):
            await asyncio.sleep(1.0)  # a flooding script waits instead of spinning
            await send_with_headers({"type": "http.response.start", "status": 429,
                                     "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
            await send({"type": "http.response.body",
                        "body": b"Too many requests from you: wait a moment (this server is shared)."})
            return
        if scope.get("method") == "POST" and scope.get("path", "").rstrip("/").endswith(UPLOAD_PATHS):
            receive = _one_file_per_request(receive)
        try:
            await self.app(scope, receive, send_with_headers)
        except _TooManyFiles:
            await send_with_headers({"type": "http.response.start", "status": 400,
                                     "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
            await send({"type": "http.response.body", "body": b"Upload one image file per request."})


class _TooManyFiles(Exception):
    pass


def _one_file_per_request(receive: Receive) -> Receive:
    """Wrap ``receive`` so that a second ``name="files"`` part in the body aborts the request."""
    seen = [0]
    tail = [b""]

    async def wrapped() -> Message:
        message = await receive()
        if message.get("type") == "http.request":
            chunk = tail[0] + message.get("body", b"")
            seen[0] += chunk.count(b'name="files"') - tail[0].count(b'name="files"')
            tail[0] = chunk[-32:]
            if seen[0] > 1:
                raise _TooManyFiles
        return message

    return wrapped


def _redact(value: Any, folder: str) -> Any:
    """``value`` with every absolute path under ``folder`` replaced by its file name."""
    if isinstance(value, str) and folder in value:
        return value.rsplit("/", 1)[-1]
    if isinstance(value, dict):
        return {k: _redact(v, folder) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, folder) for v in value]
    return value


_INSTALLED = False


def install() -> None:
    """Make the API description (``/gradio_api/info``) name default files by their file names only.

    Gradio 6.31 lists each input's default value there, with the absolute path of the
    server's cache folder (``/tmp/gradio/<hash>/chelsea.jpg``).
    """
    global _INSTALLED
    if _INSTALLED:
        return
    import functools

    from gradio.blocks import Blocks

    from . import pageconfig

    pageconfig.install()  # first: the redaction below wraps its full API description
    from gradio.utils import get_upload_folder

    original = Blocks.get_api_info

    @functools.wraps(original)
    def get_api_info(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _redact(original(self, *args, **kwargs), get_upload_folder())

    Blocks.get_api_info = get_api_info
    _INSTALLED = True
