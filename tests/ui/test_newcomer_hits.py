"""What a newcomer hit in the page (Chromium at 1280x720, photos the app never saw): each test failed before
its fix."""

from __future__ import annotations

import os

import pytest

from tools.appserver import CHROMIUM, LAUNCH_ARGS

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")

READY = "window.vitviz && window.vitviz.tabs.ready === true"


def _browser(p):  # noqa: ANN001, ANN202
    return p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)


def test_alt_p_is_the_p_key_whatever_it_types(app_url):
    """Alt+P toggles the presenter layout by the key's place (``code``), not the character it types: Option+P
    types 'π' on a Mac and Caps Lock makes it 'P'."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(app_url)
        page.wait_for_function(READY, timeout=120_000)
        shown = "document.body.classList.contains('vitviz-presenter')"
        assert not page.evaluate(shown)
        for key, on in (("π", True), ("P", False)):
            page.evaluate("(k) => document.body.dispatchEvent(new KeyboardEvent('keydown', "
                          "{key: k, code: 'KeyP', altKey: true, bubbles: true}))", key)
            page.wait_for_function(shown if on else f"!{shown}", timeout=10_000)
        browser.close()
