"""Issue 34: every tab's key visual is on the first screen at 1280×720 (a projector's size), without
scrolling: at least its upper 150 px (all of it when it is shorter), with the header (intro, tour, share
line) above it. Each tab is opened by its URL, as a shared link opens it."""

from __future__ import annotations

import os

import pytest

from tools.appserver import CHROMIUM, LAUNCH_ARGS

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")

WIDTH, HEIGHT = 1280, 720
#: Tab id -> the elements a class must see first: the key visual (and, for Explain, the model note that
#: warns when the classifier has random weights).
KEY_VISUALS: dict[str, tuple[str, ...]] = {
    "mae": ("#panel-masked", "#panel-pasted", "#panel-error", "#mae-metrics"),
    "patches": ("#patches-overlay",),
    "attention": ("#attn-query-overlay",),
    "heads": ("#heads-grid",),
    "explain": ("#explain-model-note", "#explain-maps"),
    "intervene": ("#intervene-chart", "#intervene-info"),
    "features": ("#feat-pca",),
    "pretraining": ("#pre-probe",),
    "beit": ("#beit-token-map",),
    "swin": ("#swin-shifted",),
    "compute": ("#plot-attention-flops",),
}
#: Page condition: an element holds a drawn picture or chart.
DRAWN = ("(sel) => { const el = document.querySelector(sel); if (!el) return false;"
         " const img = el.querySelector('img'); return Boolean((img && img.getAttribute('src'))"
         " || el.querySelector('.js-plotly-plot .main-svg') || el.innerText.trim()); }")
SEEN = 150


def test_tab_ids_match_the_app():
    from vitviz.ui.app import TAB_IDS

    assert set(KEY_VISUALS) == set(TAB_IDS)


def test_every_tabs_key_visual_is_on_the_first_screen(app_url):
    from playwright.sync_api import sync_playwright

    late = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        for tab, selectors in KEY_VISUALS.items():
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(f"{app_url}?tab={tab}")
            page.wait_for_function("window.vitviz && window.vitviz.tabs.ready === true", timeout=120_000)
            for sel in selectors:
                page.wait_for_function(DRAWN, arg=sel, timeout=300_000)
            page.wait_for_timeout(1500)  # the tab's other first views settle (they can push things down)
            assert page.evaluate("window.scrollY") == 0
            for sel in selectors:
                box = page.locator(sel).first.bounding_box()
                assert box is not None, (tab, sel)
                if box["y"] < 0 or box["y"] + min(SEEN, box["height"]) > HEIGHT + 1:
                    late.append((tab, sel, round(box["y"]), round(box["height"])))
            if tab == "explain" and "random" in page.locator("#explain-model").inner_text().lower():
                assert "Random weights" in page.locator("#explain-model-note").inner_text()
            page.close()
        browser.close()
    assert not late, f"below the first screen at {WIDTH}x{HEIGHT} (tab, element, top, height): {late}"
