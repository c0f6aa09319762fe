"""The guided tour (vitviz.ui.tour): its steps name real tabs and components; a browser walks it to the end and
back, waiting on each step's own output, and every step ends with its key visual and the bar on screen."""

import os

import pytest

from tools.appserver import CHROMIUM, LAUNCH_ARGS
from vitviz.ui import tour
from vitviz.views import tour as steps_data


def _blocks():
    from vitviz.ui.app import build_demo

    demo = build_demo()
    return {b.elem_id: b for b in demo.blocks.values() if getattr(b, "elem_id", None)}


def test_steps_name_real_tabs_and_components():
    from vitviz.ui.app import TAB_IDS

    steps_data.check(tour.default_steps(), TAB_IDS)
    with pytest.raises(ValueError, match="not one of"):
        steps_data.check((steps_data.Step("nowhere", "t", "n", output="x", ready=("x", "y")),), TAB_IDS)
    blocks = _blocks()
    from vitviz.ui.common import example_images

    names = {os.path.splitext(os.path.basename(p))[0] for p in example_images()}
    assert steps_data.PHOTO in names  # the default photo is a bundled example
    for step in tour.default_steps():
        assert step.output in blocks and step.ready[0] in blocks, step.title
        assert step.photo is None or step.photo in names, step.title
        for elem_id, value in step.controls:
            block = blocks[elem_id]
            if hasattr(block, "minimum") and block.minimum is not None:
                assert block.minimum <= value <= (block.maximum if block.maximum is not None else value), elem_id
            if getattr(block, "choices", None):
                assert str(value) in {str(c[1] if isinstance(c, tuple) else c) for c in block.choices}, elem_id
    assert '"tab": "patches"' in steps_data.steps_json(tour.default_steps())
    assert "<" not in steps_data.steps_json(tour.default_steps()[:1])


def _walked(page, i: int, step: steps_data.Step, height: int) -> None:
    """Step ``i`` (1-based) is in: its own output, its key visual on screen, the bar on screen."""
    page.wait_for_function(
        "([i, id, text]) => { const b = document.querySelector('#tour .vitviz-tour');"
        " const el = document.getElementById(id);"
        " return b && b.dataset.ready === String(i) && el && el.innerText.includes(text); }",
        arg=[i, *step.ready], timeout=300_000)
    assert page.locator("[role=tab][aria-selected=true]").get_attribute("data-tab-id") == step.tab
    box = page.locator(f"#{step.output}").bounding_box()
    bar = page.locator("#tour .vitviz-tour").bounding_box()
    assert box is not None and bar is not None, step.title
    assert 0 <= bar["y"] and bar["y"] + bar["height"] <= height, step.title
    # the key visual starts below the bar and is on screen (its upper part at least)
    assert bar["y"] + bar["height"] <= box["y"] + 1 and box["y"] + min(box["height"], 200) <= height + 1, step.title
    assert step.notice in page.locator("#tour .vitviz-tour-text").inner_text()


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_walk_the_tour_forward_and_back(app_url):
    from playwright.sync_api import sync_playwright

    steps = tour.steps_here()  # the session's app starts without the package's dinov2-small (tests/conftest.py)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(app_url)
        page.wait_for_function("window.vitviz && window.vitviz.tabs.ready === true", timeout=60_000)
        page.locator("#tour-start").click()
        for i, step in enumerate(steps, start=1):
            _walked(page, i, step, 720)
            assert page.locator("#tour-back").is_disabled() == (i == 1)
            if i < len(steps):
                page.locator("#tour-next").click()
        for i in range(len(steps) - 1, 0, -1):
            page.locator("#tour-back").click()
            _walked(page, i, steps[i - 1], 720)
        page.locator("#tour-end").click()
        page.wait_for_selector("#tour-start", timeout=10_000)
        assert page.locator("#tour .vitviz-tour").get_attribute("data-step") == ""
        browser.close()


def test_a_step_whose_model_is_missing_is_left_out(monkeypatch):
    """Without dinov2-small (the package's weights off, offline) the two-kinds step and the ablation step (on
    dinov2-small-lab8) would wait forever."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "0")
    monkeypatch.setenv("VITVIZ_WEIGHTS_DIR", "/nonexistent-vitviz-weights")
    steps = tour.default_steps()
    kinds = [s for s in steps if s.needs]
    assert sorted(s.title for s in kinds) == ["Switch one head off", "Two kinds of visual words"]
    assert all(k.needs == ("dinov2-small",) for k in kinds)
    here = tour.steps_here()
    assert len(here) == len(steps) - 2 and not set(kinds) & set(here)
    assert steps_data.available(tuple(s for s in steps if not s.needs)) == here


#: Scroll each of the shown tab's image-panel labels and icon buttons under the middle of the stuck bar; say
#: what the page draws there (the bar's own element, or the one drawn over it).
_UNDER_BAR_JS = """() => {
  const bar = document.querySelector('#tour .vitviz-tour');
  const panel = window.vitviz.examples.shownPanel();
  const parts = Array.from(panel.querySelectorAll('[data-testid=block-label], .icon-button-wrapper'))
    .filter((el) => el.offsetParent !== null).slice(0, 6);
  const out = [];
  for (const el of parts) {
    const b = bar.getBoundingClientRect(), r = el.getBoundingClientRect();
    window.scrollBy({top: r.top + r.height / 2 - (b.top + b.height / 2), left: 0, behavior: 'instant'});
    const r2 = el.getBoundingClientRect(), b2 = bar.getBoundingClientRect();
    const x = r2.left + r2.width / 2, y = b2.top + b2.height / 2;
    if (x < b2.left || x > b2.right) continue;
    const hit = document.elementFromPoint(x, y);
    out.push([el.className.toString().slice(0, 40), Boolean(hit && bar.contains(hit))]);
  }
  return out;
}"""


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_the_running_bar_is_drawn_over_the_panels_labels_and_icons(app_url):
    """While a step runs the bar sticks to the top of the window; the image panels scrolled under it (their
    labels, their download and full-screen buttons) are drawn below it, not over it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(app_url)
        page.wait_for_function("window.vitviz && window.vitviz.tabs.ready === true", timeout=60_000)
        page.locator("#tour-start").click()
        page.wait_for_function("document.querySelector('#tour .vitviz-tour').dataset.ready === '1'", timeout=300_000)
        seen = page.evaluate(_UNDER_BAR_JS)
        assert len(seen) >= 2, seen  # the patches tab's panels have labels and icon buttons
        assert all(on_top for _, on_top in seen), seen
        browser.close()


def _box_shows(page, tab: str, name: str) -> None:  # noqa: ANN001
    """Wait until tab ``tab``'s image box shows a file whose name starts with ``name``."""
    page.wait_for_function(
        "([tab, name]) => { const el = document.querySelector(`#${tab}-input .image-frame img`);"
        " return el && decodeURIComponent(el.getAttribute('src')).split('/').pop().startsWith(name); }",
        arg=[tab, name], timeout=120_000)


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_the_tour_keeps_the_visitors_photo_and_gives_it_back(app_url, tmp_path):
    """A visitor's upload stays in the steps that allow it; a step that needs its example (own_photo = false)
    shows the example, the next step the visitor's photo again; after Finish the visitor's photo is back."""
    from PIL import Image
    from playwright.sync_api import sync_playwright

    from tests.conftest import EXAMPLES

    steps = tour.steps_here()
    example_only = next(i for i, s in enumerate(steps) if not s.own_photo)
    after = next(i for i, s in enumerate(steps) if i > example_only and s.own_photo and s.photo)
    prefix = {"attention": "attn", "features": "feat"}
    upload = tmp_path / "lesson.png"
    Image.open(EXAMPLES / "coffee.jpg").resize((224, 224)).save(upload)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(app_url)
        page.wait_for_function("window.vitviz && window.vitviz.tabs.ready === true", timeout=60_000)
        page.locator("#mae-input input[type=file]").set_input_files(str(upload))
        _box_shows(page, "mae", "lesson")
        page.locator("#tour-start").click()
        for i in (0, example_only, after):
            page.evaluate(f"window.vitviz.tour.go({i})")
            _walked(page, i + 1, steps[i], 720)
            _box_shows(page, prefix.get(steps[i].tab, steps[i].tab), "lesson" if i != example_only else steps_data.PHOTO)
        page.evaluate(f"window.vitviz.tour.go({example_only})")  # the example again, then Finish elsewhere
        _walked(page, example_only + 1, steps[example_only], 720)
        last = len(steps) - 1
        assert steps[last].photo is None  # a tab without a box: the photo comes back as the page's image
        page.evaluate(f"window.vitviz.tour.go({last})")
        _walked(page, last + 1, steps[last], 720)
        page.locator("#tour-next").click()  # Finish
        page.wait_for_selector("#tour-start", timeout=10_000)
        assert "upload" in page.locator("#share").inner_text()
        page.locator("[role=tab][data-tab-id=mae]").click()
        _box_shows(page, "mae", "lesson")
        browser.close()
