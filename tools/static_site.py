"""The exported static page (``python -m vitviz export-web``) served from a folder and opened in Chromium.

One home for what the page's test (tests/web/test_static_page.py) and its benchmark (bench/web_page.py) both
do: serve the folder with ``python -m http.server`` on a loopback port (with ``isolated``, adding the
cross-origin isolation headers the app's ``/in-browser/`` route sends, so that ONNX Runtime Web may run
threads; with ``headers``, any others, such as a Content-Security-Policy), and open the page in headless
Chromium with a fake camera, waiting until the page says it is ready (``body[data-ready='1']``: the model
loaded and the first reconstruction drawn).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tools.appserver import browser_page, stop, wait_for_page
from tools.fake_camera import camera_args

#: The cross-origin isolation headers (``isolated``).
ISOLATION = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp"}
#: ``python -m http.server`` that also sends headers with every answer (argv: port, folder, the headers as JSON).
HEADERS_SERVER = """
import functools, http.server, json, sys
class H(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        for name, value in json.loads(sys.argv[3]).items():
            self.send_header(name, value)
        super().end_headers()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), functools.partial(H, directory=sys.argv[2])).serve_forever()
"""


@contextmanager
def serving_folder(folder: Path, port: int, isolated: bool = False,
                   headers: dict[str, str] | None = None) -> Iterator[str]:
    """Serve ``folder`` on ``127.0.0.1:port`` (sending :data:`ISOLATION` with ``isolated``, and ``headers``); yield
    its URL once it answers; stop the server after.

    Raises:
        RuntimeError: the server exited or did not answer within 10 s.
    """
    sent = {**(ISOLATION if isolated else {}), **(headers or {})}
    cmd = ([sys.executable, "-c", HEADERS_SERVER, str(port), str(folder), json.dumps(sent)] if sent else
           [sys.executable, "-m", "http.server", str(port), "-b", "127.0.0.1", "-d", str(folder)])
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        try:
            wait_for_page(url, server, timeout=10, poll=0.1)
        except RuntimeError as exc:
            raise RuntimeError(f"the static server on port {port} {exc}") from None
        yield url
    finally:
        stop(server, timeout=10)


@contextmanager
def opened_page(url: str, y4m: Path, listeners: dict[str, Callable[[Any], Any]] | None = None,
                ready_ms: int = 180_000) -> Iterator[tuple[Any, Any]]:
    """Open ``url`` in headless Chromium at 1280x720 with a fake camera playing ``y4m``; yield
    ``(browser, page)`` once the page is ready; close the browser after.

    Args:
        listeners: page events to listen to from the start (``{"request": fn}``), before the page loads.
        ready_ms: how long the page may take to load its model and draw its first reconstruction.
    """
    with browser_page(args=tuple(camera_args(y4m))) as page:
        for event, fn in (listeners or {}).items():
            page.on(event, fn)
        page.goto(url)
        page.wait_for_selector("body[data-ready='1']", timeout=ready_ms)
        yield page.context.browser, page
