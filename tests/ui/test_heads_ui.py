"""The Heads tab in the served app: its named endpoints, and a clicked head opening the Attention tab."""

from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image

from tools.appserver import CHROMIUM, LAUNCH_ARGS, running_app


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The whole app (both tabs, lazy loading, the shared image) on a free loopback port."""
    log = tmp_path_factory.mktemp("heads-app") / "app.log"
    with running_app(log=log, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="2") as (url, _proc):
        yield url


def test_handlers_without_a_browser(photo_path):
    """The head click's target, the Attention tab's one-head view, and a clicked query or key."""
    import gradio as gr

    from vitviz.ui import attention_tab as t
    from vitviz.ui import heads_tab as h

    img = str(photo_path)
    goto = t.on_goto('{"model": "vit-base:random", "layer": 5, "head": 7}', "mae-tiny")
    assert goto.model["value"] == "vit-base:random" and goto.part == "encoder" and goto.mask_ratio == 0.0
    assert goto.layer == {"__type__": "update", "maximum": 12, "value": 5} and goto.head == 7
    with pytest.raises(gr.Error, match="no layer 9, head 1"):
        t.on_goto('{"layer": 9, "head": 1}', "mae-tiny")
    with pytest.raises(gr.Error, match="must name a layer and a head"):
        t.on_goto("not json", "mae-tiny")
    mean = t.head_query(img, "mae-tiny", "encoder", 0.0, 0, 4, "patch", 3, 5, 0)
    one = t.head_query(img, "mae-tiny", "encoder", 0.0, 0, 4, "patch", 3, 5, 2)
    # the left overlay shows head 2 alone
    assert np.array_equal(mean.heads, one.heads) and not np.array_equal(mean.overlay, one.overlay)
    assert "Head 2 selected" in one.query_info and "Head" not in mean.query_info.split("**Layer")[0]
    controls = t.Controls(img, "mae-tiny", "encoder", 0.0, 0, 4, "patch", 3, 5, False, "mean", 0.0, 2)
    assert t.update_all(controls).query_info == one.query_info
    with pytest.raises(gr.Error, match="head must be 0"):
        t.head_query(img, "mae-tiny", "encoder", 0.0, 0, 4, "patch", 3, 5, 4)
    key_text = h.qk_token(img, "mae-tiny", 2, 1, '{"token": 20, "kind": 1}').token_text
    assert "key of patch (row 1, col 5)" in key_text
    cls_text = h.qk_token(img, "mae-tiny", 2, 1, '{"token": 0, "kind": 0}').token_text
    assert "class token has no patch" in cls_text


def test_named_endpoints(app, photo_path):
    from gradio_client import Client, handle_file

    client = Client(app, verbose=False)
    img = handle_file(str(photo_path))
    grid, scatter, text = client.predict(img, "mae-tiny", "image", api_name="/head_atlas")
    assert grid and scatter and "24 heads over this image" in text
    _, _, mean_text = client.predict(img, "mae-tiny", "examples", api_name="/head_atlas")
    assert "example photos" in mean_text
    fig, qk_text = client.predict(img, "mae-tiny", 3, 2, api_name="/qk_space")
    assert fig and "Layer 3, head 2" in qk_text and "PCA" in qk_text
    with pytest.raises(Exception, match="head must be 1..3|greater than maximum"):
        client.predict(img, "mae-tiny", 3, 4, api_name="/qk_space")


#: Page coordinates of the centre of the grid cell of (layer, head), both 1-based (Plotly's axes).
CELL_JS = """([layer, head]) => {
  const gd = document.querySelector('#heads-grid .js-plotly-plot');
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
  return [r.left + xa._offset + xa.l2p(head), r.top + ya._offset + ya.l2p(layer)];
}"""


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_click_a_head_cell_opens_its_query_view(app):
    from playwright.sync_api import expect, sync_playwright

    layer, head = 5, 2
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        try:
            page.goto(app + "?tab=heads")
            page.locator("#heads-grid .js-plotly-plot").wait_for(timeout=240_000)
            page.wait_for_function("document.querySelector('#heads-info') && "
                                   "document.querySelector('#heads-info').innerText.includes('24 heads')",
                                   timeout=240_000)
            page.locator("#heads-grid").scroll_into_view_if_needed()
            # The plot is drawn and the page's click handler (heads_tab.CLICK_JS) is attached to it.
            page.wait_for_function("(() => { const gd = document.querySelector('#heads-grid .js-plotly-plot');"
                                   " return gd && window.vitviz.heads.attached(gd) && gd._fullLayout && gd._fullLayout.xaxis; })()", timeout=120_000)
            x, y = page.evaluate(CELL_JS, [layer, head])
            page.mouse.click(x, y)
            expect(page.get_by_role("tab", name="Attention")).to_have_attribute("aria-selected", "true",
                                                                             timeout=60_000)
            page.wait_for_function(
                "([l, h]) => { const t = document.querySelector('#attn-query-info');"
                " return t && t.innerText.includes(`Head ${h} selected`) && t.innerText.includes(`Layer ${l} of 8`); }",
                arg=[layer, head], timeout=240_000)
            expect(page.locator("#attn-layer input[type=number]")).to_have_value(str(layer), timeout=30_000)
            expect(page.locator("#attn-head input")).to_have_value(str(head), timeout=30_000)
            overlay = page.locator("#attn-query-overlay img").first
            assert overlay.get_attribute("src")
        finally:
            browser.close()


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_click_a_key_shows_its_patch(app):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        try:
            page.goto(app + "?tab=heads")
            page.wait_for_function("document.querySelector('#heads-token-info') && "
                                   "document.querySelector('#heads-token-info').innerText.includes('row 7, col 7')",
                                   timeout=240_000)
            page.locator("#heads-qk").scroll_into_view_if_needed()
            page.wait_for_function("(() => { const gd = document.querySelector('#heads-qk .js-plotly-plot');"
                                   " return gd && window.vitviz.heads.attached(gd) && gd.calcdata && gd._fullData &&"
                                   " gd._fullData.some(t => t.name === 'keys (patches)'); })()", timeout=120_000)
            # A patch key that no other point covers (Plotly gives a click to the closest point of any
            # trace, and where the scatter puts each point depends on the weights): the key whose
            # nearest other point is farthest away, and its position on the page.
            x, y = page.evaluate("""() => {
              const gd = document.querySelector('#heads-qk .js-plotly-plot');
              const tr = gd._fullData.findIndex(t => t.name === 'keys (patches)');
              const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
              const px = pt => [r.left + xa._offset + xa.c2p(pt.x), r.top + ya._offset + ya.c2p(pt.y)];
              const all = gd.calcdata.flatMap((trace, i) => trace.map((pt, j) => [i, j, ...px(pt)]));
              let best = null, bestGap = -1;
              for (const [i, j, x, y] of all) {
                if (i !== tr) continue;
                let gap = Infinity;
                for (const [i2, j2, x2, y2] of all) {
                  if (i2 === i && j2 === j) continue;
                  gap = Math.min(gap, Math.hypot(x2 - x, y2 - y));
                }
                if (gap > bestGap) { bestGap = gap; best = [x, y]; }
              }
              return best;
            }""")
            page.mouse.click(x, y)
            page.wait_for_function("document.querySelector('#heads-token-info').innerText.includes('attend to the key')",
                                   timeout=120_000)
            src = page.locator("#heads-token img").first.get_attribute("src")
            assert src
        finally:
            browser.close()
