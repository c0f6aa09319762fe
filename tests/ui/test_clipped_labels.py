"""Labels a newcomer saw cut at 1280×720: a picture's label running under its icon buttons (Swin's "Your image
(optional: a synthetic picture is used when empty)", its rolled-map panel, the presenter layout's upload box) and
Explain's classifier name cut in its box. Each tab is opened by its URL; the labels are measured, not looked at."""

from __future__ import annotations

import os

import pytest

from tools.appserver import CHROMIUM, LAUNCH_ARGS

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")

READY = "window.vitviz && window.vitviz.tabs.ready === true"
#: Page code: the labels drawn over a picture that overlap one of its icon buttons, and the text boxes whose
#: text is wider than the box.
CUT = """() => {
  const shown = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const out = [];
  for (const lab of document.querySelectorAll('label.float[data-testid=block-label]')) {
    const block = lab.closest('.block');
    if (!block || !shown(lab)) continue;
    const a = lab.getBoundingClientRect();
    for (const ic of block.querySelectorAll('.icon-button-wrapper button')) {
      const b = ic.getBoundingClientRect();
      if (shown(ic) && b.left < a.right - 1 && b.right > a.left + 1 && b.top < a.bottom - 1 && b.bottom > a.top + 1) {
        out.push(block.id + ': ' + lab.textContent.trim()); break;
      }
    }
  }
  for (const el of document.querySelectorAll('.tabitem input[type=text], .tabitem input:not([type])')) {
    if (shown(el) && el.scrollWidth > el.clientWidth + 1) out.push((el.closest('.block') || el).id + ': ' + el.value);
  }
  return out;
}"""


@pytest.mark.parametrize("query", ["tab=swin", "tab=mae&presenter=1", "tab=explain"])
def test_no_label_is_cut_at_1280x720(app_url, query):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(f"{app_url}?{query}")
        page.wait_for_function(READY, timeout=120_000)
        page.wait_for_function("() => [...document.querySelectorAll('.tabitem img')].some(i => i.getAttribute('src'))",
                               timeout=300_000)
        page.wait_for_timeout(1500)
        cut = page.evaluate(CUT)
        browser.close()
    assert cut == [], cut
