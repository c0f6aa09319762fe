"""The Explain tab: its named endpoint through gradio_client, and the page in Chromium."""

from __future__ import annotations

import os

import gradio as gr
import numpy as np
import pytest
from PIL import Image

from vitviz.ui import explain_tab

from tools.appserver import CHROMIUM, LAUNCH_ARGS, serving_tab

MODEL = "deit-small-distilled:random"


@pytest.fixture(scope="module")
def explain_url():
    """A small app holding only the Explain tab, on a free loopback port."""
    with serving_tab("Explain", explain_tab.build) as url:
        yield url


def test_tab_registers_its_endpoint_and_reports_errors(photo_path):
    with gr.Blocks() as demo:
        explain_tab.build(demo)
    assert "explain" in {d.api_name for d in demo.fns.values()}
    with pytest.raises(gr.Error, match="drop, grey"):
        explain_tab.explain(str(photo_path), MODEL, "predicted", "all", "blur", 2)
    with pytest.raises(gr.Error, match="not an image classifier"):
        explain_tab.explain(str(photo_path), "mae-tiny", "predicted", "all", "drop", 2)
    with pytest.raises(gr.Error, match="Drop an image"):
        explain_tab.explain(None, MODEL, "predicted", "all", "drop", 2)


def test_explain_endpoint_through_gradio_client(explain_url, photo_path):
    from gradio_client import Client, handle_file

    client = Client(explain_url, verbose=False)
    maps, curves, auc, text = client.predict(handle_file(str(photo_path)), MODEL, "goldfish", "grad_rollout", "drop",
                                             2, api_name="/explain")
    panel = np.asarray(Image.open(maps).convert("RGB"))
    assert panel.shape[0] > 200 and 200 < panel.shape[1] < 400  # one method: one panel
    rows = auc["data"]
    assert [r[0] for r in rows] == ["gradient-weighted rollout"]
    assert all(0 <= float(x) <= 1 for x in rows[0][1:3])
    assert "goldfish" in text and "random weights" in text.lower()
    assert curves is not None
    with pytest.raises(Exception, match="list of choices|choose one of|drop, grey"):
        client.predict(handle_file(str(photo_path)), MODEL, "predicted", "all", "blur", 2, api_name="/explain")


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_browser_shows_four_panels_curves_and_table(explain_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(explain_url)
            page.wait_for_function(
                "() => document.querySelector('#explain-maps-info')?.innerText.includes('explains')", timeout=240_000)
            page.locator("#explain-maps img").scroll_into_view_if_needed()
            page.wait_for_function(
                "() => { const i = document.querySelector('#explain-maps img'); return i && i.complete && "
                "i.naturalWidth > 0; }", timeout=120_000)
            size = page.evaluate("() => { const i = document.querySelector('#explain-maps img'); "
                                 "return [i.naturalWidth, i.naturalHeight]; }")
            assert size[0] > 3.5 * size[1] - 100  # four same-size panels in one row
            assert "random weights" in page.locator("#explain-model-note").inner_text().lower()
            names = ("last-layer CLS attention", "attention rollout", "gradient-weighted rollout", "Grad-CAM")
            page.wait_for_function(
                "names => names.every(n => document.querySelector('#explain-auc')?.innerText.includes(n))",
                arg=list(names), timeout=300_000)
            page.locator("#explain-curves .js-plotly-plot").wait_for(timeout=120_000)
            traces = page.evaluate("() => document.querySelector('#explain-curves .js-plotly-plot').data.length")
            assert traces == 8  # a deletion and an insertion curve per method
            info = page.locator("#explain-curves-info").inner_text()
            assert "no ranking of the maps is meaningful" in info  # random weights: no method is named best
            assert "Lowest deletion area" not in info and "Most faithful" not in info
        finally:
            browser.close()
