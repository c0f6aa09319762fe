"""The Compute and Swin tabs' handlers, called as Gradio would call them (no server)."""

from __future__ import annotations

import csv

import gradio as gr
import numpy as np
import plotly.graph_objects as go
import pytest

from vitviz.ui import compute_tab, swin_tab


def read_csv(path: str) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_attention_flops_handler() -> None:
    c = compute_tab.attention_flops(96, 7)
    fig, table, path = c.plot1, c.table, c.dl1
    assert isinstance(fig, go.Figure)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    for ratio in ("**4x**", "**16x**", "**64x**", "**256x**"):
        assert ratio in table
    rows = read_csv(path)
    assert {"tokens", "global_products_flops", "windowed_products_flops", "products_flop_ratio"} <= set(rows[0])
    with pytest.raises(gr.Error, match="window"):
        compute_tab.attention_flops(96, 0)


def test_other_chart_handlers() -> None:
    assert [int(r["resolution"]) for r in read_csv(compute_tab.model_flops(896).dl2)][-1] == 896
    assert read_csv(compute_tab.patch_size_flops(224, "ViT-S/16").dl3)[0]["patch_size"] == "4"
    c = compute_tab.mae_flops_chart("MAE ViT-B/16")
    summary, path = c.summary, c.dl4
    assert "49 of 196 patches" in summary and "4.0x fewer encoder FLOPs" in summary
    assert len(read_csv(path)) == 20
    with pytest.raises(gr.Error, match="MAE ViT-B/16"):
        compute_tab.mae_flops_chart("nope")


def test_measure_handler_small_budget() -> None:
    calls: list[float] = []
    m = compute_tab.measure_attention(784, 2, 256, progress=lambda f, desc=None: calls.append(f))
    fig, text, path = m.plot5, m.measured_text, m.dl5
    assert isinstance(fig, go.Figure) and "Stopped because" in text
    assert calls and calls[-1] == 1.0
    assert {r["method"] for r in read_csv(path)} <= {"global_sdpa", "global_plain", "windowed"}
    with pytest.raises(gr.Error, match="time budget"):
        compute_tab.measure_attention(784, 0, 256, progress=lambda *a, **k: None)


def test_swin_handlers() -> None:
    w = swin_tab.swin_windows(None, 1, 2, 2)
    regular, shifted, rolled, fig, gallery, info = w.regular, w.shifted, w.rolled, w.mask_plot, w.stages, w.info
    assert regular.shape == shifted.shape == rolled.shape == (448, 448, 3)
    assert len(gallery) == 4 and isinstance(fig, go.Figure)
    assert "region I" in info and "1776 of 2401" in info
    a = swin_tab.swin_attention(None, 3, 1, 40, 40)
    tiles, overlay, text = a.tiles, a.overlay, a.attn_text
    assert len(tiles) == 12 and overlay.shape == (448, 448, 3)
    assert "40 of 49 keys are masked" in text
    with pytest.raises(gr.Error):
        swin_tab.swin_windows(None, 9, 2, 2)
    with pytest.raises(gr.Error):
        swin_tab.swin_attention(None, 1, 5, 2, 2)
    with pytest.raises(gr.Error, match="Image problem"):
        swin_tab.swin_windows("/nonexistent.png", 1, 2, 2)


def test_click_handlers() -> None:
    # a click on the rolled view's bottom-right token of stage 3 is the image's token (2, 2)
    evt = gr.SelectData(None, {"index": [447, 447], "value": None})
    assert swin_tab.pick_on_rolled(3, evt) == swin_tab.Point(40, 40)
    assert swin_tab.pick_on_image(3, evt) == swin_tab.Point(216, 216)


def test_tabs_build_with_named_endpoints() -> None:
    with gr.Blocks() as demo:
        with gr.Tab("Swin"):
            swin_tab.build(demo)
        with gr.Tab("Compute"):
            compute_tab.build(demo)
    names = set(demo.get_api_info()["named_endpoints"])
    assert {"/swin_windows", "/swin_attention", "/attention_flops", "/model_flops", "/patch_size_flops", "/mae_flops",
            "/measure_attention"} <= names
    assert np.asarray(swin_tab.block_choices(swin_tab.stage_geometry()[2])[1][1]) == 1
