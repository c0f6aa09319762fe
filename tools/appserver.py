"""Start the app on a free loopback port for tests, benchmarks and screenshots; drive Debian's Chromium."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Debian's Chromium, driven by Playwright (headless, no sandbox, no GPU).
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--no-first-run"]


def stop(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """End a process this code started: terminate, wait ``timeout`` s, then kill (and reap) it."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def client_temp_folder() -> Iterator[Path]:
    """This process's temp folder moved, for the duration, into a fresh folder removed on exit.

    gradio_client (2.7) downloads every output file through ``<temp>/<40 hex digits>/`` and moves the file
    on, but never removes that folder: a test run or a benchmark left thousands of empty folders in ``/tmp``
    (4,647 after one session). Tests and benchmarks that call the app through ``gradio_client`` run inside
    this; apps they start keep their own temp folder (their environment is not touched).
    """
    old = tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="vitviz-client-") as folder:
        tempfile.tempdir = folder
        try:
            yield Path(folder)
        finally:
            tempfile.tempdir = old


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_page(url: str, proc: subprocess.Popen, timeout: float, poll: float = 0.5) -> None:
    """Ask for ``url`` every ``poll`` s until it answers 200, while the server process ``proc`` runs.

    Raises:
        RuntimeError: ``exited early`` (``proc`` ended) or ``did not start in time`` (``timeout`` s passed).
    """
    deadline = time.time() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError("exited early")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        if time.time() > deadline:
            raise RuntimeError("did not start in time")
        time.sleep(poll)


@contextmanager
def running_app(log: Path | None = None, timeout: float = 300.0, args: tuple[str, ...] = (),
                command: list[str] | None = None, **env: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run ``python app.py`` on a free loopback port; yield ``(url, process)``; stop it after.

    Args:
        args: ``app.py``'s own options (``--mcp``, ``--model NAME=PATH``).
        log: file for the app's output (default: discarded).
        timeout: seconds to wait for the first page.
        command: what starts the app (default ``python app.py``; ``args`` follow it).
        env: extra environment variables.
    """
    port = free_port()
    full_env = dict(os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1",
                    GRADIO_ANALYTICS_ENABLED="False", **env)
    out = log.open("w") if log is not None else subprocess.DEVNULL
    proc = subprocess.Popen([*(command or [sys.executable, "app.py"]), *args], cwd=ROOT, env=full_env, stdout=out,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        try:
            wait_for_page(url, proc, timeout)
        except RuntimeError as exc:
            raise RuntimeError(f"the app {exc}" + (f":\n{log.read_text()}" if log else "")) from None
        yield url, proc
    finally:
        stop(proc)
        if log is not None:
            out.close()


@contextmanager
def browser_page(viewport: tuple[int, int] = (1280, 720), args: tuple[str, ...] = (),
                 failure_shot: Path | None = None) -> Iterator:
    """A Playwright page in headless Debian Chromium (:data:`LAUNCH_ARGS` and ``args``); the browser is
    closed after. With ``failure_shot``, an exception inside saves a full-page screenshot there first.

    ``page.context.browser`` is the browser (for a fresh context, a second page).
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS + list(args))
        try:
            page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
            try:
                yield page
            except Exception:
                if failure_shot is not None:
                    page.screenshot(path=str(failure_shot), full_page=True)
                raise
        finally:
            browser.close()


@contextmanager
def serving_tab(title: str, build, tab_id: str | None = None) -> Iterator[str]:  # noqa: ANN001 - build(demo)
    """Serve one tab (``build(demo)`` inside ``gr.Tab(title)``) in-process on a free port; yield its URL.

    With ``tab_id`` the tab sits in ``gr.Tabs`` under that id, as in the app (for browser code that
    finds a tab by its id). The hub is offline (``HF_HUB_OFFLINE=1``) while it serves. A live stream's frames
    have their own route (:mod:`vitviz.ui.serve.frames`), as in the app.
    """
    import gradio as gr

    from starlette.middleware import Middleware

    from vitviz.ui.js import page  # the page module its browser code calls into
    from vitviz.ui.serve import contacts, frames

    # the app's image writer (write once, atomically): Gradio's own rewrites a file in place when an
    # answer repeats an earlier image, and a download of it can then read a truncated file
    contacts.install()

    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    with gr.Blocks(analytics_enabled=False) as demo:
        if tab_id is None:
            with gr.Tab(title):
                build(demo)
        else:
            with gr.Tabs(), gr.Tab(title, id=tab_id):
                build(demo)
    demo.queue(default_concurrency_limit=2)
    port = free_port()
    try:
        demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True, **page(),
                    app_kwargs={"middleware": [Middleware(frames.LiveFrames)]})  # a live stream's own route
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()
        if old is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = old
