"""Assemble the Gradio app from its tabs (:data:`TABS`; adding one: docs/architecture.md, "Where a new
capability goes"). Tabs are lazy (:mod:`vitviz.ui.lazy`): the ``demo`` a tab gets runs its ``demo.load`` events
when the tab is first shown, so a page load computes only the tab it opens on.
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from .. import settings
from ..assets import default_example
from ..views.urlstate import from_request
from . import shared_image
from .common import in_page
from . import (attention_tab, beit_tab, compute_tab, css, explain_tab, features_tab, heads_tab, intervene_tab, js,
               lazy, mae_tab, patches_tab, pretraining_tab, serve, share, swin_tab, tour, urlstate)

TITLE = "vitviz — see how Vision Transformers and Masked Autoencoders work"
#: What each tab is for, one line each (the intro lists them in the tabs' order).
PURPOSES: dict[str, str] = {
    "mae": "hide patches; a masked autoencoder paints them back",
    "patches": "how an image becomes a sequence of tokens",
    "attention": "click a patch to see where each head looks",
    "heads": "every head at once, sorted by what it does",
    "explain": "which patches a decision rests on, and a test",
    "intervene": "switch heads off and watch the answer; the logit lens",
    "features": "what each layer's tokens hold",
    "pretraining": "few labels: pretrained features vs from scratch",
    "beit": "visual tokens, and guessing the hidden ones",
    "swin": "attention inside windows that shift",
    "compute": "why windowed attention scales and global does not",
}


def intro(tabs: tuple = ()) -> str:
    """The page's intro: the title line and one line per tab (its label and :data:`PURPOSES` entry)."""
    lines = [f"- **{t.LABEL}**: {PURPOSES[t.TAB_ID]}" for t in tabs]
    return ("# vitviz\nSee how Vision Transformers and masked image modeling work, on your own photos; everything "
            "runs locally, and each tab starts on a model that needs no download.\n\n" + "\n".join(lines))


#: The tabs, in the order they appear. Each module has ``TAB_ID``, ``LABEL`` and ``build(demo) -> Binder``.
TABS = (mae_tab, patches_tab, attention_tab, heads_tab, explain_tab, intervene_tab, features_tab, pretraining_tab,
        beit_tab, swin_tab, compute_tab)
#: Tab ids, as the URL names them (``?tab=...``).
TAB_IDS: tuple[str, ...] = tuple(t.TAB_ID for t in TABS)


def build_demo() -> gr.Blocks:
    """Build the whole app (no model is loaded until a request needs one). Serving it to others needs
    :func:`vitviz.ui.serve.install` too (``app.py`` calls it): the named contacts and model calls by cost class.

    Raises:
        ValueError: a ``VITVIZ_*`` setting with a value it does not accept (naming it).
    """
    problems = settings.check()
    if problems:
        raise ValueError("invalid settings: " + "; ".join(problems))
    _log_to_stderr()
    # One intra-op thread count for every computation, set once (results never depend on who set it).
    import torch

    torch.set_num_threads(settings.threads())
    # Files handed to the browser (panels, exports, CSVs) are deleted after VITVIZ_CACHE_SECONDS.
    cache_age = settings.get("VITVIZ_CACHE_SECONDS")
    with gr.Blocks(title=TITLE, analytics_enabled=False, delete_cache=(cache_age, cache_age)) as demo:
        gr.Markdown(intro(TABS), elem_id="vitviz-intro", elem_classes=["vitviz-secondary"])
        # the tour's start button and the share line, at the right of the tab buttons (vitviz/ui/css/app.css)
        with gr.Row(elem_id="vitviz-tools", equal_height=True):
            tour.build(TAB_IDS)  # the guided tour's bar (vitviz.ui.tour; the page module runs it)
            first = default_example()
            share.build(Path(first).stem if first else None)  # the link and what it carries (vitviz.ui.share)
        built = {}
        # Lazy tabs (vitviz.ui.lazy): a tab's page-load views run when the tab is first shown.
        openers = {module.TAB_ID: lazy.opener(module.TAB_ID) for module in TABS}
        with gr.Tabs() as tabs:
            for module in TABS:
                opened = openers[module.TAB_ID]
                with gr.Tab(module.LABEL, id=module.TAB_ID) as tab:
                    # first: the page runs a tab's select handlers one after the other, and the opener's
                    # waits for the URL's tab (the URL would be written after it, naming the wrong tab)
                    in_page(tab.select, None, urlstate.tab_js(module.TAB_ID))
                    ui = built[module.TAB_ID] = module.build(lazy.TabPage(demo, opened))
                    # One image for the whole app (vitviz.ui.shared_image): a tab whose build returns its image
                    # box shows the photo dropped (or the example picked) in any tab once it is selected.
                    if ui.image is not None:
                        shared_image.subscribe(tab, module.TAB_ID, ui, opened)
                if ui.image is None:  # a tab sharing the image opens through it (one handler, in the page)
                    in_page(tab.select, opened, lazy.open_js(module.TAB_ID), opened)

        # the URL's controls go to the shown tab if it follows them, else to the first tab that does
        followers = [(tab_id, handles.url) for tab_id, handles in built.items() if getattr(handles, "url", None)]

        def apply_url(request: gr.Request) -> tuple:
            """Open the view the URL names (validated; anything unknown is ignored); only its tab computes."""
            state = from_request(request, TAB_IDS)
            keep = gr.update()
            shown = state.tab or TAB_IDS[0]
            taker = shown if shown in dict(followers) else followers[0][0]
            updates = []
            for tab_id, (fields, _, read) in followers:
                values = read(state) if tab_id == taker else {}
                updates += [values[f] if f in values else keep for f in fields]
            return (gr.Tabs(selected=state.tab) if state.tab else keep, *updates,
                    *(1 if tab_id == shown else keep for tab_id in openers))

        demo.load(apply_url, None, [tabs, *(c for _, (_, components, _) in followers for c in components),
                                    *openers.values()], api_visibility="private", queue=False)
    # api_open=False: queued endpoints cannot be called around the queue (and its limits); max_size: past it
    # every join is refused (VITVIZ_MAX_QUEUE, all visitors together).
    demo.queue(default_concurrency_limit=settings.get("VITVIZ_CONCURRENCY"),
               max_size=settings.get("VITVIZ_MAX_QUEUE"), api_open=False)
    return demo


def _log_to_stderr() -> None:
    """Send vitviz's log (one line per user error, tracebacks only for unexpected ones) to stderr."""
    import logging

    logger = logging.getLogger("vitviz")
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def launch_options() -> dict:
    """Keyword arguments of ``demo.launch`` for a public host: page head/CSS, limits, no share link."""
    import os

    return dict(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        server_port=int(os.environ.get("GRADIO_SERVER_PORT", os.environ.get("PORT", "7860"))),
        max_file_size=settings.max_upload_bytes(),
        # launch sets its own (10,000) otherwise; auto: 300 on a public host, where each kept session's ~60 kB
        # (Gradio's per-session tables, its inputs' last values; bench/session_memory.py) adds up
        state_session_capacity=settings.get("VITVIZ_MAX_SESSIONS") or (300 if settings.public() else 1000),
        share=False,
        **js.page(inline=False),  # the page module: a cached file whose tag serve.middleware() puts in the page
        css=css.page(),  # vitviz/ui/css/app.css
        app_kwargs={"middleware": serve.middleware()},  # the door (vitviz.ui.serve.http) and the page's files
    )
