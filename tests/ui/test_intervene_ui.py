"""The Ablation & lens tab: its handlers, its named endpoints with their defaults, and the page in Chromium
(knock out a layer of the embedded mae-tiny, rank its heads, read the decoder lens)."""

from __future__ import annotations

import os

import gradio as gr
import pytest

from tools.appserver import CHROMIUM, LAUNCH_ARGS, serving_tab
from vitviz.ui import intervene_tab as t
from vitviz.views import intervene as iv


@pytest.fixture(scope="module")
def url():
    """The tab alone on a free port (embedded models: it opens on mae-tiny)."""
    with serving_tab("Ablate", t.build, tab_id=t.TAB_ID) as u:
        yield u


def test_handlers_without_a_browser(photo_path):
    img = str(photo_path)
    v = t.ablate(img, "mae-tiny", "7.0", "", "zero")
    assert "layer 7 head 0 zeroed" in v.ab_text and v.ab_panels.ndim == 3
    tried = t.show(img, "mae-tiny", "", "", "zero", True, 6, 1)
    assert "layer 6 head 1 zeroed" in tried.ab_text
    assert t.show_tried(img, "mae-tiny", "", "", "zero", False, 6, 1).ab_text is not None  # a skip, not a redraw
    assert t._editor("layer")(img, "mae-tiny", "1.2", "", "zero", False, 7, 0).heads_off == "1.2, 7.0, 7.1, 7.2"
    edited = t._editor("only")(img, "mae-tiny", "7.0, 7.1, 7.2", "", "zero", False, 7, 1)
    assert edited.heads_off == "7.0, 7.2" and "layer 7 head 0, layer 7 head 2 zeroed" in edited.ab_text
    assert t._editor("reset")(img, "mae-tiny", "7.0", "", "zero", False, 7, 1).heads_off == ""
    with pytest.raises(gr.Error, match=r"layers are 0\.\.7 and heads 0\.\.2"):
        t.ablate(img, "mae-tiny", "8.0", "", "zero")
    with pytest.raises(gr.Error, match="LAYER.HEAD"):
        t.ablate(img, "mae-tiny", "seven", "", "zero")
    s = t.update_all(img, "mae-tiny", "", "", "zero", False, 11, 0)
    assert s.layer["maximum"] == 7 and s.layer["value"] == 7 and s.head["maximum"] == 2
    assert "Michel" in s.help_ablation and "nostalgebraist" in s.help_lens and "decoder" in s.lens_text


def test_a_head_clicked_in_the_atlas_is_switched_off_here(photo_path):
    """The atlas counts from 1, this tab from 0; the atlas's model replaces the tab's (its heads then start empty)."""
    img = str(photo_path)
    went = t.on_goto('{"model": "mae-tiny", "layer": 8, "head": 1}', img, "mae-tiny", "7.2", "", "zero")
    assert went.heads_off == "7.0, 7.2" and went.layer["value"] == 7 and went.head["value"] == 0
    assert "layer 7 head 0, layer 7 head 2 zeroed" in went.ab_text
    moved = t.on_goto('{"model": "mae-tiny", "layer": 2, "head": 3}', img, "vit-base:random", "11.0", "", "zero")
    assert moved.model == "mae-tiny" and moved.heads_off == "1.2" and moved.head["maximum"] == 2
    assert isinstance(moved.ab_text, dict)  # a skip: the model's change recomputes every view
    for goto, match in (('{"model": "swin-t", "layer": 1, "head": 1}', "cannot be ablated here"),
                        ('{"model": "mae-tiny", "layer": 9, "head": 1}', "8 layers of 3 heads"),
                        ('{"layer": "x"}', "must name a layer and a head")):
        with pytest.raises(gr.Error, match=match):
            t.on_goto(goto, img, "mae-tiny", "", "", "zero")


def test_the_url_names_heads_and_the_tab_takes_them():
    from vitviz.views.urlstate import parse_query

    state = parse_query({"model": "mae-tiny", "layer": "7", "heads": "7.0,7.2"})
    assert state.heads == "7.0, 7.2"
    assert iv.url_controls(state) == {"model": "mae-tiny", "layer": 7, "heads_off": "7.0, 7.2"}
    assert parse_query({"heads": "7.0,<script>"}).heads is None and parse_query({"heads": ""}).heads is None


def test_named_endpoints_answer_with_their_defaults(url, photo_path):
    from gradio_client import Client, handle_file

    client = Client(url, verbose=False)
    img = handle_file(str(photo_path))
    chart, panels, text = client.predict(image=img, model="mae-tiny", api_name="/ablate")
    assert "nothing" in text and "error on the hidden patches" in text and panels
    chart, panels, text = client.predict(image=img, model="mae-tiny", heads_off="7.0, 7.1", api_name="/ablate")
    assert "layer 7 head 0, layer 7 head 1 zeroed" in text
    lens_chart, pictures, lens_text = client.predict(image=img, model="mae-tiny", api_name="/logit_lens")
    assert "decoder, read after each of its 4 blocks" in lens_text and pictures


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_page_knocks_out_a_layer_ranks_its_heads_and_reads_the_lens(url):
    from playwright.sync_api import sync_playwright

    info = "() => document.querySelector('#intervene-info')?.innerText || ''"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(url)
            page.wait_for_function(f"() => ({info})().includes('error on the hidden patches')", timeout=300_000)
            assert "mae-tiny" in page.locator("#intervene-model input").input_value()
            page.wait_for_function("() => (document.querySelector('#intervene-lens-info')?.innerText || '')"
                                   ".includes('decoder, read after')", timeout=300_000)
            assert page.locator("#intervene-lens-pictures img").count() == 1
            page.locator("#intervene-layer-off").click()  # the layer slider starts on the last layer, 7
            page.wait_for_function(f"() => ({info})().includes('layer 7 head 0, layer 7 head 1, layer 7 head 2')",
                                   timeout=300_000)
            assert page.locator("#intervene-heads textarea").input_value() == "7.0, 7.1, 7.2"
            page.locator("#intervene-reset").click()
            page.wait_for_function(f"() => ({info})().includes('With nothing')", timeout=300_000)
            page.locator("#intervene-rank").click()
            page.wait_for_function("() => (document.querySelector('#intervene-rank-info')?.innerText || '')"
                                   ".includes('matters most here is layer 7 head')", timeout=300_000)
            errors = page.locator(".toast-body.error").all_inner_texts()
            assert not [e for e in errors if e.strip()], errors
        finally:
            browser.close()


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_a_click_in_the_heads_atlas_switches_the_head_off_and_the_link_names_it(app_url):
    """The whole app: the Heads atlas set to switch heads off; a click on a grid cell (Plotly's click event,
    as a person's click sends it) opens the Ablate tab with that head off, and the address names it."""
    from playwright.sync_api import sync_playwright

    info = "() => document.querySelector('#intervene-info')?.innerText || ''"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(app_url + "?tab=heads")
            grid = "document.querySelector('#heads-grid .js-plotly-plot')"
            page.wait_for_function(f"() => {grid} && window.vitviz.heads.attached({grid})", timeout=300_000)
            page.locator("#heads-click-does label", has_text="switches it off").click()
            model = page.evaluate(f"() => {grid}.layout.meta.model")
            page.evaluate(f"() => {grid}.emit('plotly_click', {{points: [{{customdata: [2, 3], x: 3, y: 2}}]}})")
            page.wait_for_function(f"() => ({info})().includes('layer 1 head 2 zeroed')", timeout=300_000)
            assert page.locator("[role=tab][aria-selected=true]").get_attribute("data-tab-id") == "intervene"
            assert page.locator("#intervene-heads textarea").input_value() == "1.2"
            assert model.split(":")[0] in page.locator("#intervene-model input").input_value()
            page.wait_for_function("() => new URL(location.href).searchParams.get('heads') === '1.2'", timeout=10_000)
            errors = page.locator(".toast-body.error").all_inner_texts()
            assert not [e for e in errors if e.strip()], errors
        finally:
            browser.close()
