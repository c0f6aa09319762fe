"""The MAE tab under a burst of control changes: the panels end up matching the last controls.

Every control that changes the view is one ordered listener (``always_last``), so a slower,
older call can never land after a newer one. Checked as a person sees it: the ratio is moved
several stops at once with the keyboard, and once the page is quiet its panel equals the
``/reconstruct`` endpoint's answer for the final ratio.
"""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
from PIL import Image

from tests.ui.test_app import _panel, _wait_hidden
from tools.appserver import CHROMIUM, LAUNCH_ARGS


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_a_burst_of_slider_moves_ends_on_the_last_stop(app_url, photo_path):
    from gradio_client import Client, handle_file
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.goto(app_url)  # opens on the chelsea example at 75%, seed 0, random pattern
        _wait_hidden(page, [147])
        page.locator("#mae-ratio input[type=range]").focus()
        for _ in range(3):  # 0.75 -> 0.90 in three quick steps
            page.keyboard.press("ArrowRight")
        _wait_hidden(page, [176])  # round(0.9 * 196)
        page.wait_for_timeout(2000)  # let any older call land (it must not)
        assert "(176 hidden)" in page.locator("#mae-metrics").inner_text()
        shown = np.asarray(Image.open(io.BytesIO(bytes(_panel(page, "panel-pasted")))).convert("RGB"))
        browser.close()
    client = Client(app_url, verbose=False)
    *_, pasted, _metrics = client.predict(handle_file(str(photo_path)), "mae-tiny", 0.9, 0, "random",
                                         api_name="/reconstruct")
    assert np.array_equal(shown, np.asarray(Image.open(pasted).convert("RGB")))
