import os

import pytest

from vitviz.ui.app import TAB_IDS
from vitviz.ui.urlstate import tab_js
from vitviz.views.urlstate import UrlState, parse_query
from tools.appserver import CHROMIUM, LAUNCH_ARGS


def test_parse_query_validates_everything():
    s = parse_query({"tab": "swin", "model": "mae-tiny", "ratio": "0.61", "seed": "3", "pattern": "block",
                     "layer": "4", "presenter": "1"}, TAB_IDS)
    assert s == UrlState("swin", "mae-tiny", 0.6, 3, "block", 4, True)
    bad = parse_query({"tab": "../etc", "model": "/etc/passwd", "ratio": "nan", "seed": "-1", "pattern": "x",
                       "layer": "1e9", "presenter": "maybe"}, TAB_IDS)
    assert bad == UrlState()
    assert parse_query({"tab": "swin"}).tab is None  # only the app's own tabs are kept
    assert parse_query({"ratio": "0.99"}).ratio is None and parse_query({"seed": "2.5"}).seed is None
    assert '"swin"' in tab_js("swin")
    with pytest.raises(ValueError):
        tab_js("x'); alert(1); ('")  # ids go into browser code: only plain names


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_url_round_trip_and_presenter(app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(app_url + "?tab=mae&ratio=0.6&seed=3&pattern=block")
        page.wait_for_function("document.querySelector('#mae-metrics') && "
                               "document.querySelector('#mae-metrics').innerText.includes('(118 hidden)')",
                               timeout=120_000)
        assert page.locator("#mae-pattern input[value=block]").is_checked()
        assert page.locator("#mae-seed input").input_value() == "3"
        # Moving the slider writes the new state into the URL ...
        page.locator("#mae-ratio input[type=range]").fill("0.8")
        page.wait_for_function("window.location.search.includes('ratio=0.80')", timeout=30_000)
        shared = page.url
        assert "seed=3" in shared and "pattern=block" in shared
        # ... and a teacher's link opens the same view in a fresh page.
        other = browser.new_page(viewport={"width": 1400, "height": 1000})
        other.goto(shared)
        other.wait_for_function("document.querySelector('#mae-metrics') && "
                                "document.querySelector('#mae-metrics').innerText.includes('(157 hidden)')",
                                timeout=120_000)
        assert other.locator("#mae-pattern input[value=block]").is_checked()
        # Presenter layout: explanations hidden, panels larger, keys step the ratio.
        normal_h = other.locator("#panel-pasted img").first.bounding_box()["height"]
        pres = browser.new_page(viewport={"width": 1400, "height": 1000})
        pres.goto(app_url + "?presenter=1&ratio=0.5")
        pres.wait_for_function("document.querySelector('#mae-metrics') && "
                               "document.querySelector('#mae-metrics').innerText.includes('(98 hidden)')",
                               timeout=120_000)
        assert pres.evaluate("document.body.classList.contains('vitviz-presenter')")
        assert not pres.locator(".vitviz-help").first.is_visible()
        assert pres.locator("#panel-pasted img").first.bounding_box()["height"] > normal_h * 1.3
        for panel in ("panel-original", "panel-masked", "panel-pasted"):  # whole panels, none clipped
            img = pres.locator(f"#{panel} img").first.bounding_box()
            block = pres.locator(f"#{panel}").bounding_box()
            assert img["y"] + img["height"] <= block["y"] + block["height"] + 1, panel
        pres.locator("body").click(position={"x": 5, "y": 5})
        pres.keyboard.press("ArrowRight")
        pres.wait_for_function("document.querySelector('#mae-metrics').innerText.includes('(108 hidden)')",
                               timeout=60_000)
        pres.screenshot(path=tmp_path / "presenter.png", full_page=True)  # looked at by hand; gone with the test
        browser.close()


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_attention_layer_in_url(app_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(app_url + "?tab=attention&layer=5")
        page.wait_for_selector("[role=tab][aria-selected=true]:has-text('Attention')", timeout=60_000)
        page.wait_for_function("document.querySelector('#attn-layer input[type=range]') && "
                               "document.querySelector('#attn-layer input[type=range]').value === '5'",
                               timeout=120_000)
        page.locator("#attn-layer input[type=range]").fill("3")
        page.wait_for_function("window.location.search.includes('layer=3')", timeout=30_000)
        browser.close()


def test_painted_mask_round_trips_in_the_url():
    """Issue 15 item 3: the painted mask travels in the URL, compactly, and anything malformed is ignored."""
    import numpy as np

    from vitviz.views.urlstate import decode_mask, encode_mask, parse_query

    rng = np.random.default_rng(0)
    for shape in ((14, 14), (7, 5), (1, 1), (64, 64)):
        m = rng.random(shape) < 0.4
        assert np.array_equal(decode_mask(encode_mask(m)), m)
    assert len(encode_mask(np.ones((14, 14), bool))) <= 55
    for bad in ("", "14x14", "14x14.zz", "14x14.ff", "0x3.0", "65x1." + "0" * 17, "14x14." + "f" * 60, None,
                "a.b", "7x5." + "0" * 8 + "1"):  # the last: a padding bit set
        assert decode_mask(bad) is None, bad
    eye = np.eye(14, dtype=bool)
    assert np.array_equal(parse_query({"mask": encode_mask(eye)}, ("mae",)).mask, eye)
    assert parse_query({"mask": "14x14.nothex"}, ("mae",)).mask is None
