"""Serving vitviz on a shared host, through Gradio's public API.

Installed by one explicit call, after ``build_demo()`` and before ``demo.launch``::

    demo = serve.install(build_demo())   # the few named contacts (.contacts), model calls by cost class
    demo.launch(**launch_options())      # with serve.middleware(): the door, as ASGI middleware

Nothing here is installed on import. It lives inside ``vitviz/ui/`` because only ``vitviz/ui/`` may import
gradio (tests/test_layout.py). What it uses of Gradio:

* listener keywords: each event's ``concurrency_id`` and ``concurrency_limit`` from its handler's declared
  cost (:mod:`vitviz.models.costs`, given by :class:`vitviz.ui.binder.Binder`);
* ``demo.queue(max_size=VITVIZ_MAX_QUEUE)``, ``launch(max_file_size=..., state_session_capacity=
  VITVIZ_MAX_SESSIONS, app_kwargs={"middleware": middleware()})``;
* ASGI middleware on the app Gradio serves (:func:`middleware`): the door (:mod:`.http`: body caps, rates,
  uploads, per-client queue caps from the queue's HTTP protocol, :mod:`.limits`; joins let into the queue
  as fast as each class runs them, least-recently-served address first, :mod:`.admission`), a live stream's frames
  (:mod:`.frames`), the page's smaller configuration (:mod:`.pageconfig`), static files from memory;
* :mod:`.contacts`: the five changes Gradio has no public way for, each named with why and what Gradio would
  need, and tested (``tests/ui/test_serve_contacts.py``; ``tools/gradio_contacts.py`` counts them);
* model calls (:func:`vitviz.models.runner.runs_model`) inside ``spaces.GPU`` on ZeroGPU (:mod:`.zerogpu`),
  else on their share of the cores (:mod:`vitviz.models.threads`) or in worker processes (``VITVIZ_WORKERS=processes``,
  :mod:`.model_workers`), by the class of the call (:func:`vitviz.models.costs.current`).
"""

from __future__ import annotations

from typing import Any

#: The Gradio versions vitviz's server takes: the requirement of the ``app`` extra (pyproject.toml).
GRADIO_RANGE = ">=6.31,<7"


class UntestedGradio(RuntimeError):
    """The installed Gradio is outside :data:`GRADIO_RANGE`."""


def check_gradio(version: str | None = None) -> None:
    """Refuse a Gradio outside :data:`GRADIO_RANGE` (the installed one when ``version`` is None).

    Raises:
        UntestedGradio: with a sentence naming the installed version and the range.
    """
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    if version is None:
        import gradio

        version = gradio.__version__
    try:
        taken = SpecifierSet(GRADIO_RANGE).contains(Version(version), prereleases=True)
    except InvalidVersion:
        taken = False
    if not taken:
        raise UntestedGradio(f"vitviz's server takes Gradio {GRADIO_RANGE}, and Gradio {version} is installed: "
                             'install one in that range (pip install "vitviz[app]").')


def install_process() -> None:
    """The process-wide part (idempotent): the contacts (:mod:`.contacts`); the memory malloc keeps after it
    was freed handed back to the system now and then (:mod:`.memory`); model calls inside ``spaces.GPU`` on
    ZeroGPU, else each on its share of the CPU's cores, or in worker processes (``VITVIZ_WORKERS``: by default on a
    public host; Ray actors with ``ray``) (:mod:`.model_workers`)."""
    check_gradio()
    from ...models import threads
    from . import contacts, memory, zerogpu

    contacts.install()
    memory.start()
    if not zerogpu.install():
        threads.install()  # on the CPU: each model call on its share of the cores
        from ... import settings

        if settings.workers() != "off":
            from . import model_workers

            model_workers.install()  # model calls in worker processes (or Ray actors) by cost class


def install(demo: Any) -> Any:
    """Make a built app ready for a shared host (:func:`install_process`); returns ``demo``. Its events carry
    their groups already (:mod:`vitviz.models.costs`), which the door learns here (one served app per process);
    the rest is given to ``demo.launch`` (:func:`vitviz.ui.app.launch_options`)."""
    install_process()
    from .limits import serve_events

    serve_events(demo.config)  # the door's per-address cap on expensive joins knows each event's class
    return demo


def middleware() -> list:
    """Starlette middleware for ``demo.launch(app_kwargs={"middleware": ...})``, outermost first: refusals
    before any work; a live stream's frames outside the queue (:mod:`.frames`, before gzip: its pictures are
    JPEGs); the in-browser page; the front end's files from memory; text gzip-compressed; the page's smaller
    configuration, and the page module (``vitviz/ui/js``) as a cached file, its tag in the page."""
    from starlette.middleware import Middleware
    from starlette.middleware.gzip import GZipMiddleware

    from . import frames, http, in_browser, pageconfig

    return [Middleware(http.Hardening), Middleware(frames.LiveFrames), Middleware(in_browser.InBrowserPage),
            Middleware(http.StaticCache),
            Middleware(GZipMiddleware, minimum_size=2048, compresslevel=1, exclude_content_types=http.NOT_GZIPPED),
            Middleware(pageconfig.PageConfig)]


__all__ = ["UntestedGradio", "check_gradio", "install", "install_process", "middleware"]
