"""The MAE tab's decoder provenance: a click on a hidden patch of the reconstruction in Chromium, and the
``decoder_provenance`` endpoint through gradio_client."""

from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image

from tests.ui.test_app import _wait_hidden
from tools.appserver import CHROMIUM, LAUNCH_ARGS
from vitviz.core.masking import make_mask

GRID = (14, 14)  # mae-tiny at 224 px


def _mask() -> np.ndarray:
    """The mask the page opens on: 75%, seed 0, random (the same mask path as the reconstruction)."""
    return make_mask(GRID, 0.75, 0, "random").numpy()


def _cell_point(box: dict, row: int, col: int) -> tuple[float, float]:
    """Page coordinates of the centre of patch (row, col) in a square image drawn centred in ``box``."""
    side = min(box["width"], box["height"])  # object-fit: contain
    x0, y0 = box["x"] + (box["width"] - side) / 2, box["y"] + (box["height"] - side) / 2
    return x0 + (col + 0.5) / GRID[1] * side, y0 + (row + 0.5) / GRID[0] * side


def _click_until(page, elem_id: str, row: int, col: int, expected: str) -> None:
    """Click patch (row, col) of a panel until the provenance text says ``expected`` (a click that lands while
    the panel re-renders is retried)."""
    for attempt in range(3):
        locator = page.locator(f"#{elem_id} img").first
        locator.scroll_into_view_if_needed()
        page.mouse.click(*_cell_point(locator.bounding_box(), row, col))
        try:
            page.wait_for_function("(t) => document.querySelector('#mae-provenance-text').innerText.includes(t)",
                                   arg=expected, timeout=60_000)
            return
        except Exception:
            if attempt == 2:
                raise


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_click_a_hidden_patch_shows_where_the_decoder_copied_it_from(app_url, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    mask = _mask()
    r, c = (int(v) for v in np.argwhere(mask)[20])
    vr, vc = (int(v) for v in np.argwhere(~mask)[5])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        try:
            page.goto(app_url)  # the default photo (chelsea) at 75%, seed 0, random
            _wait_hidden(page, [147])
            assert "Click a hidden patch" in page.locator("#mae-provenance-text").inner_text()
            frame = page.locator("#mae-provenance")
            assert frame.count() == 1 and frame.is_hidden()  # no empty frame before a click
            _click_until(page, "panel-pasted", r, c, f"Mask token at row {r}, col {c}")
            page.wait_for_function("() => { const i = document.querySelector('#mae-provenance img');"
                                   " return i && i.complete && i.naturalWidth > 0; }", timeout=60_000)
            expect(frame).to_be_visible(timeout=30_000)
            text = page.locator("#mae-provenance-text").inner_text()
            assert text.count("decoder layer") >= 4 and "rollout" in text and "other mask tokens" in text
            # a visible patch (on the raw reconstruction) gets a sentence, not a map
            _click_until(page, "panel-reconstruction", vr, vc, "This patch was visible; click a hidden one")
            assert page.locator("#mae-provenance img").count() == 0
            expect(frame).to_be_hidden(timeout=30_000)  # a sentence, and no empty frame
            # a hidden patch again, then a new picture (the slider moves) clears the map in the page
            _click_until(page, "panel-pasted", r, c, f"Mask token at row {r}, col {c}")
            page.locator("#mae-ratio input[type=range]").focus()
            page.keyboard.press("ArrowRight")
            _wait_hidden(page, [157])  # round(0.8 * 196)
            page.wait_for_function("() => document.querySelector('#mae-provenance-text').innerText"
                                   ".includes('Click a hidden patch')", timeout=60_000)
            expect(frame).to_be_hidden(timeout=30_000)  # the new picture cleared the map: its frame goes too
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()


def test_decoder_provenance_endpoint(app_url, photo_path):
    from gradio_client import Client, handle_file

    mask = _mask()
    r, c = (int(v) for v in np.argwhere(mask)[0])
    client = Client(app_url, verbose=False)
    panel, text, numbers = client.predict(handle_file(str(photo_path)), "mae-tiny", 0.75, 0, "random", r, c, False,
                                          api_name="/decoder_provenance")
    img = np.asarray(Image.open(panel).convert("RGB"))
    assert img.ndim == 3 and img.shape[1] > img.shape[0]  # one row of tiles: four layers and the rollout
    assert f"Mask token at row {r}, col {c}" in text
    assert numbers["patch"] == [r, c] and numbers["hidden_patches"] == int(mask.sum())
    for shares in numbers["layers"] + [numbers["rollout"]]:
        assert sum(shares.values()) == pytest.approx(1.0, abs=1e-5)
    vr, vc = (int(v) for v in np.argwhere(~mask)[0])
    panel, text, numbers = client.predict(handle_file(str(photo_path)), "mae-tiny", 0.75, 0, "random", vr, vc,
                                          False, api_name="/decoder_provenance")
    assert panel is None and numbers is None and "This patch was visible" in text


def test_handlers_without_a_browser(photo_path):
    import gradio as gr

    from vitviz.ui import mae_provenance as mp

    mask = _mask()
    r, c = (int(v) for v in np.argwhere(mask)[0])
    args = (str(photo_path), "mae-tiny", 0.75, 0, "random", False, None)
    # a click sent by the page as fractions of the picture lands on the patch under it
    pick = '{"panel": "panel-pasted", "x": %f, "y": %f, "t": 1}' % ((c + 0.5) / GRID[1], (r + 0.5) / GRID[0])
    picked = mp.pick_provenance(pick, *args, False)
    panel, numbers = picked.provenance, picked.provenance_json
    assert (picked.row, picked.col) == (r, c) and panel is not None and numbers["patch"] == [r, c]
    assert all(isinstance(v, type(gr.skip())) for v in vars(mp.pick_provenance("not json", *args, False)).values())
    # the checkbox redraws the patch on screen with the other mask tokens coloured, and does nothing without one
    again = mp.redraw(*args, r, c, True)
    assert again.provenance.shape == panel.shape and not np.array_equal(again.provenance, panel)
    assert again.provenance_json == numbers
    assert all(isinstance(v, type(gr.skip())) for v in vars(mp.redraw(*args, None, None, True)).values())


def test_endpoint_without_row_or_col_says_what_is_missing(photo_path):
    """Issue 32: ``decoder_provenance`` called without row / col names them, not "Something went wrong"."""
    import gradio as gr

    from vitviz.ui import mae_provenance as mp

    for row, col, missing in ((None, 3, "row"), (2, None, "col"), ("", 3, "row")):
        with pytest.raises(gr.Error) as err:
            mp.run_provenance(str(photo_path), "mae-tiny", 0.75, 0, "random", row, col, False)
        assert err.value.message.startswith(f"{missing} (of the hidden patch, from 0) is missing")
    with pytest.raises(gr.Error, match="whole number between 0 and 1024"):
        mp.run_provenance(str(photo_path), "mae-tiny", 0.75, 0, "random", 2.5, 3, False)
