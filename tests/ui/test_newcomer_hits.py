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


#: Browser code: count the server calls each event of the MAE tab's image relay starts, by dependency
#: (window.__relayCalls: {fn_index: n}).
COUNT_RELAY_CALLS = """() => {
  const relay = window.gradio_config.components.find((c) => c.props.elem_id === 'image-relay-mae').id;
  window.__relayCalls = {};
  const send = window.fetch;
  window.fetch = function (url, init) {
    if (String(url).includes('queue/join') && init && init.body) {
      try {
        const d = JSON.parse(init.body);
        if (d.trigger_id === relay) window.__relayCalls[d.fn_index] = (window.__relayCalls[d.fn_index] || 0) + 1;
      } catch (e) { /* not JSON */ }
    }
    return send.apply(this, arguments);
  };
}"""


@pytest.mark.parametrize("kind", ["truncated", "huge"])
def test_a_refused_upload_runs_the_view_once(app_url, tmp_path, kind):
    """One upload sends the box's ``upload`` and ``input`` at once; both handlers read the relay, and the second
    put back the value it had read, so the relay moved twice and the tab's views (and their warning) ran twice."""
    import io

    from PIL import Image
    from playwright.sync_api import sync_playwright

    from tests.conftest import EXAMPLES
    from tests.ui.test_app import FIRST_VIEWS_DONE

    path = tmp_path / f"{kind}.png"
    if kind == "truncated":
        buf = io.BytesIO()
        Image.open(EXAMPLES / "coffee.jpg").save(buf, "png")
        path.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    else:
        Image.new("RGB", (12000, 12000), (200, 100, 50)).save(path)
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(app_url)
        page.wait_for_function(FIRST_VIEWS_DONE, timeout=300_000)
        page.evaluate(COUNT_RELAY_CALLS)
        page.locator("#mae-input input[type=file]").set_input_files(str(path))
        page.wait_for_function("() => (document.querySelector('#mae-metrics') || {innerText: ''})"
                               ".innerText.includes('Image problem')", timeout=60_000)
        page.wait_for_timeout(3000)  # a second run of the same upload has started by now
        calls = page.evaluate("window.__relayCalls")
        browser.close()
    assert calls and all(n == 1 for n in calls.values()), calls


#: Browser code run before the page's own: every frame, note each picture of the shown tab that is on screen
#: while its box does not yet show the linked photo (window.__early: the pictures' sources, first 60 chars).
WATCH_EARLY = """(name) => {
  window.__early = [];
  const look = () => {
    const V = window.vitviz;
    const panel = V && V.examples && V.examples.shownPanel();
    if (panel && V.examples.stem(V.examples.boxPhoto(panel)) !== name) {
      for (const img of panel.querySelectorAll('[data-testid=image] img')) {
        const r = img.getBoundingClientRect();
        if (img.naturalWidth > 0 && r.width > 0 && getComputedStyle(img).visibility === 'visible'
            && !img.closest('button.gallery-item')) window.__early.push((img.getAttribute('src') || '').slice(-60));
      }
    }
    requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
}"""


def test_a_linked_photo_is_the_first_one_shown(app_url):
    """``?tab=attention&layer=9&photo=coffee`` showed the cat's views for 2-6 s before the coffee cup's: the
    tab's pictures wait hidden until its box shows the linked photo."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.add_init_script(f"({WATCH_EARLY})('coffee')")
        page.goto(app_url + "?tab=attention&layer=9&photo=coffee")
        page.wait_for_function(
            "() => { const V = window.vitviz; const p = V && V.examples.shownPanel();"
            " return p && V.examples.stem(V.examples.boxPhoto(p)) === 'coffee' && !V.examples.busy(p)"
            " && !document.documentElement.classList.contains('vitviz-url-photo'); }", timeout=300_000)
        early = page.evaluate("Array.from(new Set(window.__early))")
        shown = page.evaluate("Array.from(window.vitviz.examples.shownPanel().querySelectorAll("
                              "'[data-testid=image] img')).filter((i) => getComputedStyle(i).visibility === 'visible')"
                              ".length")
        browser.close()
    assert early == [], early
    assert shown > 0  # the linked photo's views are shown once they are in


def test_the_tour_button_stays_put_when_the_link_note_changes(app_url):
    """The share line's text ("example photo chelsea", "your upload is not in the link", "copied") changed its
    width, and the tour's button beside it moved."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(app_url)
        page.wait_for_function(READY, timeout=120_000)
        page.evaluate("window.vitviz.share.example('chelsea')")
        before = page.locator("#tour-start").bounding_box()
        page.evaluate("window.vitviz.share.state.uploaded = true; window.vitviz.share.render()")
        assert "upload" in page.locator("#share").inner_text()
        after_upload = page.locator("#tour-start").bounding_box()
        page.evaluate("document.querySelector('#share .vitviz-share-done').textContent = 'copy it from the address bar'")
        after_copy = page.locator("#tour-start").bounding_box()
        browser.close()
    assert before["x"] == after_upload["x"] == after_copy["x"], (before, after_upload, after_copy)


#: Browser code run before the page's own: on every frame, for each position-embedding panel of the Patches tab
#: shown on screen, record whether its picture is there, whether its label is seen and what its empty box says
#: (window.__posStates: a list of 'id|picture|label|note' strings, each distinct state once).
WATCH_POS_PANELS = """(() => {
  window.__posStates = [];
  const ids = ['patches-sim-map', 'patches-sim-grid', 'patches-res-interp'];
  const tick = () => {
    for (const id of ids) {
      const block = document.getElementById(id);
      const r = block && block.getBoundingClientRect();
      if (!r || !r.width || !r.height) continue;
      const label = block.querySelector('label.float');
      const seen = Boolean(label && getComputedStyle(label).visibility !== 'hidden');
      const empty = block.querySelector('.empty');
      const note = empty ? getComputedStyle(empty, '::after').content : '';
      const state = [id, Boolean(block.querySelector('img[src]')), seen, note].join('|');
      if (!window.__posStates.includes(state)) window.__posStates.push(state);
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})();"""


def test_the_position_panels_label_arrives_with_its_picture(app_url):
    """The Patches tab's position-embedding panels are drawn after the grid and the token: until a panel's
    picture arrives its label is hidden and its empty box says the picture is being drawn (a label over an empty
    box read as a missing picture)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.add_init_script(WATCH_POS_PANELS)
        page.goto(app_url + "?tab=patches")
        page.wait_for_function(READY, timeout=120_000)
        page.locator("#patches-sim-map").scroll_into_view_if_needed()
        page.wait_for_function("() => ['patches-sim-map', 'patches-sim-grid', 'patches-res-interp'].every("
                               "(id) => document.querySelector('#' + id + ' img[src]'))", timeout=300_000)
        states = [s.split("|") for s in page.evaluate("window.__posStates")]
        browser.close()
    empty = [s for s in states if s[1] == "false"]
    assert empty, states  # the panels were seen before their pictures came
    assert all(label == "false" and "being drawn" in note for _, _, label, note in empty), states
    assert all(label == "true" for _, picture, label, _ in states if picture == "true"), states


def test_the_live_panels_are_wide_enough_for_a_projector(app_url):
    """The live camera's two panels were about 200 px wide at 1280 px (the camera took most of the row): the camera
    now takes a third of the row and each live panel is at least 260 px wide (420 at 1920 px)."""
    from playwright.sync_api import sync_playwright

    widths = {}
    with sync_playwright() as p:
        browser = _browser(p)
        for width, height, least in ((1280, 720, 260), (1920, 1080, 420)):
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(app_url + "?tab=mae")
            page.wait_for_function(READY, timeout=120_000)
            page.locator("#mae-live-box button").first.click()
            page.wait_for_selector("#mae-live-masked", state="visible", timeout=30_000)
            widths[width] = (least, [page.locator(f"#{i}").bounding_box()["width"]
                                     for i in ("mae-live-masked", "mae-live-pasted")])
            page.close()
        browser.close()
    assert all(min(w) >= least for least, w in widths.values()), widths
