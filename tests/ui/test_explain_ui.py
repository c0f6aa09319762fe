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
    assert [r[0] for r in rows] == ["gradient-weighted rollout", "random order (mean of 3)"]  # the baseline last
    assert all(0 <= float(x) <= 1 for r in rows for x in r[1:3])
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
            # a first pass on every other point may come first; the full curves (9 points) replace it
            page.wait_for_function(
                "() => { const t = document.querySelector('#explain-curves-info')?.innerText || ''; "
                "return t.includes('9 points per curve') && !t.includes('First pass'); }", timeout=300_000)
            assert "first pass" not in page.evaluate(
                "() => document.querySelector('#explain-curves .js-plotly-plot').layout.title.text")
            traces = page.evaluate("() => document.querySelector('#explain-curves .js-plotly-plot').data.length")
            assert traces == 10  # a deletion and an insertion curve per method, and of the random orders
            info = page.locator("#explain-curves-info").inner_text()
            assert "no ranking of the maps is meaningful" in info  # random weights: no method is named best
            assert "Lowest deletion area" not in info and "Most faithful" not in info
        finally:
            browser.close()


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_class_box_searches_the_classes_and_garbage_breaks_nothing(explain_url):
    """Issue 34, bug 2: typing "macaw" in the class box sent "predicted class (top-1)macaw", every output
    showed "Error" and later changes kept failing; no class was suggested while typing."""
    from playwright.sync_api import sync_playwright

    caption = "() => document.querySelector('#explain-maps-info')?.innerText || ''"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(explain_url)
            page.wait_for_function(f"() => ({caption})().includes('explains')", timeout=240_000)
            box = page.locator("#explain-class input")
            box.click()
            page.keyboard.type("macaw")
            option = page.get_by_role("option", name="macaw", exact=True)
            option.wait_for(timeout=10_000)  # suggested while typing, among all 1000 classes
            option.click()
            page.wait_for_function(f"() => ({caption})().includes('explains **macaw**') || "
                                   f"({caption})().includes('explains macaw')", timeout=240_000)
            # garbage typed and left: the box goes back to a class, nothing shows an error
            box.click()
            page.keyboard.type("qqqzzz")
            page.locator("#explain-maps").click(position={"x": 5, "y": 5}, force=True)
            page.get_by_role("radio", name="Grad-CAM").check()
            page.wait_for_function(
                "() => { const i = document.querySelector('#explain-maps img'); return i && i.naturalWidth > 0 && "
                "i.naturalWidth < 2.5 * i.naturalHeight; }", timeout=240_000)  # one method: one panel
            assert "macaw" in page.evaluate(caption)
            assert box.input_value() != "qqqzzz"
            errors = page.locator(".error").all_inner_texts() + page.locator(".toast-body.error").all_inner_texts()
            assert not [e for e in errors if e.strip()], errors
        finally:
            browser.close()
