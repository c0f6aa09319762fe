"""The static page on the app's own route: ``GET /in-browser/...`` serves :func:`vitviz.web.export.site_files`.

The app then offers the MAE that runs in the visitor's browser (``/in-browser/``) beside its own tabs,
with no server work after the files are sent. Its responses carry ``Cross-Origin-Opener-Policy:
same-origin`` and ``Cross-Origin-Embedder-Policy: require-corp``, so the page is cross-origin isolated
and ONNX Runtime Web runs several WebAssembly threads (the Gradio page is isolated too, with COEP
``credentialless``: :data:`vitviz.ui.serve.http.PAGE_ISOLATION`). Every file carries an ``ETag`` (a digest of its bytes) with
``Cache-Control: no-cache``: a returning visitor's browser asks again and gets ``304 Not Modified`` instead
of the model and the runtime again (26.7 MB). Everything else is passed on untouched.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from pathlib import Path

from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from .asgi import TEXT, Middleware, respond

#: Where the page is served.
PREFIX = "/in-browser/"

TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript", ".mjs": "text/javascript",
         ".css": "text/css", ".wasm": "application/wasm", ".json": "application/json",
         ".onnx": "application/octet-stream", ".jpg": "image/jpeg", ".png": "image/png",
         ".md": "text/markdown; charset=utf-8", ".txt": "text/plain; charset=utf-8"}

ISOLATION = [(b"cross-origin-opener-policy", b"same-origin"), (b"cross-origin-embedder-policy", b"require-corp"),
             (b"cross-origin-resource-policy", b"same-origin")]

_FILES: dict[str, Path | bytes] | None = None
_TAGS: dict[str, bytes] = {}
_LOCK = threading.Lock()


def files() -> dict[str, Path | bytes]:
    """The page's files, listed once (the mask tables take a few seconds: at the first request, not at import)."""
    global _FILES
    with _LOCK:
        if _FILES is None:
            from ...web.export import site_files

            _FILES = site_files()
        return _FILES


def _read(name: str) -> tuple[bytes, bytes] | None:
    """A file's bytes and its entity tag (the first 16 bytes of its BLAKE2b digest, computed once), or None."""
    source = files().get(name)
    if source is None:
        return None
    body = source if isinstance(source, bytes) else source.read_bytes()
    tag = _TAGS.get(name)
    if tag is None:
        tag = _TAGS.setdefault(name, b'"' + hashlib.blake2b(body, digest_size=16).hexdigest().encode() + b'"')
    return body, tag


def _matches(scope: Scope, tag: bytes) -> bool:
    """Whether the request's ``If-None-Match`` names ``tag`` (or ``*``)."""
    names = {v.strip().removeprefix("W/") for v in Request(scope).headers.get("if-none-match", "").split(",")}
    return tag.decode() in names or "*" in names


class InBrowserPage(Middleware):
    """ASGI middleware: ``GET``/``HEAD`` under :data:`PREFIX` answered from the page's files; all else passed on."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope.get("type") == "http" else ""
        if not (path == PREFIX.rstrip("/") or path.startswith(PREFIX)):
            await self.app(scope, receive, send)
            return
        method = scope.get("method")
        if path == PREFIX.rstrip("/"):
            await respond(send, 308, b"", [(b"location", PREFIX.encode())])
            return
        if method not in ("GET", "HEAD"):
            await respond(send, 405, b"only GET and HEAD here\n", [(b"allow", b"GET, HEAD")])
            return
        name = path[len(PREFIX):] or "index.html"
        found = await asyncio.get_running_loop().run_in_executor(None, _read, name)
        if found is None:
            await respond(send, 404, b"no such file\n", [(b"content-type", TEXT)])
            return
        body, tag = found
        kind = TYPES.get(Path(name).suffix.lower(), "application/octet-stream")
        headers = [(b"content-type", kind.encode()), (b"cache-control", b"no-cache"), (b"etag", tag), *ISOLATION]
        if _matches(scope, tag):
            await respond(send, 304, b"", headers)
            return
        await respond(send, 200, b"" if method == "HEAD" else body, headers, length=len(body))
