"""Serving vitviz on a shared host: every contact with Gradio's and Starlette's internals, in one package.

Installed by one explicit call, after ``build_demo()`` and before ``demo.launch``::

    demo = build_demo()
    serve.install(demo)                  # patches Gradio, sorts events, attaches the caps
    demo.launch(**launch_options())      # with serve.middleware(): the HTTP door

Nothing here is installed on import. It lives inside ``vitviz/ui/`` because only
``vitviz/ui/`` may import gradio (tests/test_layout.py). Each module names the Gradio
behaviour it changes, and ``tests/ui/test_serve_contacts.py`` fails if Gradio changes it:

* :mod:`.image_cache` -- ``gradio.processing_utils.save_pil_to_cache`` (atomic, memoised,
  fast PNGs) and PIL's ``Image.MAX_IMAGE_PIXELS``; ``save_img_array_to_cache`` (the MAE slider's stops);
* :mod:`.examples` -- ``gr.Examples.load_input_event`` (a click on an example photo publishes it);
* :mod:`.inputs` -- ``preprocess`` of ``Number``, ``Slider``, ``Dropdown``, ``Radio``,
  ``Image`` (sentences instead of ``error: null``);
* :mod:`.sessions` -- ``gradio.state_holder.SessionState`` (no per-session config copy);
* :mod:`.limits` -- ``gradio.queueing.Queue.push`` and the queue's internals (caps per
  session and address, cost classes read at queue time, fair order, instant answers);
* :mod:`.turns` -- ``gradio.queueing.Queue.get_events`` (a flooding client never takes a group's last slot);
* :mod:`.courtesy` -- ``gradio.context.LocalContext`` and the queue's running events, read at every module's
  forward (a global forward pre-hook): long work and a flood's calls pause while another visitor's view runs;
* :mod:`.pageconfig` -- ``Blocks.get_config_file`` and ``Blocks.get_api_info`` (a small
  page configuration; the API description whole but without server paths);
* :mod:`.http` -- ASGI middleware (door caps, one image per upload, static files from
  memory) and Starlette's ``FileResponse.chunk_size``; the queue's poll intervals;
* :mod:`.errors` -- ``Blocks.process_api`` (a sentence, not ``error: null`` and a traceback, for
  what fails in Gradio's own steps);
* :mod:`.uploads` -- Gradio's multipart parsing, repeated at the door (one image per upload,
  a disk budget per address);
* :mod:`.files` -- ``Blocks.temp_file_sets`` (every file vitviz writes is cleaned by Gradio);
* :mod:`.zerogpu` -- ``spaces.GPU`` (Hugging Face ZeroGPU), when the ``spaces`` package imports: every
  model call (:func:`vitviz.models.runner.runs_model`) runs inside it;
* :mod:`.threads` -- ``gradio.context.LocalContext`` (the event a model call runs for): each model call's
  intra-op threads by its cost class, through the runner seam on the CPU;
* :mod:`.frames` -- a route of its own for a live stream's next frames, outside the queue
  (``POST .../vitviz-live/stream/EVENT_ID``, in :func:`middleware`): it reads the queue's running events,
  their session state and ``gradio.context.LocalContext``;
* :mod:`.mcp` -- ``BlockFunction.fn``'s ``__name__``, which names each MCP tool
  (``gradio/mcp.py``, ``python app.py --mcp``).
"""

from __future__ import annotations

from typing import Any

from .costs import Cost, cost, loaded_cost, model_cost

#: Gradio versions whose internals this package was checked against (tests/ui/test_serve_contacts.py).
TESTED_GRADIO = ((6, 31),)


class UntestedGradio(RuntimeError):
    """The installed Gradio is not a version :mod:`vitviz.ui.serve` was tested with."""


def check_gradio(version: str | None = None) -> None:
    """Refuse a Gradio version whose internals were not checked (its major.minor not in :data:`TESTED_GRADIO`).

    Raises:
        UntestedGradio: with a sentence naming the installed and the tested versions.
    """
    if version is None:
        import gradio

        version = gradio.__version__
    try:
        major_minor = tuple(int(p) for p in version.split(".")[:2])
    except ValueError:
        major_minor = ()
    if major_minor not in TESTED_GRADIO:
        tested = ", ".join(f"{a}.{b}.x" for a, b in TESTED_GRADIO)
        raise UntestedGradio(
            f"vitviz's server was tested with Gradio {tested}, and Gradio {version} is installed: its "
            "patches of Gradio's internals (vitviz/ui/serve) may no longer fit. Install a tested version "
            "(pip install -r requirements.txt), or run the tests of tests/ui/test_serve_contacts.py on this "
            "one and add it to vitviz.ui.serve.TESTED_GRADIO.")


def install_process() -> None:
    """The process-wide patches of Gradio (idempotent): image cache, input checks, sessions, queue push,
    page configuration and API description, file chunk size; model calls inside ``spaces.GPU`` on ZeroGPU, else
    each on its share of the CPU's cores, or in worker processes with ``VITVIZ_WORKERS=processes`` (Ray actors with ``ray``)
    (:mod:`.model_workers`)."""
    check_gradio()
    from . import courtesy, errors, http, image_cache, inputs, limits, pageconfig, sessions, threads, turns, zerogpu

    errors.install()
    image_cache.install()
    inputs.install()
    sessions.install()
    limits.install()
    turns.install()
    courtesy.install()
    pageconfig.install()
    http.install()
    if not zerogpu.install():
        threads.install()  # on the CPU: each model call on its share of the cores
        from ... import settings

        if settings.get("VITVIZ_WORKERS") != "off":
            from . import model_workers

            model_workers.install()  # model calls in worker processes (or Ray actors) by cost class


def install(demo: Any) -> Any:
    """Make a built app (after ``demo.queue(...)``) ready for a shared host; returns ``demo``.

    Installs the process-wide patches (:func:`install_process`), then, for this app: calms the
    queue's polling, bounds its sessions (``VITVIZ_MAX_SESSIONS``), hands every file vitviz writes
    to Gradio's cleaner, sorts its queued events by their declared cost (:mod:`.costs`), renames
    private events and attaches the per-client caps (:mod:`.limits`), and names the MCP tools after
    their endpoints (:mod:`.mcp`).
    """
    from ... import settings
    from . import files, http, inputs, limits, mcp

    install_process()
    inputs.mark_dynamic_ranges(demo)
    http.calm_queue(demo)  # Gradio's queue polls every 1 ms while idle
    demo.state_session_capacity = settings.get("VITVIZ_MAX_SESSIONS")
    if files.WRITTEN not in demo.temp_file_sets:
        demo.temp_file_sets.append(files.WRITTEN)  # every file vitviz writes goes to Gradio's cleaner
    limits.apply(demo)
    mcp.name_tools(demo)  # MCP tools (python app.py --mcp) named as their endpoints
    return demo


def middleware() -> list:
    """Starlette middleware for ``demo.launch(app_kwargs={"middleware": ...})``, outermost first:
    refusals before any work; a live stream's frames outside the queue (:mod:`.frames`, before gzip: its
    pictures are JPEGs); the front end's files from memory; text gzip-compressed; the page module
    (``vitviz/ui/js``) as a cached file, its tag in the page (launch with ``js.page(inline=False)``)."""
    from starlette.middleware import Middleware
    from starlette.middleware.gzip import GZipMiddleware

    from . import frames, http, in_browser, page_module

    return [Middleware(http.Hardening), Middleware(frames.LiveFrames), Middleware(in_browser.InBrowserPage),
            Middleware(http.StaticCache),
            Middleware(GZipMiddleware, minimum_size=2048, compresslevel=1, exclude_content_types=http.NOT_GZIPPED),
            Middleware(page_module.PageModule)]


def launch_without_self_check() -> dict[str, Any]:
    """``demo.launch`` keywords that skip Gradio's own check that the started app answers on localhost.

    Gradio asks for its page once (``networking.url_ok``: a HEAD with a 3 s timeout; one timeout and the
    start fails with "When localhost is not accessible, a shareable link must be created"). On shared, busy
    cores the app's first page can take longer than that, so the start failed for no fault of the app
    (tests and benchmarks under load); and where it passes, it renders the page once for nobody. The
    launch's private ``_frontend`` flag guards only that check (tests/ui/test_serve_contacts.py).
    """
    return {"_frontend": False}


def public() -> bool:
    """True in public mode (``VITVIZ_PUBLIC=1``, or auto on a Hugging Face Space): the app refuses what a
    stranger must not do (local model files, large downloads, long measurements)."""
    from ... import settings

    return settings.public()


__all__ = ["Cost", "UntestedGradio", "check_gradio", "cost", "install", "install_process", "middleware",
           "loaded_cost", "model_cost", "public"]
