"""The MAE tab: drop an image, move the masking-ratio slider, watch the reconstruction."""

from __future__ import annotations

import gradio as gr
import numpy as np

from ..masking import MAX_RATIO, PATTERNS
from ..models.loading import available_models, load_model
from ..reconstruct import reconstruct
from .common import as_seed, example_images, require_image, user_errors

PANEL_HEIGHT = 260

EXPLAIN_RATIO = (
    "**Masking ratio** — the share of 16x16 patches hidden from the encoder. MAE trains at 75%: "
    "images are so redundant that a low ratio can be solved by copying neighbours."
)
EXPLAIN_ENCODER = (
    "The encoder sees **only the visible patches** (the MAE asymmetry), so at 75% it processes a quarter "
    "of the tokens; a light decoder fills in the rest."
)


def mae_model_choices() -> list[tuple[str, str]]:
    """(label, name) pairs of MAE models; unavailable ones say why in the label."""
    out = []
    for info in available_models():
        if info.family != "mae":
            continue
        label = info.name if info.available else f"{info.name} (unavailable)"
        out.append((label, info.name))
    return out


def metrics_markdown(r) -> str:  # noqa: ANN001 - a Reconstruction
    """One line of numbers under the panels."""
    return (
        f"**Hidden-patch MSE** {r.masked_mse:.4f} · **PSNR** {r.psnr:.1f} dB (RGB in [0, 1]) · "
        f"**model loss** {r.model_loss:.3f} (normalised pixels) · **encoder tokens** "
        f"{r.tokens_encoded} of {r.num_patches} ({int(r.mask.sum())} hidden)"
    )


@user_errors
def run_reconstruct(image: str | None, model_name: str, mask_ratio: float, seed: float, pattern: str
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """Endpoint ``reconstruct``: (image, model, ratio, seed, pattern) -> four panels and metrics."""
    require_image(image)
    model = load_model(model_name)
    r = reconstruct(model, image, mask_ratio=mask_ratio, seed=as_seed(seed), pattern=pattern)
    return r.original, r.masked, r.reconstruction, r.pasted, metrics_markdown(r)


def build_tab() -> None:
    """Create the MAE tab's components inside the caller's ``gr.Tab`` context."""
    examples = example_images()
    choices = mae_model_choices()
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            image = gr.Image(
                value=examples[0] if examples else None,
                type="filepath",
                sources=["upload", "webcam", "clipboard"],
                label="Your image (drop, paste or use the webcam)",
                height=280,
                elem_id="mae-input",
            )
            if examples:
                gr.Examples(examples=examples, inputs=image, label="Example photos")
            model = gr.Dropdown(choices=choices, value=choices[0][1] if choices else None, label="Model",
                                elem_id="mae-model")
            ratio = gr.Slider(0.0, MAX_RATIO, value=0.75, step=0.05, label="Masking ratio", elem_id="mae-ratio")
            gr.Markdown(EXPLAIN_RATIO)
            with gr.Row():
                seed = gr.Number(value=0, precision=0, minimum=0, label="Seed", elem_id="mae-seed")
                pattern = gr.Radio(list(PATTERNS), value="random", label="Pattern", elem_id="mae-pattern")
            gr.Markdown(EXPLAIN_ENCODER)
        with gr.Column(scale=3):
            with gr.Row(equal_height=True):
                kw = dict(type="numpy", format="png", height=PANEL_HEIGHT, interactive=False, buttons=["download"])
                original = gr.Image(label="Original", elem_id="panel-original", **kw)
                masked = gr.Image(label="Masked input", elem_id="panel-masked", **kw)
                recon = gr.Image(label="Reconstruction", elem_id="panel-reconstruction", **kw)
                pasted = gr.Image(label="Reconstruction + visible", elem_id="panel-pasted", **kw)
            metrics = gr.Markdown(elem_id="mae-metrics")
            gr.Markdown(
                "The raw reconstruction also redraws the visible patches; they look worse than the input "
                "because the model was trained to predict only the hidden ones. *Reconstruction + visible* "
                "pastes the real pixels back."
            )
    inputs = [image, model, ratio, seed, pattern]
    outputs = [original, masked, recon, pasted, metrics]
    image.change(run_reconstruct, inputs, outputs, api_name="reconstruct", trigger_mode="always_last")
    for control in (model, ratio, seed, pattern):
        control.change(run_reconstruct, inputs, outputs, api_visibility="private", trigger_mode="always_last",
                       show_progress="minimal")
