"""What the door's ASGI middleware share: the wrapped app, reading a whole request body, and sending a whole
answer (types: Starlette's public ``starlette.types``)."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Send

#: The content type of a plain-text answer.
TEXT = b"text/plain; charset=utf-8"


class Middleware:
    """An ASGI middleware: what it does not answer itself goes on to ``app``, the application it wraps."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app


async def read_body(receive: Receive) -> bytes | None:
    """A request's whole body, or None when the client went away first."""
    parts = []
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


async def respond(send: Send, status: int, body: bytes | str = b"", headers: Iterable[tuple[bytes, bytes]] = (),
                  length: int | None = None) -> None:
    """Send one whole answer: ``headers`` with a ``content-length`` (``length``, else the body's: a HEAD answer
    gives the length of the body it leaves out), then ``body`` (text as UTF-8)."""
    data = body.encode() if isinstance(body, str) else body
    size = len(data) if length is None else length
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(size).encode())]})
    await send({"type": "http.response.body", "body": data})
