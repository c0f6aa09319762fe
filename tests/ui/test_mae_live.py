"""The MAE tab's live camera, as a person uses it: Chromium's fake camera plays a panning photo.

The reconstruction panel keeps changing while the stream runs, moving the slider changes the hidden
share of the next frames, the page shows frames per second and latency, and stopping the camera
stops the server's work. No timing is asserted (bench/live.py measures the speed).
"""

from __future__ import annotations

import os
import time

import pytest

from tools.appserver import CHROMIUM, LAUNCH_ARGS, serving_tab
from tools.fake_camera import camera_args, pan_frames, write_y4m

#: Records every new picture of the live reconstruction panel in window.__livePanels (test-side only).
COUNT_PANELS = """() => {
  window.__livePanels = new Set();
  const note = () => {
    const img = document.querySelector('#mae-live-pasted img');
    if (img && img.src) window.__livePanels.add(img.src);
  };
  new MutationObserver(note).observe(document.body, {subtree: true, childList: true, attributes: true});
}"""


def _settled(read, quiet_s: float = 1.5, limit_s: float = 30.0) -> int:
    """``read()`` once it has stayed the same for ``quiet_s`` (at most ``limit_s``)."""
    value, since, start = read(), time.monotonic(), time.monotonic()
    while time.monotonic() - start < limit_s:
        time.sleep(0.25)
        now = read()
        if now != value:
            value, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return value
    raise AssertionError("the server kept computing live frames")


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_the_live_camera_follows_the_picture_and_the_slider_and_stops(tmp_path):
    from playwright.sync_api import sync_playwright

    from vitviz.ui import mae_live, mae_tab

    y4m = write_y4m(tmp_path / "camera.y4m", pan_frames())
    with serving_tab("MAE", mae_tab.build) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS + camera_args(y4m))
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url)
        page.locator("#mae-live-box").click()
        page.evaluate(COUNT_PANELS)
        page.locator("#mae-live-camera div[title='grant webcam access'] button").click()
        record = page.locator("#mae-live-camera button[aria-label='capture photo']")
        record.click()
        # The reconstruction panel changes with the picture: five different panels.
        page.wait_for_function("() => window.__livePanels.size >= 5", timeout=120_000)
        line = page.locator("#mae-live-line")
        assert "147 of 196 patches hidden (75%)" in line.inner_text()  # the tab's 75%
        assert "frames a second reach the page" in page.locator("#mae-live-rate").inner_text()
        assert "latency" in page.locator("#mae-live-rate").inner_text()
        # The slider acts on the next frames: 75% -> 50%.
        page.locator("#mae-ratio input[type=range]").focus()
        for _ in range(5):
            page.keyboard.press("ArrowLeft")
        page.wait_for_function("() => (document.querySelector('#mae-live-line') || {}).innerText"
                               ".includes('98 of 196 patches hidden (50%)')", timeout=120_000)
        stats = page.evaluate("vitviz.live.stats()")
        assert stats["total"] >= 5 and all(ms > 0 for ms in stats["latencies"])
        # Stopping the camera ends the server's loop: no frame is computed after it settles.
        record.click()
        page.wait_for_function("() => document.querySelector(\"#mae-live-camera button[aria-label='capture "
                               "photo']\").innerText.includes('Record')", timeout=30_000)
        stopped = _settled(mae_live.frames_computed)
        time.sleep(2.0)  # frames would arrive every 0.05 s if the stream were still open
        assert mae_live.frames_computed() == stopped
        browser.close()
