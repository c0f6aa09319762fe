"""Assemble the Gradio app from its tabs."""

from __future__ import annotations

import os

import gradio as gr

from . import compute_tab, gradio_fixes, mae_tab, swin_tab

TITLE = "vitviz — see how Vision Transformers and Masked Autoencoders work"
INTRO = (
    "# vitviz\n"
    "Drop a photo and watch a **Masked Autoencoder** rebuild it as you move the masking ratio; see how "
    "**Swin**'s shifted windows work and why windowed attention scales where global attention does not. "
    "Everything runs locally; the default model, *mae-tiny*, ships with the app."
)


def build_demo() -> gr.Blocks:
    """Build the whole app (no model is loaded until a request needs one)."""
    gradio_fixes.install()
    # Files handed to the browser (panels, exports, CSVs) are deleted after an hour.
    cache_age = int(os.environ.get("VITVIZ_CACHE_SECONDS", "3600"))
    with gr.Blocks(title=TITLE, analytics_enabled=False, delete_cache=(cache_age, cache_age)) as demo:
        gr.Markdown(INTRO)
        with gr.Tabs():
            with gr.Tab("MAE", id="mae"):
                mae_tab.build_tab(demo)
            with gr.Tab("Swin", id="swin"):
                swin_tab.build_tab()
            with gr.Tab("Compute", id="compute"):
                compute_tab.build_tab()
    concurrency = int(os.environ.get("VITVIZ_CONCURRENCY", "2"))
    max_queue = int(os.environ.get("VITVIZ_MAX_QUEUE", "64"))
    demo.queue(default_concurrency_limit=concurrency, max_size=max_queue)
    return demo
