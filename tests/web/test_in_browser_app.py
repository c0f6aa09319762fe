"""The app serves the in-browser MAE at ``/in-browser/``: cross-origin isolated (threads), and moving the
ratio, seed and pattern there makes no request at all (the page computes every panel itself)."""

from __future__ import annotations

import os
import time

import pytest

from tests.ui.test_mae_inpage import default_threads
from tools.appserver import CHROMIUM, LAUNCH_ARGS

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")


def test_in_browser_page_on_the_app_is_isolated_and_silent(app_url):
    from playwright.sync_api import sync_playwright

    base = app_url.rstrip("/") + "/in-browser/"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        pg = browser.new_page(viewport={"width": 1280, "height": 720})
        requests: list[str] = []
        pg.on("request", lambda r: requests.append(r.url))
        pg.goto(base)
        pg.wait_for_selector("body[data-ready='1']", timeout=180_000)
        assert pg.evaluate("self.crossOriginIsolated") is True
        threads = pg.evaluate("window.maePage.stats.threads")
        cores = pg.evaluate("navigator.hardwareConcurrency")
        assert threads == default_threads(cores)
        assert f"{threads} thread" in pg.inner_text("#status")
        assert all(r.startswith(base) for r in requests), requests
        time.sleep(1.0)  # the service worker's first caching requests, if any, are over
        requests.clear()
        for step in range(3):
            before = pg.evaluate("window.maePage.stats.runs")
            pg.focus("#ratio")
            pg.keyboard.press("ArrowLeft")
            pg.wait_for_function(f"window.maePage.stats.runs > {before}", timeout=60_000)
        before = pg.evaluate("window.maePage.stats.runs")
        pg.fill("#seed", "4")
        pg.select_option("#pattern", "block")
        pg.wait_for_function(f"window.maePage.stats.runs > {before} && !window.maePage.busy", timeout=60_000)
        assert pg.evaluate("window.maePage.stats.last.hidden") == round(0.6 * 196)
        assert requests == []  # zero server calls: every panel above was computed in the page
        browser.close()
