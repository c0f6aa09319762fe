"""Issue 34's bugs, as a newcomer met them in the page: each test failed before its fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.ui.test_app import FIRST_VIEWS_DONE
from tools.appserver import CHROMIUM, LAUNCH_ARGS

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")

EXAMPLES = Path(__file__).resolve().parents[2] / "assets" / "examples"


def _shows(elem: str, name: str) -> str:
    """Page condition: the image box ``elem`` shows a file whose URL contains ``name``."""
    return f"() => (document.querySelector('#{elem} img') || {{}}).src?.includes('{name}')"


def _browser(p):  # noqa: ANN001, ANN202
    return p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)


def test_beit_tab_shows_the_photo_uploaded_in_another_tab(app_url, tmp_path):
    """Bug 1: after an upload in the MAE tab the BEiT tab kept its own example photo."""
    from PIL import Image
    from playwright.sync_api import sync_playwright

    upload = tmp_path / "lesson.png"
    Image.open(EXAMPLES / "coffee.jpg").crop((0, 0, 300, 300)).save(upload)
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(app_url)
        page.wait_for_function(FIRST_VIEWS_DONE, timeout=300_000)
        page.locator("#mae-input input[type=file]").set_input_files(str(upload))
        page.wait_for_function(_shows("mae-input", "lesson"), timeout=60_000)
        before = page.evaluate("() => window.gradio_config.components.length")
        page.get_by_role("tab", name="BEiT tokens").click()
        page.wait_for_function(_shows("beit-input", "lesson"), timeout=60_000)
        # the tab's token panels are those of the upload: its own box feeds them
        page.wait_for_function("() => document.querySelector('#beit-original img') !== null", timeout=300_000)
        assert page.evaluate("() => window.gradio_config.components.length") == before
        browser.close()


def test_model_note_follows_the_first_switch_to_a_loadable_model(tmp_path):
    """Bug 3: picking a second MAE that loads (here the shipped mae-tiny weights under another name, as a
    teacher's own checkpoint) left the note on mae-tiny until the new model had loaded and swept every stop:
    the page runs a trigger's listeners in the order they were registered, and the note's came last."""
    from playwright.sync_api import sync_playwright

    from tools.appserver import ROOT, running_app

    weights = ROOT / "assets" / "models" / "mae-tiny.safetensors"
    with running_app(log=tmp_path / "app.log", args=("--model", f"mae-copy={weights}"), HF_HUB_OFFLINE="1",
                     OMP_NUM_THREADS="2") as (url, _proc), sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(url)
        page.wait_for_function(FIRST_VIEWS_DONE, timeout=300_000)
        sent: list[str] = []
        page.on("request", lambda r: sent.append(
            "note" if "run/predict" in r.url and '"data":["mae-copy"]' in (r.post_data or "")
            else "queued" if "queue/join" in r.url else "other"))
        page.locator("#mae-model input").click()
        page.locator("ul[role=listbox] li").filter(has_text="mae-copy").first.click()
        page.wait_for_function("document.querySelector('#mae-model-note').innerText.includes('Your checkpoint')",
                               timeout=300_000)
        # the note is asked for before the new model's view and sweep, never after them
        assert "note" in sent and "queued" not in sent[:sent.index("note")], sent
        browser.close()


def test_a_refused_upload_clears_the_panels_and_a_tiny_photo_is_said_enlarged(app_url, tmp_path):
    """Bug 4: Gradio refused a too-large upload and emptied the box, but the previous photo's panels stayed;
    a 12×12 photo was enlarged to 224×224 without a word."""
    import numpy as np
    from PIL import Image
    from playwright.sync_api import sync_playwright

    from vitviz import settings

    rng = np.random.default_rng(0)
    big = tmp_path / "too_big.png"  # noise does not compress: just over the upload limit
    side = int((settings.max_upload_bytes() / 3) ** 0.5) + 64
    Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8)).save(big, compress_level=0)
    assert big.stat().st_size > settings.max_upload_bytes()
    tiny = tmp_path / "tiny.png"
    Image.fromarray(rng.integers(0, 256, (12, 12, 3), dtype=np.uint8)).save(tiny)
    metrics = "(document.querySelector('#mae-metrics') || {innerText: ''}).innerText"
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(app_url)
        page.wait_for_function(FIRST_VIEWS_DONE, timeout=300_000)
        assert page.locator("#panel-masked img").count() == 1
        page.locator("#mae-input input[type=file]").set_input_files(str(big))
        page.wait_for_function(f"() => {metrics}.includes('Drop an image first')", timeout=60_000)
        assert page.locator("#mae-input img").count() == 0
        for panel in ("original", "masked", "pasted", "reconstruction", "error"):
            assert page.locator(f"#panel-{panel} img").count() == 0, panel
        page.locator("#mae-input input[type=file]").set_input_files(str(tiny))
        page.wait_for_function(f"() => {metrics}.includes('Your photo is 12×12 px; it was enlarged 18.7× to "
                               "224×224 px')", timeout=120_000)
        assert "\u00a0dB" in page.evaluate(f"() => {metrics}")  # bug 5: "dB" never wraps alone
        browser.close()


#: Browser code: record every toast's text as it appears (window.__toasts).
COUNT_TOASTS = """() => { window.__toasts = []; new MutationObserver(() => {
  for (const t of document.querySelectorAll('.toast-body')) {
    if (!t.dataset.counted) { t.dataset.counted = '1'; window.__toasts.push(t.innerText || ''); } }
}).observe(document.body, {childList: true, subtree: true}); }"""


def test_a_refused_upload_is_said_once(app_url, tmp_path):
    """Issue 34: a file that is not an image showed the door's refusal and then "Drop an image first" as a second
    toast (the emptied box redraws the tab without an image): the refusal is the one toast, and the cleared
    tab says "Drop an image first" in place."""
    from playwright.sync_api import sync_playwright

    bad = tmp_path / "notes.png"
    bad.write_text("text renamed .png")
    metrics = "(document.querySelector('#mae-metrics') || {innerText: ''}).innerText"
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(app_url)
        page.wait_for_function(FIRST_VIEWS_DONE, timeout=300_000)
        page.evaluate(COUNT_TOASTS)
        page.locator("#mae-input input[type=file]").set_input_files(str(bad))
        page.wait_for_function(f"() => {metrics}.includes('Drop an image first')", timeout=60_000)
        page.wait_for_timeout(3000)  # any later toast of the same upload has arrived by now
        toasts = page.evaluate("window.__toasts")
        browser.close()
    assert len(toasts) == 1 and "415" in toasts[0], toasts


def test_share_link_names_an_example_photo_and_says_an_upload_is_not_carried(app_url, tmp_path):
    """Share links carried no photo and said nothing about it: an example is now named in the link (photo=)
    and opened with it; after an upload the share line says the photo is not in the link."""
    from urllib.parse import parse_qs, urlparse

    from PIL import Image
    from playwright.sync_api import sync_playwright

    upload = tmp_path / "mine.png"
    Image.open(EXAMPLES / "rocket.jpg").crop((0, 0, 300, 300)).save(upload)
    text = "() => document.querySelector('#share .vitviz-share-text').innerText"
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(app_url + "?tab=patches")
        page.wait_for_function(_shows("patches-input", "chelsea"), timeout=300_000)
        assert "chelsea" in page.evaluate(text)
        page.locator("#patches-examples button.gallery-item").filter(
            has=page.locator("img[src*='coffee']")).first.click()
        page.wait_for_function(_shows("patches-input", "coffee"), timeout=120_000)
        page.wait_for_function("() => new URL(location.href).searchParams.get('photo') === 'coffee'", timeout=30_000)
        assert "coffee" in page.evaluate(text)
        shared = page.url
        page.locator("#patches-input input[type=file]").set_input_files(str(upload))
        page.wait_for_function(_shows("patches-input", "mine"), timeout=120_000)
        page.wait_for_function(f"() => ({text})().includes('not in the link')", timeout=30_000)
        assert "photo" not in parse_qs(urlparse(page.url).query)
        # the shared link opens with its example photo, in the tab it names
        other = browser.new_page(viewport={"width": 1280, "height": 720})
        other.goto(shared)
        other.wait_for_function(_shows("patches-input", "coffee"), timeout=300_000)
        assert parse_qs(urlparse(other.url).query)["tab"] == ["patches"]
        browser.close()


def test_an_example_photo_uploaded_is_that_example_in_the_link(app_url):
    """Issue 34: the Explain tab's screenshot showed chelsea, uploaded from the examples folder, and the share line
    said "your upload is not in the link": an upload of an example's own file (same name and size) is named."""
    from playwright.sync_api import sync_playwright

    text = "() => document.querySelector('#share .vitviz-share-text').innerText"
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(app_url + "?tab=explain")
        page.wait_for_function(_shows("explain-input", "chelsea"), timeout=300_000)
        page.locator("#explain-input input[type=file]").set_input_files(str(EXAMPLES / "coffee.jpg"))
        page.wait_for_function(_shows("explain-input", "coffee"), timeout=120_000)
        page.wait_for_function("() => new URL(location.href).searchParams.get('photo') === 'coffee'", timeout=30_000)
        assert page.evaluate(text) == "link opens photo coffee"
        browser.close()
