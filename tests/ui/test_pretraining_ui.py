"""The Pretraining tab: its handlers, its named endpoint through gradio_client, and the page in Chromium."""

from __future__ import annotations

import os

import gradio as gr
import pytest

from vitviz.ui import pretraining_tab
from vitviz.views import urlstate

from tools.appserver import CHROMIUM, LAUNCH_ARGS, serving_tab

TRACES = ("() => { const p = document.querySelector('#pre-probe .js-plotly-plot');"
          " return p && p.data ? p.data.filter(t => t.mode === 'lines+markers').map(t => t.name) : []; }")
TITLE = "() => document.querySelector('#pre-probe .js-plotly-plot')?.layout?.title?.text || ''"


@pytest.fixture(scope="module")
def pretraining_url():
    """A small app holding only the Pretraining tab, on a free loopback port."""
    with serving_tab("Pretraining", pretraining_tab.build) as url:
        yield url


def test_tab_registers_its_endpoint_and_reports_errors():
    with gr.Blocks() as demo:
        pretraining_tab.build(demo)
    assert "linear_probe" in {d.api_name for d in demo.fns.values()}
    with pytest.raises(gr.Error, match="at least one encoder"):
        pretraining_tab.linear_probe([], "last", "cls", progress=lambda *a, **k: None)
    with pytest.raises(gr.Error, match="Model unavailable"):
        pretraining_tab.linear_probe(["nope"], "last", "cls", progress=lambda *a, **k: None)
    with pytest.raises(gr.Error, match="pooling"):
        pretraining_tab.linear_probe(["mae-tiny"], "last", "max", progress=lambda *a, **k: None)
    p = pretraining_tab.protocols("cls")
    bars, epochs, recipes, verdict = p.bars, p.epochs, p.recipes, p.verdict
    assert "reproduce" in verdict and "ResNet-10-T" in recipes


def test_url_names_the_encoders_depth_and_pooling():
    state = urlstate.parse_query({"encoders": "dinov2-small,mae-tiny-random,evil,mae-tiny-random", "depth": "1/2",
                                  "pooling": "avg"})
    assert state.encoders == ("dinov2-small", "mae-tiny-random") and state.depth == "1/2" and state.pooling == "avg"
    bad = urlstate.parse_query({"encoders": ",,", "depth": "7", "pooling": "max"})
    assert bad.encoders is None and bad.depth is None and bad.pooling is None


def test_linear_probe_endpoint_through_gradio_client(pretraining_url):
    from gradio_client import Client

    client = Client(pretraining_url, verbose=False)
    fig, table, caption = client.predict(["mae-tiny", "mae-tiny-random"], "3/4", "avg", api_name="/linear_probe")
    assert "| mae-tiny | 6 of 8 |" in table and "| mae-tiny (random weights) | 6 of 8 |" in table
    assert "chance is 12.5%" in caption
    with pytest.raises(Exception):
        client.predict(["mae-tiny"], "deep", "avg", api_name="/linear_probe")


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_browser_curves_answer_the_controls_and_the_url(pretraining_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(pretraining_url)
            page.wait_for_function("() => document.querySelector('#pre-verdict')?.innerText.includes('reproduce')",
                                   timeout=240_000)
            page.wait_for_function(f"() => ({TRACES})().length === {len(pretraining_tab.DEFAULT_ENCODERS)}",
                                   timeout=120_000)
            assert "class token" in page.evaluate(TITLE)
            # untick mae-tiny: its curve goes, and the URL names the encoders left
            page.locator("#pre-encoders label").filter(has_text="mae-tiny").first.click()
            page.wait_for_function(f"() => !({TRACES})().some(n => n.startsWith('mae-tiny ·'))", timeout=60_000)
            page.wait_for_function("() => new URL(location.href).searchParams.get('encoders') !== null && "
                                   "!new URL(location.href).searchParams.get('encoders').split(',').includes('mae-tiny')",
                                   timeout=10_000)
            page.locator("#pre-pooling label").filter(has_text="average").click()
            page.wait_for_function(f"() => ({TITLE})().includes('average')", timeout=60_000)
            page.wait_for_function("() => new URL(location.href).searchParams.get('pooling') === 'avg'",
                                   timeout=10_000)
            page.wait_for_function("() => (document.querySelector('#pre-protocols .js-plotly-plot')?.layout?.title"
                                   "?.text || '').includes('avg')", timeout=60_000)
            # a shared URL opens the same view
            page.goto(pretraining_url + "?encoders=mae-tiny&depth=1/2&pooling=avg")
            page.wait_for_function(f"() => {{ const n = ({TRACES})(); return n.length === 1 && "
                                   "n[0].includes('block 4/8'); }", timeout=120_000)
            assert "average" in page.evaluate(TITLE) and "half the depth" in page.evaluate(TITLE)
        finally:
            browser.close()


def test_the_tours_step_points_to_the_verdict_at_the_top_of_the_tab():
    """The tour's Pretraining step pointed to "the sentence above", which the chart's scroll had hidden, and to a CNN
    curve the probe chart does not draw: it now names the verdict, which opens the tab above the chart and sets the
    CNN against the ViT from scratch."""
    from vitviz.ui.tour import default_steps

    step = next(s for s in default_steps() if s.tab == pretraining_tab.TAB_ID)
    notice = " ".join(step.notice.split())
    assert "verdict at the top of the tab" in notice and "sentence above" not in notice
    with gr.Blocks() as demo:
        pretraining_tab.build(demo)
    ids = [b.elem_id for b in demo.blocks.values() if getattr(b, "elem_id", None)]
    assert step.output == "pre-probe" and ids.index("pre-verdict") < ids.index("pre-probe")
    verdict = pretraining_tab.protocols("cls").verdict
    assert "CNN" in verdict and "ViT" in verdict
