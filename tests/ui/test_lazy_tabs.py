"""Lazy tabs: a page load runs only the handlers of the tab it shows; other tabs compute when first opened."""

from __future__ import annotations

import os

import pytest

from tools.appserver import CHROMIUM, LAUNCH_ARGS

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")


def _tab_of_components(config: dict) -> dict[int, str]:
    """Component id -> id of the tab that holds it (components outside every tab are left out)."""
    tab_ids = {c["id"]: c["props"].get("id") for c in config["components"] if c.get("type") == "tabitem"}
    out: dict[int, str] = {}

    def walk(node: dict, tab: str | None) -> None:
        tab = tab_ids.get(node["id"], tab)
        if tab is not None:
            out[node["id"]] = tab
        for child in node.get("children", []):
            walk(child, tab)

    walk(config["layout"], None)
    return out


class _Handlers:
    """Records the server handlers (dependency ids) a page runs, and the tabs they write to."""

    def __init__(self, page) -> None:  # noqa: ANN001
        self.page = page
        self.ran: list[int] = []
        page.on("request", self._record)

    def _record(self, request) -> None:  # noqa: ANN001
        if request.method == "POST" and ("/queue/join" in request.url or "/run/predict" in request.url):
            body = request.post_data_json
            if isinstance(body, dict) and body.get("fn_index") is not None:
                self.ran.append(int(body["fn_index"]))

    def tabs(self) -> list[set[str]]:
        """For each handler run so far: the set of tabs its outputs are in (empty: outside every tab).

        Left out, as they compute no view: the page-load handler that reads the URL into the
        controls, and the handlers of a tab's selection (the shared image copied into the tab's box,
        vitviz.ui.shared_image).
        """
        config = self.page.evaluate("() => window.gradio_config")
        where = _tab_of_components(config)
        deps = {d["id"]: d for d in config["dependencies"]}
        skip = {i for i, d in deps.items()
                if d["targets"] and all(event in ("load", "select") for _, event in d["targets"])}
        return [{where[o] for o in deps[i]["outputs"] if o in where} for i in self.ran if i not in skip]


def _idle(page, ms: int = 3000) -> None:
    page.wait_for_timeout(ms)  # let any handler the page would start begin (the test counts, never times)


def test_page_load_runs_only_the_visible_tab(app_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        handlers = _Handlers(page)
        page.goto(app_url)
        page.wait_for_function("() => (document.body.dataset.vitvizScrub || '').startsWith('ready:')",
                               timeout=300_000)
        _idle(page)
        on_load = handlers.tabs()
        assert any(t == {"mae"} for t in on_load), on_load  # the MAE tab's view and sweep ran
        assert all(t <= {"mae"} for t in on_load), f"a page load ran other tabs' handlers: {on_load}"
        # The Attention tab computes when it is first opened ...
        before = len(handlers.ran)
        page.get_by_role("tab", name="Attention").click()
        page.wait_for_function("() => document.querySelector('#attn-query-overlay img') !== null", timeout=300_000)
        _idle(page)
        opened = handlers.tabs()[before:]
        assert opened and all(t <= {"attention"} for t in opened), opened
        assert any(t == {"attention"} for t in opened)
        # ... and never again: switching back and forth computes no view.
        before = len(handlers.tabs())
        for name in ("MAE", "Attention", "MAE"):
            page.get_by_role("tab", name=name).click()
            _idle(page, 1000)
        assert handlers.tabs()[before:] == []
        browser.close()


def test_a_url_that_opens_another_tab_computes_only_that_tab(app_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        handlers = _Handlers(page)
        page.goto(app_url + "?tab=patches")
        page.wait_for_function("() => document.querySelector('#patches-overlay img') !== null", timeout=300_000)
        _idle(page)
        on_load = handlers.tabs()
        assert any(t == {"patches"} for t in on_load), on_load
        assert all(t <= {"patches"} for t in on_load), f"a page load ran other tabs' handlers: {on_load}"
        browser.close()
