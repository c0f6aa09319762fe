"""The Features tab: handlers, named endpoints, and a person in Chromium moving the layer
slider and clicking a patch."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from PIL import Image


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--no-first-run"]


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_handlers_turn_errors_into_messages(photo_path):
    import gradio as gr

    from vitviz.ui import features_tab as t

    with pytest.raises(gr.Error, match="layer must be"):
        t.feature_pca(str(photo_path), "mae-tiny", 42, False)
    with pytest.raises(gr.Error, match="Drop an image"):
        t.layer_probes(None, "mae-tiny")
    c = t.on_model("swin-tiny:random", 20)
    note, layer = c.note, c.layer
    assert "Random weights" in note and layer["maximum"] == 12 and layer["value"] == 12


@pytest.fixture(scope="module")
def features_app():
    """The tab alone in a Blocks app on a free loopback port."""
    from tools.appserver import serving_tab
    from vitviz.ui import features_tab

    with serving_tab("Features", features_tab.build, tab_id="features") as url:
        yield url


def test_named_endpoints(features_app, photo_path, tmp_path):
    from gradio_client import Client, handle_file

    from vitviz.views.features import example_choices

    client = Client(features_app, verbose=False)
    img = handle_file(str(photo_path))
    panel, text = client.predict(img, "mae-tiny", 3, False, api_name="/feature_pca")
    assert np.asarray(Image.open(panel)).shape[1] >= 4 * 224 and "block 3" in text
    other = example_choices()[0][0]  # the second image is named, never a server path
    left, right, text = client.predict(img, "mae-tiny", 3, 2, 9, other, None, api_name="/patch_similarity")
    assert "row 2, col 9" in text and np.asarray(Image.open(right)).shape[:2] == (336, 336)
    # the visitor's own second photo (issue 32): the uploaded file wins over the example's name
    mine = tmp_path / "mine.png"
    Image.open(photo_path).convert("RGB").transpose(Image.Transpose.FLIP_TOP_BOTTOM).save(mine)
    _, right_own, text_own = client.predict(img, "mae-tiny", 3, 2, 9, other, handle_file(str(mine)),
                                            api_name="/patch_similarity")
    assert "*your second photo*" in text_own and not np.array_equal(np.asarray(Image.open(right_own)),
                                                                    np.asarray(Image.open(right)))
    with pytest.raises(Exception) as err:  # a path is refused, and the refusal names no server path
        client.predict(img, "mae-tiny", 3, 2, 9, example_choices()[0][1], None, api_name="/patch_similarity")
    assert "/" not in str(err.value).split("choices", 1)[-1]
    fig, table, text = client.predict(img, "mae-tiny", api_name="/layer_probes")
    assert fig and table.count("\n| ") == 1 + 9 and "| 8 | block 8 |" in table and "fitted on" in text


def _src(page, elem_id: str) -> str:
    return page.locator(f"#{elem_id} img").first.get_attribute("src") or ""


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_browser_slider_and_click_change_the_maps(features_app, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(features_app + "?layer=6")  # the URL names the layer
            page.wait_for_function("document.querySelector('#feat-sim-info') && "
                                   "document.querySelector('#feat-sim-info').innerText.includes('row 7, col 7') && "
                                   "document.querySelector('#feat-pca-info').innerText.includes('block 6')",
                                   timeout=180_000)
            pca_before, left_before = _src(page, "feat-pca"), _src(page, "feat-sim-same")
            right_before = _src(page, "feat-sim-other")
            # move the layer slider with the keyboard: 6 -> 3; the maps and the URL follow
            handle = page.locator("#feat-layer input[type=range]")
            handle.focus()
            for _ in range(3):
                page.keyboard.press("ArrowLeft")
            page.wait_for_function("document.querySelector('#feat-pca-info').innerText.includes('block 3')",
                                   timeout=120_000)
            page.wait_for_function("(b) => document.querySelector('#feat-pca img').src !== b", arg=pca_before,
                                   timeout=60_000)
            page.wait_for_function("document.querySelector('#feat-sim-info').innerText.includes('block 3')",
                                   timeout=60_000)
            page.wait_for_function("window.location.search.includes('layer=3')", timeout=30_000)
            left_mid = _src(page, "feat-sim-same")
            assert left_mid != left_before
            # click patch (row 11, col 2) of the left similarity map (scrolled into the viewport first)
            page.locator("#feat-sim-same img").first.scroll_into_view_if_needed()
            page.wait_for_timeout(500)
            box = page.locator("#feat-sim-same img").first.bounding_box()
            side = min(box["width"], box["height"])
            x0, y0 = box["x"] + (box["width"] - side) / 2, box["y"] + (box["height"] - side) / 2
            page.wait_for_timeout(800)
            for attempt in range(3):
                page.mouse.click(x0 + (2.5 / 14) * side, y0 + (11.5 / 14) * side)
                try:
                    page.wait_for_function(
                        "document.querySelector('#feat-sim-info').innerText.includes('row 11, col 2')",
                        timeout=40_000)
                    break
                except Exception:
                    if attempt == 2:
                        raise
            page.wait_for_function("(b) => document.querySelector('#feat-sim-same img').src !== b", arg=left_mid,
                                   timeout=60_000)
            assert _src(page, "feat-sim-other") != right_before
            assert page.locator("#feat-row input").input_value() == "11"
            assert page.locator("#feat-col input").input_value() == "2"
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()
