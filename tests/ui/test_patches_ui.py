"""The Patches tab: handlers called directly, its named endpoints through gradio_client, and a browser."""

from __future__ import annotations

import os

import gradio as gr
import numpy as np
import pytest
from PIL import Image

from vitviz.ui import patches_tab

from tools.appserver import CHROMIUM, LAUNCH_ARGS, serving_tab


def _read(path: str) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"))


@pytest.fixture(scope="module")
def patches_url():
    """A small app holding only the Patches tab, on a free loopback port."""
    with serving_tab("Patches", patches_tab.build) as url:
        yield url


def test_handlers_directly(photo_path):
    g = patches_tab.patch_grid(str(photo_path), 16, 224)
    overlay, text, numbers = g.overlay, g.readout, g.numbers
    assert overlay.dtype == np.uint8 and overlay.shape[0] == 448
    assert all(n in text for n in ("14", "196", "197", "768"))  # the readout says the numbers
    assert numbers["grid"] == [14, 14] and numbers["seq_len"] == 197 and numbers["patch_dim"] == 768
    g = patches_tab.patch_grid(str(photo_path), 14, 230)
    text, numbers = g.readout, g.numbers
    assert numbers["resolution"] == 224 and "nearest" in text and numbers["grid"] == [16, 16]
    sim = patches_tab.pos_similarity("mae-tiny", 4, 9)
    assert sim.sim_map.dtype == sim.mosaic.dtype == np.uint8
    with pytest.raises(gr.Error, match="row in 0..13"):
        patches_tab.pos_similarity("mae-tiny", 14, 0)
    with pytest.raises(gr.Error, match="choose one of"):
        patches_tab.pos_similarity("../weights", 0, 0)
    with pytest.raises(gr.Error, match="Image problem"):
        patches_tab.patch_grid("/nonexistent.png", 16, 224)
    with pytest.raises(gr.Error, match="Drop an image"):
        patches_tab.patch_grid(None, 16, 224)
    sh = patches_tab.update_shuffle(str(photo_path), "mae-tiny", 0, 4, 9)
    assert sh.before.shape == sh.after.shape and not np.array_equal(sh.before, sh.after) and "holds" in sh.shuffle_text


def test_tab_registers_its_endpoints():
    with gr.Blocks() as demo:
        patches_tab.build(demo)
    assert {"/patch_grid", "/pos_similarity"} <= set(demo.get_api_info()["named_endpoints"])


def test_endpoints_through_gradio_client(patches_url, photo_path):
    from gradio_client import Client, handle_file

    client = Client(patches_url, verbose=False)
    overlay, text, numbers = client.predict(handle_file(str(photo_path)), 16, 224, api_name="/patch_grid")
    assert "196" in text and numbers["num_patches"] == 196
    small = _read(overlay)
    overlay8, text8, numbers8 = client.predict(handle_file(str(photo_path)), 8, 224, api_name="/patch_grid")
    assert numbers8["grid"] == [28, 28] and numbers8["seq_len"] == 785 and numbers8["patch_dim"] == 192
    assert not np.array_equal(small, _read(overlay8))
    one, grid = client.predict("mae-tiny", 4, 9, api_name="/pos_similarity")
    a, b = _read(one), _read(grid)
    assert a.shape[0] > 100 and b.shape[0] > 300
    one2, _ = client.predict("mae-tiny", 0, 0, api_name="/pos_similarity")
    assert not np.array_equal(a, _read(one2))
    with pytest.raises(Exception, match="row in 0..13|column"):
        client.predict("mae-tiny", 99, 0, api_name="/pos_similarity")
    # the server keeps serving after an error
    again, _ = client.predict("mae-tiny", 4, 9, api_name="/pos_similarity")
    assert np.array_equal(_read(again), a)


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_browser_patch_size_changes_the_grid(patches_url, tmp_path):
    from playwright.sync_api import sync_playwright

    readout = "document.querySelector('#patches-readout')"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(patches_url)
            page.wait_for_function(f"{readout} && {readout}.innerText.includes('14 × 14')", timeout=120_000)
            page.wait_for_selector("#patches-overlay img", timeout=60_000)
            first = page.locator("#patches-overlay img").first.get_attribute("src")
            page.locator("#patches-size label", has_text="32").first.click()
            page.wait_for_function(f"{readout}.innerText.includes('7 × 7')", timeout=60_000)
            assert "**" not in page.locator("#patches-readout").inner_text()  # rendered Markdown
            assert "N = 49" in page.locator("#patches-readout").inner_text().replace("\u2009", " ")
            page.wait_for_function(
                "(old) => { const i = document.querySelector('#patches-overlay img'); return i && i.src !== old; }",
                arg=first, timeout=60_000)
            page.screenshot(path=str(tmp_path / "patches.png"), full_page=True)
        finally:
            browser.close()
