"""A small page configuration: what the browser needs, not every component's API schema.

Gradio 6.31 puts, in the configuration of every component that is not ``skip_api``
(markdowns, plots, images...), four API descriptions: ``api_info``,
``api_info_as_input``, ``api_info_as_output`` and ``example_inputs`` (an image's
JSON schema is about 1.3 KB, so each image carried about 4.5 KB). The page itself
never reads them: they serve the API page (``/gradio_api/info``), built from the
configuration, and ``gradio_client``, which reads ``api_info`` of an endpoint's inputs and
outputs to know which values are files. Every page load deep-copies, serialises and
compresses the whole configuration, so they cost every visitor.

The same holds for values the page reads as "absent" anyway: every event carries about
25 keys, most at Gradio's default (``"trigger_only_on_failure": false``, ``"time_limit":
null``...), and every component ``"preserved_by_key": ["value"]``, which the page never
reads.

:class:`PageConfig` (ASGI middleware, in :func:`vitviz.ui.serve.middleware`) sends the page a smaller
configuration (``/config``, and the one in the page's HTML, ``window.gradio_config``), :func:`slim`:

* keeps no API schema, except, for the inputs and outputs of endpoints that are not
  private, the smallest schema that tells ``gradio_client`` whether the value is a file
  (:data:`FILE_SCHEMA`), and their ``skip_api``;
* names private events ``false`` (:data:`PRIVATE_NAME`), as both clients read a private event;
* leaves out the event keys of :data:`EVENT_DEFAULTS` when they hold the default there:
  each was checked against Gradio 6.31's page and JavaScript client, which read them
  with ``?.``, ``||``, ``??`` or as a truth value, or not at all; ``gradio_client``
  reads none of them.

Gradio keeps its full configuration, so the API description (``/gradio_api/info``, also in the
page's HTML as ``window.gradio_api_info``) and ``gradio_client`` are unchanged, except that no server
path appears in them (:func:`redact`). The same middleware serves the page module (``vitviz/ui/js``) as a cached
file and writes its tag into the page's head.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .asgi import Middleware, respond

#: Keys of a component's configuration that only the API description reads.
API_KEYS = ("api_info", "api_info_as_input", "api_info_as_output", "example_inputs")
#: Component props the page never reads.
UNREAD_PROPS = ("preserved_by_key",)
#: Component props left out when they hold this value (the page reads them as truth values).
PROP_DEFAULTS: dict[str, Any] = {"_selectable": False}
#: Props of a component type left out when they hold this value: the value the page's component takes
#: when the prop is absent (Gradio 6.31's Markdown.svelte: ``rtl`` false, ``sanitize_html`` true,
#: ``line_breaks`` false, ``header_links`` false; its Index passes the props through unchanged). About
#: 75 bytes on each of the app's 130 Markdown blocks.
TYPE_PROP_DEFAULTS: dict[str, dict[str, Any]] = {
    "markdown": {"rtl": False, "sanitize_html": True, "line_breaks": False, "header_links": False},
}
#: The smallest schema ``gradio_client`` takes for a file.
FILE_SCHEMA: dict[str, Any] = {"properties": {"path": {}, "meta": {"default": {"_type": "gradio.FileData"}}}}
#: What marks a file in a component's API schema (Gradio's ``FileData``).
FILE_TYPE = "gradio.FileData"
#: Event keys left out when they hold this value (the page reads a missing key the same way).
EVENT_DEFAULTS: dict[str, Any] = {
    "trigger_only_on_success": False, "trigger_only_on_failure": False, "trigger_after": None,
    "collects_event_data": False, "scroll_to_output": False, "js_implementation": None,
    "event_specific_args": None, "component_prop_inputs": [], "show_progress_on": None,
    "api_description": None, "batch": False, "max_batch_size": 4, "time_limit": None, "stream_every": 0.5,
    "rendered_in": None, "render_id": None, "js": None, "types": {"generator": False, "cancel": False},
    # read only as `connection === "stream"` (page) and not at all by gradio_client
    "connection": "sse",
}
#: A private event's name as both clients read "no API name" (gradio_client: ``api_name is False`` ->
#: private, without ``api_visibility``; the page: a name only when it is a string). Gradio writes
#: ``"api_name": "_private_12_update_view_3", "api_visibility": "private"`` on 240 events (10 KB).
PRIVATE_NAME = False


#: Dropdowns whose full list of choices the page receives with their first update, not in the page
#: configuration: ``elem_id`` -> how many leading choices the configuration keeps. The server's
#: component keeps every choice (Gradio checks a sent value against it), so only the bytes of a first
#: visit change. The Explain tab's class picker (1,001 choices, 27 KB) is filled by the tab's first
#: computation, which returns ``gr.update(choices=...)``.
CHOICES_LATER: dict[str, int] = {}


def choices_later(elem_id: str, keep: int = 1) -> None:
    """Leave all but the first ``keep`` choices of the dropdown ``elem_id`` out of the page configuration
    (the tab that builds it must send them with its first update)."""
    CHOICES_LATER[elem_id] = keep


def slim(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (Gradio's page configuration, in place; returned) without what the page does not read (the
    module's text). Gradio's own components lose their ``component_class_id`` (a 64-character hash each: the
    page loads them by type; a custom component's is kept)."""
    import gradio as gr

    events = config.get("dependencies", [])
    # the inputs and outputs of the endpoints that are not private
    api_ids = {i for e in events if e.get("backend_fn") is not False and e.get("api_visibility") != "private"
               for i in (*e.get("inputs", ()), *e.get("outputs", ()))}
    builtin = {name.lower() for name in dir(gr) if isinstance(getattr(gr, name), type)} | {"tabitem", "form"}
    for component in config.get("components", []):
        public = component.get("id") in api_ids
        info = component.get("api_info")
        for key in API_KEYS:
            component.pop(key, None)
        if public and isinstance(info, dict) and FILE_TYPE in json.dumps(info):
            component["api_info"] = FILE_SCHEMA
        if not public and component.get("skip_api") is False:
            del component["skip_api"]
        if component.get("type") in builtin:  # the page finds Gradio's own components by type
            component.pop("component_class_id", None)
        props = component.get("props")
        if isinstance(props, dict):
            for key in UNREAD_PROPS:
                props.pop(key, None)
            for key, default in (*PROP_DEFAULTS.items(), *TYPE_PROP_DEFAULTS.get(component.get("type"), {}).items()):
                if key in props and props[key] is default:
                    del props[key]
            keep = CHOICES_LATER.get(str(props.get("elem_id")))
            if keep is not None and isinstance(props.get("choices"), list):
                props["choices"] = props["choices"][:keep]
    cancelled = {i for event in events for i in event.get("cancels") or ()}
    for event in events:
        if event.get("api_visibility") == "private" and event.get("id") not in cancelled:
            # gradio_client names the cancelled events of a cancel by their api_name: those keep theirs
            event["api_name"] = PRIVATE_NAME
            del event["api_visibility"]
            if event.get("backend_fn") is False:  # read as a truth value by the page, not read for private events
                del event["backend_fn"]
        for key, default in EVENT_DEFAULTS.items():
            if key in event and event[key] == default and type(event[key]) is type(default):
                del event[key]
        if "batch" not in event:
            event.pop("max_batch_size", None)
    return config


def server_folders() -> tuple[str, ...]:
    """Absolute folders of this server that must not appear in answers: the checkout (or installed
    package) and the examples' folder."""
    from pathlib import Path

    import vitviz

    package = Path(vitviz.__file__).resolve().parent
    return tuple(dict.fromkeys((str(package.parent), str(package))))


def redact(value: Any, folders: tuple[str, ...]) -> Any:
    """``value`` with every string holding an absolute path under one of ``folders`` cut to its file name.

    Gradio 6.31 lists each input's default value in the API description, with the absolute path of
    the server's cache folder (``/tmp/gradio/<hash>/chelsea.jpg``) or of the checkout.
    """
    if isinstance(value, str):
        for folder in filter(None, folders):  # the path runs to a space, quote, comma or closing bracket
            value = re.sub(re.escape(folder) + r"""[^\s'",)\]]*""", lambda m: m[0].rsplit("/", 1)[-1], value)
        return value
    if isinstance(value, dict):
        return {k: redact(v, folders) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, folders) for v in value]
    return value


#: Where the page's HTML holds the configuration and the API description (Gradio's page template).
CONFIG_SCRIPT = re.compile(rb"(<script>window\.gradio_config = )(.*?)(;</script>)", re.S)
API_SCRIPT = re.compile(rb"(<script>window\.gradio_api_info = )(.*?)(;</script>)", re.S)


def _script_json(value: Any) -> bytes:
    """JSON safe inside a ``<script>`` (as Gradio writes it: ``<``, ``>``, ``&`` and ``'`` escaped)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        text = text.replace(char, code)
    return text.encode()


def rewrite(path: str, body: bytes) -> bytes:
    """The body of Gradio's answer to ``path`` as the page receives it: ``/config`` slimmed, the API description
    (``/info``) without server paths, the page's HTML with both; any other body, or one that does not parse, as is."""
    from . import files

    folders = (str(files.cache_folder()), *server_folders())
    try:
        if path.endswith("/config"):
            return json.dumps(slim(json.loads(body)), separators=(",", ":"), ensure_ascii=False).encode()
        if path.endswith("/info"):
            return json.dumps(redact(json.loads(body), folders), ensure_ascii=False).encode()
        body = CONFIG_SCRIPT.sub(lambda m: m.group(1) + _script_json(slim(json.loads(m.group(2)))) + m.group(3), body,
                                 count=1)
        return API_SCRIPT.sub(lambda m: m.group(1) + _script_json(redact(json.loads(m.group(2)), folders))
                              + m.group(3), body, count=1)
    except (ValueError, TypeError, AttributeError):
        return body


class PageConfig(Middleware):
    """ASGI middleware: the page module (``vitviz/ui/js``: ``page.js`` and ``tour.js``, 35 KB) as a file, and
    ``GET`` of the page (``/``), ``/config`` and ``/info`` answered through :func:`rewrite`.

    Inline, as ``launch(head=...)``, the page module travelled inside the page configuration: every ``/config``
    and every page's HTML (which embeds the configuration) carried it again, 11% of ``/config``. Here:

    * ``GET /vitviz/page.<hash>.js`` answers it, ``Cache-Control: immutable`` (its name changes with its
      code); :class:`.http.StaticCache`, outside, compresses it once;
    * the page's HTML (``GET /``) gets :func:`vitviz.ui.js.module_tag` at the end of its head: a
      parser-inserted classic script, so it runs before Gradio's code (a ``type="module"`` script,
      deferred), as ``head`` did. (Gradio inserts ``head`` scripts after the page has loaded, without
      waiting for a ``src`` one, so a tag in ``head`` could run after the app's ``js_on_load`` code.)

    The app is launched with ``vitviz.ui.js.page(inline=False)`` beside this middleware.
    """

    def __init__(self, app: Any) -> None:
        from .. import js

        super().__init__(app)
        self.module_path = js.MODULE_PATH + js.module_file()
        self.module = js.module().encode()
        self.tag = js.module_tag().encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        method = scope.get("method") if scope.get("type") == "http" else None
        if method in ("GET", "HEAD") and scope.get("path") == self.module_path:
            await respond(send, 200, self.module if method == "GET" else b"", length=len(self.module), headers=[
                (b"content-type", b"application/javascript; charset=utf-8"),
                (b"cache-control", b"public, max-age=31536000, immutable")])
            return
        path = scope.get("path", "").rstrip("/")
        if method != "GET" or not (path == "" or path.endswith(("/config", "/info"))):
            await self.app(scope, receive, send)
            return
        held: list = []  # the answer's start message and whether it is HTML; None: passed on as it comes
        parts: list[bytes] = []

        async def rewritten(message: Any) -> None:
            if message.get("type") == "http.response.start":
                headers = dict((k.lower(), v) for k, v in message.get("headers", []))
                if message.get("status") != 200 or b"content-encoding" in headers:
                    held.append(None)
                    await send(message)
                else:
                    held.append((message, headers.get(b"content-type", b"").startswith(b"text/html")))
                return
            if held and held[0] is None:
                await send(message)
                return
            parts.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            first, html = held[0]
            body = rewrite(path, b"".join(parts))
            at = body.find(b"</head>") if path == "" and html else -1
            if at >= 0:
                body = body[:at] + self.tag + b"\n" + body[at:]
            await respond(send, 200, body, [h for h in first.get("headers", []) if h[0].lower() != b"content-length"])

        await self.app(scope, receive, rewritten)
