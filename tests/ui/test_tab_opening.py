"""Opening a tab computes its view once, even with a new shared image; selecting it again sends nothing.

Counts the server handlers the page starts (vitviz.ui.lazy, vitviz.ui.shared_image): the
tab openers and the shared image run in the page, so a tab's selection itself is no request.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.ui.test_app import FIRST_VIEWS_DONE, metrics_marker, wait_metrics
from tools.appserver import CHROMIUM, LAUNCH_ARGS
from vitviz.assets import example_images

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")

EXAMPLES = Path(__file__).resolve().parents[2] / "assets" / "examples"


class _Requests:
    """Every POST the page sends to the app, and the handlers (dependency ids) among them."""

    def __init__(self, page) -> None:  # noqa: ANN001
        self.posts: list[str] = []
        self.handlers: list[int] = []
        page.on("request", self._record)

    def _record(self, request) -> None:  # noqa: ANN001
        if request.method != "POST":
            return
        self.posts.append(request.url)
        body = request.post_data_json if "/upload" not in request.url else None
        if isinstance(body, dict) and body.get("fn_index") is not None:
            self.handlers.append(int(body["fn_index"]))


def _writers(page, elem_id: str) -> set[int]:  # noqa: ANN001
    """Ids of the dependencies whose outputs include the component with ``elem_id``."""
    config = page.evaluate("() => window.gradio_config")
    target = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == elem_id)
    return {d["id"] for d in config["dependencies"] if target in d["outputs"]}


def _settle(page, ms: int = 3000) -> None:  # noqa: ANN001
    page.wait_for_timeout(ms)  # lets any handler the page would start begin (the test counts, never times)


def _shows(elem: str, name: str, present: bool = True) -> str:
    """Page condition: the image box ``elem`` shows (or no longer shows) a file whose URL contains ``name``."""
    test = f"(document.querySelector('#{elem} img') || {{}}).src?.includes('{name}')"
    return test if present else f"!{test}"


def _views_on_select(page, seen: _Requests, tab: str, box: str, writers: set[int],  # noqa: ANN001
                     drawn: str | None = None) -> int:
    """Select ``tab``, wait for condition ``box`` (and ``drawn``): how many handlers writing ``writers`` ran."""
    before = len(seen.handlers)
    page.get_by_role("tab", name=tab).click()
    page.wait_for_function(box, timeout=60_000)
    if drawn:
        page.wait_for_function(drawn, timeout=300_000)
    _settle(page)
    return len([h for h in seen.handlers[before:] if h in writers])


def test_new_image_then_first_open_computes_once_and_reselects_send_nothing(app_url, tmp_path):
    from PIL import Image
    from playwright.sync_api import sync_playwright

    upload = tmp_path / "lesson.png"
    Image.open(EXAMPLES / "coffee.jpg").crop((0, 0, 300, 300)).save(upload)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        seen = _Requests(page)
        page.goto(app_url)
        page.locator("#mae-metrics").get_by_text("hidden").wait_for(timeout=300_000)  # the MAE view is drawn
        overlay = _writers(page, "attn-query-overlay")
        assert not set(seen.handlers) & overlay  # the page load ran no Attention view

        # a new photo on the MAE tab (once the page's first views are all in: test_app.FIRST_VIEWS_DONE), then
        # the Attention tab opens for the first time: its view runs once
        page.wait_for_function(FIRST_VIEWS_DONE, timeout=300_000)
        page.locator("#mae-input input[type=file]").set_input_files(str(upload))
        page.wait_for_function(_shows("mae-input", "lesson"), timeout=60_000)
        wait_metrics(page, metrics_marker(upload, 0.75))  # the upload's own MAE view (not the first view's)
        _settle(page)
        runs = _views_on_select(page, seen, "Attention", _shows("attn-input", "lesson"), overlay,
                                drawn="() => document.querySelector('#attn-query-overlay img') !== null")
        assert runs == 1, f"the Attention view ran {runs} times on first open"

        # selecting tabs again with no new image: not one request reaches the server
        posts = len(seen.posts)
        for name in ("MAE", "Attention", "MAE", "Attention"):
            page.get_by_role("tab", name=name).click()
            _settle(page, 1000)
        assert seen.posts[posts:] == []

        # an example picked on the Attention tab: the MAE tab (already open) redraws once when selected
        page.locator("#attn-examples").get_by_role("button").first.click()
        page.wait_for_function(_shows("attn-input", "lesson", present=False), timeout=60_000)
        _settle(page)
        picked = Path(urlparse(page.locator("#attn-input img").first.get_attribute("src")).path).name
        example = next(e for e in example_images() if Path(e).name == picked)
        drawn = ("() => (document.querySelector('#mae-metrics')?.innerText || '').includes("
                 + json.dumps(metrics_marker(example, 0.75)) + ")")  # the picked photo's own MAE view
        runs = _views_on_select(page, seen, "MAE", _shows("mae-input", "lesson", present=False),
                                _writers(page, "mae-metrics"), drawn=drawn)
        assert runs == 1, f"the MAE view ran {runs} times for one new image"
        browser.close()


def test_emptying_the_box_redraws_the_tab(app_url):
    """The Swin tab draws a synthetic picture when its box is emptied (the box's clear moves the tab's relay)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(app_url + "?tab=swin")
        view = page.locator("#swin-regular img")
        view.wait_for(timeout=300_000)
        before = view.get_attribute("src")
        page.locator("#swin-input button[aria-label='Remove Image']").click()
        page.wait_for_function("(s) => (document.querySelector('#swin-regular img') || {}).src !== s", arg=before,
                               timeout=120_000)
        browser.close()
