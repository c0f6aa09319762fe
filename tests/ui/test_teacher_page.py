"""A teacher's first ten minutes (issue 15), in Debian's Chromium at projector sizes.

One app and one browser for the module. Each test names the issue item it covers.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.ui.test_app import FIRST_VIEWS_DONE, metrics_marker, wait_metrics
from tools.appserver import CHROMIUM, LAUNCH_ARGS
from vitviz.assets import example_images

pytestmark = pytest.mark.skipif(not shutil.which("chromium") and not os.path.exists(CHROMIUM),
                                reason="Debian's chromium is not installed")

EXAMPLES = Path(__file__).resolve().parents[2] / "assets" / "examples"
VIEWPORTS = ((1280, 720), (1920, 1080))
#: The key MAE panels and the metrics: what a back row must see without scrolling.
KEY = ("#mae-ratio", "#panel-masked img", "#panel-pasted img", "#mae-metrics")
READY = ("(document.querySelector('#mae-metrics') || {innerText: ''}).innerText.includes('of 196') "
         "|| (document.querySelector('#mae-metrics') || {innerText: ''}).innerText.includes('nothing is hidden')")


@pytest.fixture(scope="module")
def page_url(request):  # noqa: ANN001, ANN201
    """The app under test: VITVIZ_TEST_URL (an app already running), else the session's app."""
    return os.environ.get("VITVIZ_TEST_URL") or request.getfixturevalue("app_url")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        yield b
        b.close()


class Toasts:
    """Every toast the page shows, to check that none is shown twice at once."""

    JS = "() => Array.from(document.querySelectorAll('.toast-body')).map(t => t.innerText.trim())"

    def __init__(self, page) -> None:  # noqa: ANN001
        self.page = page
        self.seen: list[list[str]] = []

    def snap(self) -> list[str]:
        now = self.page.evaluate(self.JS)
        self.seen.append(now)
        return now

    def assert_no_duplicates(self) -> None:
        """Gradio stacks toasts of one kind in a box ("Error (2) x" then one line per message): no line twice."""
        for shown in self.seen:
            lines = [ln.strip() for box in shown for ln in box.split("\n")
                     if ln.strip() and ln.strip() not in ("×", "Error", "Warning", "Info")
                     and not re.fullmatch(r"\(\d+\)", ln.strip())]
            assert len(lines) == len(set(lines)), f"a message was shown twice: {shown}"


def _open(browser, url: str, size: tuple[int, int]):  # noqa: ANN001, ANN202
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.goto(url)
    page.wait_for_function(READY, timeout=180_000)
    page.wait_for_timeout(1000)
    return page


def _box(page, selector: str) -> dict:  # noqa: ANN001
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not shown"
    return box


# ----------------------------------------------------------------------------- items 10 and 11


@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
@pytest.mark.parametrize("size", VIEWPORTS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_key_panels_above_the_fold(page_url, browser, size, presenter):
    """Items 10/11: slider, masked input, reconstruction + visible and metrics fit the first screen."""
    page = _open(browser, page_url + ("?presenter=1" if presenter else ""), size)
    try:
        w, h = size
        for sel in KEY:
            b = _box(page, sel)
            assert b["x"] >= 0 and b["y"] >= 0, (sel, b)
            assert b["x"] + b["width"] <= w + 1 and b["y"] + b["height"] <= h + 1, (sel, b, size)
        for sel in ("#panel-masked img", "#panel-pasted img", "#panel-original img"):
            b = _box(page, sel)
            assert abs(b["width"] - b["height"]) < 2, (sel, b)  # whole square panels, nothing cropped
            if w >= 1920:
                assert b["width"] >= 300, (sel, b)
            if presenter:
                assert b["width"] >= 0.28 * w, (sel, b)
        # the decoder-provenance map has no frame until a hidden patch is clicked (tests/ui/test_mae_provenance_ui.py)
        assert page.locator("#mae-provenance").count() == 1 and page.locator("#mae-provenance").is_hidden()
        labels = page.locator("#mae-panels label").all_inner_texts()
        assert any("Reconstruction + visible" in t for t in labels)
        if presenter:
            for sel in ("#mae-model", "#mae-examples", ".vitviz-help", "#tour", "#vitviz-intro", "#mae-panels-more",
                        "#panel-error"):
                assert not any(el.is_visible() for el in page.locator(sel).all()), sel
            # issue 34: an upload box and a large readout of the ratio, both on the first screen
            for sel in ("#mae-input", "#mae-ratio-readout"):
                b = _box(page, sel)
                assert b["y"] + b["height"] <= h + 1 and b["x"] + b["width"] <= w + 1, (sel, b)
            readout = page.locator("#mae-ratio-readout .vitviz-readout-value")
            assert readout.inner_text() == "75%"
            assert float(readout.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) >= 40
            page.keyboard.press("ArrowRight")
            page.wait_for_function("document.querySelector('#mae-ratio-readout .vitviz-readout-value')"
                                   ".textContent === '80%'", timeout=10_000)
            # no empty bars: every visible block of the tab has something in it
            empty = page.evaluate("""() => Array.from(document.querySelectorAll('#mae-main .block, #mae-main .form'))
                .filter(e => e.offsetParent !== null && e.getBoundingClientRect().height > 0
                        && e.getBoundingClientRect().height < 12).length""")
            assert empty == 0
        else:
            b = _box(page, "#mae-input")
            assert b["y"] < h  # the upload box starts on the first screen too
    finally:
        page.close()


# ----------------------------------------------------------------------------- item 9


def _src(page, elem_id: str) -> str:  # noqa: ANN001
    return page.locator(f"#{elem_id} img").first.get_attribute("src") or ""


def test_one_image_across_tabs(page_url, browser, tmp_path):
    """Item 9: an image dropped in one tab (or an example picked) is the one every tab shows."""
    from PIL import Image

    upload = tmp_path / "lesson.png"
    Image.open(EXAMPLES / "coffee.jpg").crop((0, 0, 300, 300)).save(upload)
    page = _open(browser, page_url, (1280, 720))
    toasts = Toasts(page)
    try:
        page.wait_for_function(FIRST_VIEWS_DONE, timeout=300_000)  # before it, the tab's opening can undo an upload
        page.locator("#mae-input input[type=file]").set_input_files(str(upload))
        page.wait_for_function("(document.querySelector('#mae-input img') || {}).src?.includes('lesson')",
                               timeout=60_000)
        for tab, elem in (("Patches", "patches-input"), ("Attention", "attn-input"), ("Swin", "swin-input")):
            page.get_by_role("tab", name=tab).click()
            page.wait_for_function(f"(document.querySelector('#{elem} img') || {{}}).src?.includes('lesson')",
                                   timeout=60_000)
            toasts.snap()
        # an example picked on the Swin tab goes back to the MAE tab
        page.locator("#swin-examples").get_by_role("button").first.click()
        page.wait_for_function("!(document.querySelector('#swin-input img') || {}).src?.includes('lesson')",
                               timeout=60_000)
        picked = Path(urlparse(_src(page, "swin-input")).path).name
        page.get_by_role("tab", name="MAE").click()
        page.wait_for_function(f"(document.querySelector('#mae-input img') || {{}}).src?.includes('{picked}')",
                               timeout=60_000)
        # the MAE view of the picked photo itself (READY already held with the upload's view on screen)
        example = next(e for e in example_images() if Path(e).name == picked)
        wait_metrics(page, metrics_marker(example, 0.75))
        toasts.snap()
        toasts.assert_no_duplicates()
    finally:
        page.close()


# ----------------------------------------------------------------------------- item 3


def _hidden_count(page) -> int:  # noqa: ANN001
    m = re.search(r"\((\d+) hidden\)", page.locator("#mae-metrics").inner_text())
    assert m, page.locator("#mae-metrics").inner_text()
    return int(m.group(1))


def test_paint_by_dragging_is_honest_and_shareable(page_url, browser):
    """Item 3: a drag paints several patches on the clicked panel; the slider says so; the URL restores it.

    The first patch of the stroke decides: hidden -> the stroke shows patches, visible -> it hides them.
    """
    page = _open(browser, page_url + "?ratio=0.3", (1280, 720))
    toasts = Toasts(page)
    try:
        before = _hidden_count(page)
        original_src = _src(page, "panel-original")
        b = _box(page, "#panel-original img")
        y = b["y"] + b["height"] * 0.5
        page.mouse.move(b["x"] + b["width"] * 0.1, y)
        page.mouse.down()
        for k in range(1, 31):
            page.mouse.move(b["x"] + b["width"] * (0.1 + 0.8 * k / 30), y, steps=2)
        page.mouse.up()
        page.wait_for_function("document.querySelector('#mae-paint input').checked", timeout=60_000)
        page.wait_for_function(f"!(document.querySelector('#mae-metrics').innerText.includes('({before} hidden)'))",
                               timeout=60_000)
        after = _hidden_count(page)
        assert abs(after - before) >= 5  # one drag across a row paints several patches, not one
        page.wait_for_function(f"document.querySelector('#panel-original img').src !== '{original_src}'",
                               timeout=60_000)  # the clicked panel now shows the painted mask
        # the slider tells the truth while painting: it is off and says what is painted
        slider = page.locator("#mae-ratio input[type=range]")
        page.wait_for_function("document.querySelector('#mae-ratio input[type=range]').disabled", timeout=30_000)
        assert slider.is_disabled()
        assert f"{after} of 196" in page.locator("#mae-ratio").inner_text()
        # the URL carries the painted mask, compactly, and restores it
        page.wait_for_function("new URL(location.href).searchParams.get('mask')", timeout=30_000)
        q = parse_qs(urlparse(page.url).query)
        assert len(q["mask"][0]) < 60
        shared = browser.new_page(viewport={"width": 1280, "height": 720})
        shared.goto(page.url)
        shared.wait_for_function(READY, timeout=180_000)
        shared.wait_for_function(f"document.querySelector('#mae-metrics').innerText.includes('({after} hidden)')",
                                 timeout=60_000)
        assert shared.locator("#mae-paint input").is_checked()
        shared.close()
        # unticking paint gives the slider back
        page.locator("#mae-paint input").uncheck()
        page.wait_for_function("!document.querySelector('#mae-ratio input[type=range]').disabled", timeout=30_000)
        page.wait_for_function("!new URL(location.href).searchParams.get('mask')", timeout=30_000)
        toasts.snap()
        toasts.assert_no_duplicates()
    finally:
        page.close()


# ----------------------------------------------------------------------------- item 2


def _pick(page, dropdown: str, text: str) -> None:  # noqa: ANN001
    page.locator(f"{dropdown} input").click()
    page.locator("ul[role=listbox] li").filter(has_text=text).first.click()


def test_model_note_follows_every_model(page_url, browser):
    """Item 2: the note describes whichever model is picked; a failure leaves no stale 'Error' on it."""
    from vitviz.models.loading import available_models

    infos = {i.name: i for i in available_models()}
    page = _open(browser, page_url, (1280, 720))
    toasts = Toasts(page)
    try:
        for name in ("mae-base", "mae-large", "mae-huge", "mae-tiny"):
            _pick(page, "#mae-model", name)
            first_words = infos[name].description.split(":")[0][:40]
            page.wait_for_function(f"document.querySelector('#mae-model-note').innerText.includes({first_words!r})",
                                   timeout=30_000)
            toasts.snap()
        page.get_by_role("tab", name="Attention").click()
        unavailable = [n for n, i in infos.items() if not i.available and i.family in ("vit", "deit", "dino")]
        if unavailable:
            name = unavailable[0]
            _pick(page, "#attn-model", f"{name} (")
            first_words = infos[name].description.split(":")[0][:40]
            page.wait_for_function(f"document.querySelector('#attn-model-note').innerText.includes({first_words!r})",
                                   timeout=30_000)
            page.wait_for_timeout(1500)
            assert "Error" not in page.locator("#attn-model-note").inner_text()
            note_block = page.locator("#attn-model-note")
            assert note_block.locator(".error").count() == 0
        toasts.snap()
        toasts.assert_no_duplicates()
    finally:
        page.close()


# ----------------------------------------------------------------------------- items 4 and 12


def test_patches_sincos_panel_on_first_load(page_url, browser):
    """Item 4: the recomputed sin-cos maps are drawn on first load, without touching a control.

    The session's app starts on the embedded models (tests/conftest.py), so the Patches tab opens on
    an MAE, whose sin-cos panel is the one shown; a learned-embedding model hides it.
    """
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    sincos = "(document.querySelector('#patches-res-sincos img') || {}).src"
    try:
        for _ in range(2):  # the first load and a reload
            page.goto(page_url + "?tab=patches")
            page.wait_for_function("(document.querySelector('#patches-model input') || {}).value", timeout=180_000)
            model = page.locator("#patches-model input").input_value()
            assert model.startswith("mae-tiny"), model
            page.wait_for_function(sincos, timeout=180_000)
    finally:
        page.close()


def test_sweep_chart_marks_the_slider(page_url, browser):
    """Item 12: the ratio sweep chart has a marker at the slider's ratio, and it follows the slider."""
    page = _open(browser, page_url, (1920, 1080))
    try:
        page.wait_for_selector("#mae-sweep-chart .js-plotly-plot", timeout=300_000)
        marker = ("() => { const p = document.querySelector('#mae-sweep-chart .js-plotly-plot');"
                  " const s = (p.layout.shapes || []).find(s => s.name === 'current-ratio'); return s ? s.x0 : null; }")
        page.wait_for_function(f"({marker})() === 75", timeout=30_000)
        page.locator("body").click(position={"x": 5, "y": 5})
        page.keyboard.press("ArrowLeft")
        page.wait_for_function(f"({marker})() === 70", timeout=30_000)
        # the thumbnails are whole squares with captions
        imgs = page.locator("#mae-thumbs img")
        assert imgs.count() == 4
        fit = imgs.first.evaluate("e => getComputedStyle(e).objectFit")
        assert fit == "contain"
        assert "25% hidden" in page.locator("#mae-thumbs").inner_text()
    finally:
        page.close()


def test_ratio_zero_says_nothing_is_hidden(page_url, browser):
    """Item 12: at ratio 0 the metrics say nothing is hidden (no '1.0x fewer FLOPs', no PSNR of nothing)."""
    page = _open(browser, page_url + "?ratio=0", (1280, 720))
    try:
        page.wait_for_function("document.querySelector('#mae-metrics').innerText.includes('nothing is hidden')",
                               timeout=60_000)
        text = page.locator("#mae-metrics").inner_text()
        assert "1.0x" not in text and "PSNR" not in text
    finally:
        page.close()


def test_swin_shows_a_default_token_and_one_based_heads(page_url, browser):
    """Item 12: Swin's attention section is filled before any click, heads counted from 1 as on Attention."""
    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    try:
        page.goto(page_url + "?tab=swin")
        page.wait_for_selector("#swin-overlay img", timeout=300_000)
        page.wait_for_selector("#swin-heads img", timeout=60_000)
        text = page.locator("#swin-heads-plot").inner_text()
        assert "head 1" in text and "head 0" not in text
    finally:
        page.close()


def test_compute_chart_titles_do_not_overlap(page_url, browser):
    """Item 12: on the Compute tab's first chart no axis title runs into the legend or the chart title."""
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    try:
        page.goto(page_url + "?tab=compute")
        page.wait_for_selector("#plot-attention-flops .js-plotly-plot .g-y2title", timeout=120_000)
        page.wait_for_timeout(500)
        boxes = page.evaluate("""() => { const root = document.querySelector('#plot-attention-flops');
          const r = s => { const e = root.querySelector(s); if (!e) return null; const b = e.getBoundingClientRect();
            return [b.left, b.top, b.right, b.bottom]; };
          return {title: r('.gtitle'), y: r('.g-ytitle'), y2: r('.g-y2title'), legend: r('.legend')}; }""")
        names = [k for k, v in boxes.items() if v]

        def overlap(a, b):
            return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

        for i, a in enumerate(names):
            for b in names[i + 1:]:
                assert not overlap(boxes[a], boxes[b]), (a, b, boxes)
    finally:
        page.close()
