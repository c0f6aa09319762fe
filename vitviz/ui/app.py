"""Assemble the Gradio app from its tabs."""

from __future__ import annotations

import os

import gradio as gr

from . import attention_tab, compute_tab, gradio_fixes, mae_tab, patches_tab, swin_tab, urlstate

TITLE = "vitviz — see how Vision Transformers and Masked Autoencoders work"
INTRO = (
    "# vitviz\n"
    "Drop a photo and watch a **Masked Autoencoder** rebuild it as you move the masking ratio; take an image "
    "apart into **patches** and positions; click a patch to see where every **attention** head looks; see how "
    "**Swin**'s shifted windows work and why windowed attention scales where global attention does not. "
    "Everything runs locally; the default model, *mae-tiny*, ships with the app."
)


#: The guided tour: (tab id, step title, one sentence).
TOUR: tuple[tuple[str, str, str], ...] = (
    ("patches", "Patches", "A ViT cuts the image into a grid of patches, flattens each one and projects it to a "
                           "token; position embeddings tell the model where each token came from."),
    ("attention", "Attention", "Every token looks at every other token in every layer; click a patch to see where "
                               "each head looks, and roll the layers up into one map."),
    ("mae", "Masked autoencoder", "Hide 75% of the patches and the encoder sees only the rest; a light decoder has to "
                                  "paint the hidden ones back from context."),
    ("swin", "Swin", "Swin keeps attention inside 7x7 windows and shifts them every other block, so information "
                     "still crosses window borders."),
    ("compute", "Compute", "Global attention costs grow with the square of the token count, windowed attention "
                           "linearly: the charts and a measurement on this machine show where that matters."),
)


def build_demo() -> gr.Blocks:
    """Build the whole app (no model is loaded until a request needs one)."""
    gradio_fixes.install()
    # Files handed to the browser (panels, exports, CSVs) are deleted after an hour.
    cache_age = int(os.environ.get("VITVIZ_CACHE_SECONDS", "3600"))
    with gr.Blocks(title=TITLE, analytics_enabled=False, delete_cache=(cache_age, cache_age)) as demo:
        gr.Markdown(INTRO)
        tour_buttons = []
        with gr.Accordion("Tour: from pixels to tokens to masked image modeling, in five steps", open=False,
                          elem_id="tour", elem_classes=["vitviz-secondary"]):
            for i, (tab_id, title, sentence) in enumerate(TOUR, start=1):
                with gr.Row(equal_height=True):
                    gr.Markdown(f"**{i}. {title}.** {sentence}")
                    tour_buttons.append((tab_id, gr.Button(f"Open {title}", size="sm", scale=0, min_width=160,
                                                           elem_id=f"tour-{tab_id}")))
        with gr.Tabs() as tabs:
            with gr.Tab("MAE", id="mae") as t_mae:
                mae = mae_tab.build_tab()
            with gr.Tab("Patches", id="patches") as t_patches:
                patches_tab.build_tab(demo)
            with gr.Tab("Attention", id="attention") as t_attention:
                attention_tab.build_tab(demo)
            with gr.Tab("Swin", id="swin") as t_swin:
                swin_tab.build_tab()
            with gr.Tab("Compute", id="compute") as t_compute:
                compute_tab.build_tab()
        for tab, tab_id in ((t_mae, "mae"), (t_patches, "patches"), (t_attention, "attention"), (t_swin, "swin"),
                            (t_compute, "compute")):
            tab.select(None, None, None, js=urlstate.tab_js(tab_id), queue=False, api_visibility="private")

        for tab_id, button in tour_buttons:
            button.click(lambda t=tab_id: gr.Tabs(selected=t), None, tabs, js=urlstate.tab_js(tab_id),
                         queue=False, api_visibility="private")

        def apply_url(request: gr.Request) -> tuple:
            """Open the view the URL names (validated; anything unknown is ignored)."""
            state = urlstate.parse_query(dict(request.query_params) if request is not None else {})
            keep = gr.update()
            return (
                gr.Tabs(selected=state.tab) if state.tab else keep,
                gr.update(value=state.model) if state.model else keep,
                gr.update(value=state.ratio) if state.ratio is not None else keep,
                gr.update(value=state.seed) if state.seed is not None else keep,
                gr.update(value=state.pattern) if state.pattern else keep,
            )

        demo.load(apply_url, None, [tabs, mae.model, mae.ratio, mae.seed, mae.pattern], api_visibility="private",
                  queue=False).then(**mae.show).then(**mae.sweep).then(**mae.prewarm)
    concurrency = int(os.environ.get("VITVIZ_CONCURRENCY", "2"))
    max_queue = int(os.environ.get("VITVIZ_MAX_QUEUE", "64"))
    demo.queue(default_concurrency_limit=concurrency, max_size=max_queue)
    return demo


def launch_options() -> dict:
    """Keyword arguments of ``demo.launch`` for a public host: page head/CSS, limits, no share link."""
    return dict(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        server_port=int(os.environ.get("GRADIO_SERVER_PORT", os.environ.get("PORT", "7860"))),
        max_file_size=os.environ.get("VITVIZ_MAX_UPLOAD", "20mb"),
        share=False,
        js=urlstate.JS,
        css=urlstate.CSS,
    )
