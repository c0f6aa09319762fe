"""The Compute tab: what attention costs, from formulas and measured on this machine.

Its charts, tables and CSV files come from :mod:`vitviz.views.compute`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import gradio as gr

from ..compute.formulas import VIT_CONFIGS, mae_configs
from ..views import compute as cv
from ..views.compute import AttentionChart, MaeChart, Measured, ModelChart, PatchChart
from . import helptext
from .binder import Binder
from .common import handler, help_text, memo_view, section
from .serve import files
from ..models.costs import Cost

TAB_ID, LABEL = "compute", "Compute"


@dataclass(frozen=True)
class Charts(AttentionChart, ModelChart, PatchChart, MaeChart):
    """Every chart of sections 1-4."""


def _served(out: Any) -> Any:
    """``out`` with each CSV written to a file the page can download (its path in place of it)."""
    return dataclasses.replace(out, **{k: files.write_text(x.text, x.name) for k, x in vars(out).items()
                                       if isinstance(x, cv.CsvDownload)})


@handler(Cost.VIEW)
def attention_flops(dim: float, window: float) -> AttentionChart:
    """Endpoint ``attention_flops``: (width C, window M) -> figure, classic table (Markdown), CSV path."""
    return _served(cv.attention_flops(dim, window))


@handler(Cost.VIEW)
def model_flops(max_resolution: float) -> ModelChart:
    """Endpoint ``model_flops``: largest resolution (px) -> ViT-B/16 vs Swin-T figure, CSV path."""
    return _served(cv.model_flops(max_resolution))


@handler(Cost.VIEW)
def patch_size_flops(resolution: float, base: str) -> PatchChart:
    """Endpoint ``patch_size_flops``: (resolution px, ViT name) -> figure, CSV path."""
    return _served(cv.patch_size_flops(resolution, base))


@handler(Cost.VIEW)
def mae_flops_chart(name: str) -> MaeChart:
    """Endpoint ``mae_flops``: MAE name -> figure, a one-line summary at 75%, CSV path."""
    return _served(cv.mae_flops(name))


@handler(Cost.HEAVY)
def measure_attention(max_tokens: float, time_budget_s: float, memory_budget_mb: float,
                      progress: gr.Progress = gr.Progress()) -> Measured:
    """Endpoint ``measure_attention``: budgets -> measured figure, summary, CSV path."""
    return _served(cv.measure(max_tokens, time_budget_s, memory_budget_mb,
                              progress=lambda f, msg: progress(f, desc=msg)))


@memo_view(1)
def _default_charts() -> Charts:
    """The four charts' views at their default controls (the same for every visitor: computed once)."""
    return Charts(**vars(cv.attention_flops(96, 7)), **vars(cv.model_flops(1344)),
                  **vars(cv.patch_size_flops(224, "ViT-B/16")), **vars(cv.mae_flops(next(iter(mae_configs())))))


@handler(Cost.VIEW)
def default_charts() -> Charts:
    """The four charts, their table, summary and CSVs at the default controls, when the tab is first shown
    (not in the page configuration, which every page load copies: about 45 KB of figures)."""
    return _served(_default_charts())


def build(demo: gr.Blocks) -> Binder:
    """Create the Compute tab's components inside the caller's ``gr.Tab`` context."""
    ui = Binder()
    help_text(helptext.read(TAB_ID, "intro"))

    section("### 1. One attention layer, global vs windowed", helptext.read(TAB_ID, "attention"))
    with gr.Row():
        ui.dim = gr.Number(value=96, precision=0, minimum=1, maximum=8192, label="width C (channels)",
                        elem_id="compute-dim")
        ui.window = gr.Slider(1, 32, value=7, step=1, label="window side M (tokens)", elem_id="compute-window")
    ui.plot1 = gr.Plot(label="FLOPs vs tokens (log-log)", elem_id="plot-attention-flops")
    ui.table = gr.Markdown(elem_id="classic-table")
    ui.dl1 = gr.DownloadButton("Download CSV", size="sm", elem_id="csv-attention-flops")
    gr.on([ui.dim.change, ui.window.change], **ui.bind(attention_flops, quick=False, api_name="attention_flops",
                                                       api_visibility="public", trigger_mode="always_last"))

    section("### 2. Whole models: ViT-B/16 vs Swin-T", helptext.read(TAB_ID, "models"))
    gr.Markdown(cv.models_markdown(), elem_id="models-flops-summary")
    ui.max_resolution = gr.Slider(448, 2240, value=1344, step=32, label="largest resolution (px)", elem_id="compute-maxres")
    ui.plot2 = gr.Plot(label="model FLOPs vs resolution (log-log)", elem_id="plot-model-flops")
    ui.dl2 = gr.DownloadButton("Download CSV", size="sm", elem_id="csv-model-flops")
    ui.max_resolution.release(**ui.bind(model_flops, quick=False, api_name="model_flops", api_visibility="public"))

    section("### 3. Patch size, sequence length and FLOPs", helptext.read(TAB_ID, "patch"))
    with gr.Row():
        ui.resolution = gr.Slider(64, 1024, value=224, step=16, label="resolution (px)", elem_id="compute-res")
        ui.base = gr.Dropdown(list(VIT_CONFIGS), value="ViT-B/16", label="ViT width and depth", elem_id="compute-vit")
    ui.plot3 = gr.Plot(label="patch size vs FLOPs", elem_id="plot-patch-size")
    ui.dl3 = gr.DownloadButton("Download CSV", size="sm", elem_id="csv-patch-size")
    ui.resolution.release(**ui.bind(patch_size_flops, quick=False, api_name="patch_size_flops",
                                    api_visibility="public"))
    ui.base.change(**ui.bind(patch_size_flops, quick=False))

    section("### 4. MAE: encoder + decoder FLOPs vs masking ratio", helptext.read(TAB_ID, "mae"))
    names = list(mae_configs())
    ui.name = gr.Dropdown(names, value=names[0], label="MAE architecture", elem_id="compute-mae")
    ui.summary = gr.Markdown(elem_id="mae-flops-summary")
    ui.plot4 = gr.Plot(label="MAE FLOPs vs masking ratio", elem_id="plot-mae-flops")
    ui.dl4 = gr.DownloadButton("Download CSV", size="sm", elem_id="csv-mae-flops")
    ui.name.change(**ui.bind(mae_flops_chart, quick=False, api_name="mae_flops", api_visibility="public"))
    demo.load(**ui.bind(default_charts, quick=False))

    section("### 5. Measured on this machine", helptext.read(TAB_ID, "measured"))
    with gr.Row():
        ui.max_tokens = gr.Dropdown([784, 3136, 7056, 12544, 28224, 50176], value=12544,
                                 label="token budget (largest N)", elem_id="measure-tokens")
        ui.time_budget_s = gr.Slider(2, 60, value=20, step=1, label="time budget (s)", elem_id="measure-time")
        ui.memory_budget_mb = gr.Slider(64, 4096, value=1024, step=64, label="memory budget (MiB)", elem_id="measure-memory")
    run = gr.Button("Measure on this machine", variant="primary", elem_id="measure-run")
    ui.measured_text = gr.Markdown("Press the button: it takes up to the time budget.", elem_id="measure-summary")
    ui.plot5 = gr.Plot(label="measured time and memory (log-log)", elem_id="plot-measured")
    ui.dl5 = gr.DownloadButton("Download CSV", size="sm", elem_id="csv-measured")
    run.click(**ui.bind(measure_attention, quick=False, api_name="measure_attention", api_visibility="public",
                        concurrency_limit=1, concurrency_id="vitviz-measure"))
    return ui
