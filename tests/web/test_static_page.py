"""The exported static page, served by ``python -m http.server``, as a visitor uses it in Chromium.

It reconstructs a photo it never saw (a held-out photo, uploaded) with the same panels, error map and
PSNR as the library (within 2/255), answers ratio-slider steps, seed, pattern and painted patches with
new panels, runs the fake camera, makes no request outside the folder's origin, and opens offline
after the first visit. No timing is
asserted (bench/web_page.py measures the speed).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tools.appserver import CHROMIUM, free_port
from tools.fake_camera import pan_frames, write_y4m
from tools.static_site import opened_page, serving_folder

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")

ROOT = Path(__file__).resolve().parents[2]
UNSEEN = ROOT / "assets" / "models" / "heldout" / "red_panda.png"  # held out from training; not a page example

READ_CANVAS = """(id) => Array.from(document.getElementById(id).getContext('2d').getImageData(0, 0, 224, 224).data)"""


def _rgb(flat: list[int]) -> np.ndarray:
    return np.asarray(flat, dtype=np.uint8).reshape(224, 224, 4)[..., :3]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The exported folder, served by ``python -m http.server`` on a free loopback port."""
    from vitviz.web.export import export_web

    folder = tmp_path_factory.mktemp("site")
    export_web(folder, seeds=8)  # fewer seeds: the tables are the slow part of an export
    with serving_folder(folder, free_port()) as url:
        yield folder, url


@pytest.fixture(scope="module")
def page(site, tmp_path_factory):
    folder, url = site
    y4m = write_y4m(tmp_path_factory.mktemp("cam") / "pan.y4m", pan_frames(count=20))
    requests: list[str] = []
    errors: list[str] = []
    listeners = {"request": lambda r: requests.append(r.url), "pageerror": lambda e: errors.append(str(e))}
    with opened_page(url, y4m, listeners) as (browser, pg):
        yield pg, url, requests, errors, browser


def _runs(pg) -> int:
    return pg.evaluate("window.maePage.stats.runs")


def _wait_runs(pg, after: int) -> int:
    pg.wait_for_function(f"window.maePage.stats.runs > {after} && !document.querySelector('#error').textContent",
                         timeout=60_000)
    time.sleep(0.3)  # a run asked for while one was computing follows it at once
    pg.wait_for_function("window.maePage.stats.runs > 0 && !window.maePage.busy", timeout=60_000)
    return _runs(pg)


def _library(mask: np.ndarray):
    import vitviz
    from vitviz.mae.reconstruct import reconstruct

    return reconstruct(vitviz.load_model("mae-tiny", device="cpu"), UNSEEN, mask=mask)


def test_unseen_photo_matches_the_library(page, tmp_path):
    pg, _, _, errors, _ = page
    from vitviz.core.images import square_view

    view = square_view(UNSEEN, 224)  # the model's view, uploaded as it is: the page's crop is then the identity
    upload = tmp_path / "unseen.png"
    Image.fromarray(view).save(upload)
    before = _runs(pg)
    pg.set_input_files("#file", str(upload))
    _wait_runs(pg, before)
    last = pg.evaluate("window.maePage.stats.last")
    mask = np.asarray(last["mask"], dtype=bool).reshape(14, 14)
    assert mask.sum() == 147  # 75% of 196, the page's default (random, seed 0)
    ref = _library(mask)
    assert np.array_equal(_rgb(pg.evaluate(READ_CANVAS, "original")), view)
    for canvas, name in (("masked", "masked"), ("reconstruction", "reconstruction"), ("pasted", "pasted")):
        diff = np.abs(_rgb(pg.evaluate(READ_CANVAS, canvas)).astype(int) - getattr(ref, name).astype(int)).max()
        assert diff <= 2, (canvas, diff)
    np.testing.assert_allclose(np.asarray(last["errorMap"]).reshape(14, 14), ref.error_map, atol=2e-4)
    assert abs(last["psnr"] - ref.psnr) < 0.05
    assert abs(float(pg.inner_text("#psnr").split()[1]) - ref.psnr) < 0.01  # shown to two decimals
    assert not errors


def test_slider_steps_seed_pattern_and_paint_give_new_panels_like_the_library(page):
    from vitviz.core.masking import make_mask

    pg, _, _, errors, _ = page
    seen = {bytes(_rgb(pg.evaluate(READ_CANVAS, "pasted")))}
    slider = pg.locator("#ratio")
    for expected in (0.70, 0.65, 0.60):
        before = _runs(pg)
        slider.focus()
        pg.keyboard.press("ArrowLeft")
        _wait_runs(pg, before)
        last = pg.evaluate("window.maePage.stats.last")
        assert last["hidden"] == round(expected * 196)
        assert np.array_equal(np.asarray(last["mask"], bool).reshape(14, 14), make_mask((14, 14), expected, 0).numpy())
        panel = bytes(_rgb(pg.evaluate(READ_CANVAS, "pasted")))
        assert panel not in seen
        seen.add(panel)
    for pattern, seed in (("block", 3), ("grid", 3)):
        before = _runs(pg)
        pg.select_option("#pattern", pattern)
        pg.fill("#seed", str(seed))
        _wait_runs(pg, before)
        last = pg.evaluate("window.maePage.stats.last")
        mask = np.asarray(last["mask"], bool).reshape(14, 14)
        assert np.array_equal(mask, make_mask((14, 14), 0.6, seed, pattern).numpy()), pattern
    # Paint: a click on a hidden patch of the masked panel shows it; a click on a visible one hides it.
    box = pg.locator("#masked").bounding_box()
    cell = box["width"] / 14
    mask = np.asarray(pg.evaluate("window.maePage.stats.last.mask"), bool).reshape(14, 14)
    r, c = map(int, np.argwhere(mask)[0])
    before = _runs(pg)
    pg.mouse.click(box["x"] + (c + 0.5) * cell, box["y"] + (r + 0.5) * cell)
    _wait_runs(pg, before)
    painted = np.asarray(pg.evaluate("window.maePage.stats.last.mask"), bool).reshape(14, 14)
    expected = mask.copy()
    expected[r, c] = False
    assert np.array_equal(painted, expected)
    ref = _library(painted)
    diff = np.abs(_rgb(pg.evaluate(READ_CANVAS, "pasted")).astype(int) - ref.pasted.astype(int)).max()
    assert diff <= 2
    pg.fill("#seed", "500")  # outside the page's seeds: a message, the page stays up
    pg.wait_for_function("document.querySelector('#error').textContent.includes('0 to 7')")
    pg.fill("#seed", "1")
    assert not errors


def test_fake_camera_streams_through_the_model(page):
    pg, _, _, errors, _ = page
    pg.click("#camera")
    pg.wait_for_function("window.maePage.stats.frames >= 5", timeout=120_000)
    assert "frames a second" in pg.inner_text("#fps") or pg.evaluate("window.maePage.stats.frames") >= 5
    pg.click("#camera")
    assert pg.inner_text("#camera") == "Start camera" and not errors


def test_two_lanes_run_frames_side_by_side_with_the_same_predictions(page, site):
    """``?lanes=2``: two instances of ONNX Runtime, each with its own worker. Two graphs asked for at once go one to
    each lane and give the same predictions (lane 0's are checked against the library above), and the camera keeps
    both lanes busy."""
    *_, browser = page
    folder, url = site
    context = browser.new_context()  # a fresh profile: the page's own model load, with the address's options
    try:
        pg = context.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(url + "?lanes=2")
        pg.wait_for_selector("body[data-ready='1']", timeout=180_000)
        assert pg.evaluate("[window.maePage.stats.lanes, window.maePage.stats.threads]") == [2, 1]
        assert "in each of 2 workers" in pg.inner_text("#status")
        same, calls = pg.evaluate("""async () => {
          const m = window.maePage.model;
          await m.ready;  // the second lane starts after the first has answered
          const image = new Float32Array(3 * 224 * 224).map((_, i) => Math.sin(i / 97));
          const visible = () => BigInt64Array.from([0n, 5n, 17n, 40n, 101n, 150n, 195n]);
          const before = [...m.calls];
          const [a, b] = await Promise.all([m.run(image.slice(), visible()), m.run(image.slice(), visible())]);
          return [a.length > 0 && a.every((v, i) => v === b[i]), m.calls.map((c, k) => c - before[k])];
        }""")
        assert calls == [1, 1] and same
        before = pg.evaluate("[...window.maePage.model.calls]")
        pg.click("#camera")
        pg.wait_for_function("window.maePage.stats.frames >= 8", timeout=120_000)
        pg.click("#camera")
        after = pg.evaluate("[...window.maePage.model.calls]")
        assert all(a - b >= 2 for a, b in zip(after, before)), (before, after)  # both lanes ran frames
        assert not errors and not pg.inner_text("#error")
    finally:
        context.close()


def test_no_request_leaves_the_folder(page, site):
    pg, url, requests, _, _ = page
    folder, _ = site
    assert requests and all(r.startswith(url) for r in requests), [r for r in requests if not r.startswith(url)]
    for r in requests:  # and each names a file of the folder
        path = r[len(url):].split("?")[0] or "index.html"
        assert (folder / path).is_file(), r


def test_where_workers_are_forbidden_the_model_runs_on_the_pages_thread(page, site):
    """Served with a Content-Security-Policy that forbids workers, ONNX Runtime's proxy worker cannot start: the
    page loads the model again on its own thread (``proxy`` false, 1 thread) and draws its panels."""
    *_, browser = page
    folder, _ = site
    messages: list[str] = []
    context = browser.new_context()  # a fresh profile: no service worker answers for this origin
    try:
        with serving_folder(folder, free_port(), headers={"Content-Security-Policy": "worker-src 'none'"}) as url:
            pg = context.new_page()
            pg.on("console", lambda m: messages.append(m.text))
            pg.goto(url)
            ready_or_failed = "document.body.dataset.ready === '1' || !!document.getElementById('error').textContent"
            pg.wait_for_function(ready_or_failed, timeout=180_000)
            assert not pg.inner_text("#error"), pg.inner_text("#error")
            assert pg.evaluate("[window.maePage.stats.proxy, window.maePage.stats.threads]") == [False, 1]
            assert any("worker did not start" in m for m in messages), messages  # the worker was tried, and failed
            assert _rgb(pg.evaluate(READ_CANVAS, "reconstruction")).std() > 0
            assert pg.inner_text("#psnr").split()[1][0].isdigit()
    finally:
        context.close()


def test_the_page_opens_and_runs_offline_after_the_first_visit(page):
    """The service worker caches the folder's files: with the network off, a reload reconstructs again."""
    _, url, _, _, browser = page
    context = browser.new_context()  # a fresh profile: nothing cached before this visit
    try:
        pg = context.new_page()
        pg.goto(url)
        pg.wait_for_selector("body[data-ready='1']", timeout=180_000)
        pg.evaluate("navigator.serviceWorker.ready.then(() => true)")
        pg.wait_for_function("!!navigator.serviceWorker.controller", timeout=60_000)
        context.set_offline(True)
        pg.reload()
        pg.wait_for_selector("body[data-ready='1']", timeout=180_000)
        assert pg.evaluate("window.maePage.stats.runs") >= 1 and not pg.inner_text("#error")
    finally:
        context.close()
