"""The page module (``vitviz/ui/js``) served as a cached file, its tag written into the page's head."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .http import Message, Receive, Scope, Send


class PageModule:
    """ASGI middleware: the page module (``vitviz/ui/js``: ``page.js`` and ``tour.js``, 35 KB) as a file.

    Inline, as ``launch(head=...)``, it travelled inside the page configuration: every ``/config`` and
    every page's HTML (which embeds the configuration) carried it again, 11% of ``/config``. Here:

    * ``GET /vitviz/page.<hash>.js`` answers it, ``Cache-Control: immutable`` (its name changes with its
      code); :class:`StaticCache`, outside, compresses it once;
    * the page's HTML (``GET /``) gets :func:`vitviz.ui.js.module_tag` at the end of its head: a
      parser-inserted classic script, so it runs before Gradio's code (a ``type="module"`` script,
      deferred), as ``head`` did. (Gradio inserts ``head`` scripts after the page has loaded, without
      waiting for a ``src`` one, so a tag in ``head`` could run after the app's ``js_on_load`` code.)

    The app is launched with ``vitviz.ui.js.page(inline=False)`` beside this middleware.
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        from .. import js

        self.app = app
        self.path = js.MODULE_PATH + js.module_file()
        self.code = js.module().encode()
        self.tag = js.module_tag().encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if path == self.path:
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"application/javascript; charset=utf-8"),
                (b"cache-control", b"public, max-age=31536000, immutable"),
                (b"content-length", str(len(self.code)).encode())]})
            await send({"type": "http.response.body", "body": self.code if scope["method"] == "GET" else b""})
            return
        if path != "/" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        start: list[Message] = []  # the page's start message, held until its body is whole
        parts: list[bytes] = []
        passing = [False]

        async def with_tag(message: Message) -> None:
            if passing[0]:
                await send(message)
            elif message.get("type") == "http.response.start":
                headers = dict((k.lower(), v) for k, v in message.get("headers", []))
                if (message.get("status") != 200 or b"content-encoding" in headers
                        or not headers.get(b"content-type", b"").startswith(b"text/html")):
                    passing[0] = True  # not the page as HTML: passed on as it comes
                    await send(message)
                else:
                    start.append(message)
            else:
                parts.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                body = b"".join(parts)
                at = body.find(b"</head>")
                if at >= 0:
                    body = body[:at] + self.tag + b"\n" + body[at:]
                headers = [(k, v) for k, v in start[0].get("headers", []) if k.lower() != b"content-length"]
                await send({**start[0], "headers": [*headers, (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, with_tag)
