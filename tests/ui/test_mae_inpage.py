"""The MAE tab on mae-tiny computes in the visitor's browser: once the model is in the page, a new seed,
pattern or ratio makes no server request, and the panels and numbers equal the server's for the same mask."""

from __future__ import annotations

import base64
import io
import os
import time

import numpy as np
import pytest
from PIL import Image

from tools.appserver import CHROMIUM, LAUNCH_ARGS
from tools.fake_camera import camera_args, pan_frames, write_y4m

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")

#: Sets a Gradio control like a person does (input, then change).
SET = """([selector, v]) => {
  const input = document.querySelector(selector);
  input.value = String(v);
  input.dispatchEvent(new Event('input', {bubbles: true}));
  input.dispatchEvent(new Event('change', {bubbles: true}));
}"""

#: The reconstruction panel as shown, read by the page itself (a blob: URL never leaves it).
SHOWN = """async () => {
  const img = document.querySelector('#panel-reconstruction img');
  const b = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
  let s = ''; for (let i = 0; i < b.length; i += 8192) s += String.fromCharCode.apply(null, b.subarray(i, i + 8192));
  return btoa(s);
}"""


def _app_request(req) -> bool:  # noqa: ANN001
    """A request that reaches the app (not a blob: URL, not Chromium's own re-check of the page icon)."""
    path = req.url.split("?")[0]
    own = req.resource_type == "other" and (path.endswith("/favicon.ico") or path.rstrip("/").count("/") == 2)
    return req.url.startswith("http") and not own


def _want(page) -> None:  # noqa: ANN001
    """The visitor shows intent (the pointer over the MAE tab's slider): the page starts loading mae-tiny."""
    page.wait_for_selector("#mae-ratio input[type=range]", timeout=300_000)
    page.hover("#mae-ratio input[type=range]")


def _drag(page, y: float, x_from: float, x_to: float, steps: int) -> None:  # noqa: ANN001
    """A drag across the Original panel at height ``y`` from ``x_from`` to ``x_to`` (fractions of the picture)."""
    page.locator("#panel-original img").scroll_into_view_if_needed()  # ticking the box scrolled the page
    b = page.locator("#panel-original img").bounding_box()
    side = min(b["width"], b["height"])  # the square picture, drawn centred (object-fit: contain)
    x0, y0 = b["x"] + (b["width"] - side) / 2, b["y"] + (b["height"] - side) / 2
    page.mouse.move(x0 + x_from * side, y0 + y * side)
    page.mouse.down()
    for k in range(1, steps + 1):
        page.mouse.move(x0 + (x_from + (x_to - x_from) * k / steps) * side, y0 + y * side, steps=2)
    page.mouse.up()


def _in_page(p, app_url: str, args: list[str] | None = None) -> tuple:  # noqa: ANN001
    """A browser on the app once mae-tiny is in the page and has read the photo (the first view and sweep are the
    server's: a new photo); the browser, the page, and the list of the app's requests from then on. ``args``:
    more Chromium switches (a fake camera)."""
    browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS + (args or []))
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(app_url)
    _want(page)
    page.wait_for_function("(document.querySelector('#mae-path') || {dataset: {}}).dataset.path === 'browser'",
                           timeout=300_000)
    page.wait_for_function("(document.body.dataset.vitvizScrub || '').startsWith('ready:')"
                           " && !!document.body.dataset.vitvizInpageView", timeout=300_000)
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if _app_request(r) else None)
    return browser, page, sent


def _settle(page, hidden: int, runs: int) -> int:
    """Wait until the page has computed a new view hiding ``hidden`` patches; the page's run count."""
    page.wait_for_function(
        """([hidden, runs]) => Number(document.body.dataset.vitvizInpageRuns || 0) > runs
          && (document.querySelector('#mae-metrics') || {innerText: ''}).innerText.includes('(' + hidden + ' hidden)')
          && document.querySelector('#mae-metrics').innerText.includes('in your browser')""",
        arg=[hidden, runs], timeout=120_000)
    return int(page.evaluate("document.body.dataset.vitvizInpageRuns"))


def test_seed_pattern_and_ratio_on_mae_tiny_stay_in_the_page_and_equal_the_server(app_url):
    from playwright.sync_api import sync_playwright

    from vitviz import load_model, reconstruct
    from vitviz.assets import example_images

    photo = example_images()[1]  # the photo the page opens with
    steps = [("#mae-seed input", 5, 0.75, 5, "random"), ("#mae-ratio input[type=range]", 0.6, 0.6, 5, "random"),
             ("#mae-ratio input[type=range]", 0.3, 0.3, 5, "random")]
    shown, numbers = [], []
    with sync_playwright() as p:
        browser, page, sent = _in_page(p, app_url)
        assert "in your browser" in page.inner_text("#mae-path")
        runs = 0
        for selector, value, ratio, seed, pattern in steps:
            page.evaluate(SET, [selector, value])
            runs = _settle(page, round(ratio * 196), runs)
            shown.append(np.asarray(Image.open(io.BytesIO(base64.b64decode(page.evaluate(SHOWN)))).convert("RGB")))
            numbers.append(page.evaluate("window.vitviz.inpage.last()"))
        page.check("#mae-pattern input[value=block]")
        runs = _settle(page, round(0.3 * 196), runs)
        assert sent == [], f"{len(sent)} requests reached the server: {sent[:3]}"
        browser.close()
    model = load_model("mae-tiny")
    for (_, _, ratio, seed, pattern), got, last in zip(steps, shown, numbers):
        r = reconstruct(model, photo, mask_ratio=ratio, seed=seed, pattern=pattern)
        diff = np.abs(got.astype(int) - r.reconstruction.astype(int))
        assert diff.max() <= 2, f"ratio {ratio}: the page's reconstruction is {diff.max()} levels from the server's"
        assert np.array_equal(np.asarray(last["mask"], bool), r.mask.reshape(-1))  # the server's mask
        assert last["maskedMse"] == pytest.approx(r.masked_mse, rel=0.02)  # the panels' numbers: the same
        assert np.allclose(last["errorMap"], r.error_map.reshape(-1), atol=2e-3)


#: The reconstruction panel and the Original panel as shown, read by the page itself (base64 PNGs).
SHOWN_TWO = """async () => {
  const read = async (id) => {
    const img = document.querySelector('#' + id + ' img');
    const b = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
    let s = ''; for (let i = 0; i < b.length; i += 8192) s += String.fromCharCode.apply(null, b.subarray(i, i + 8192));
    return btoa(s);
  };
  return [await read('panel-reconstruction'), await read('panel-original')];
}"""


def _png(text: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(text))).convert("RGB"))


def test_painting_on_mae_tiny_stays_in_the_page_and_equals_the_server(app_url):
    """Ticking "Paint the mask", a drag across the Original panel and unticking make no server request; the
    painted mask is the server's rule applied to the stroke, and the reconstruction and the shaded Original
    equal the server's for that mask within 2/255; the slider says what is painted; the URL carries the mask."""
    from playwright.sync_api import sync_playwright

    from vitviz import load_model, reconstruct
    from vitviz.assets import example_images
    from vitviz.views.urlstate import encode_mask
    from vitviz.views import mae as mae_view
    from vitviz.views import mae_paint

    photo = example_images()[1]
    with sync_playwright() as p:
        browser, page, sent = _in_page(p, app_url)
        page.check("#mae-paint input")
        runs = _settle(page, 147, 0)
        page.wait_for_function("document.querySelector('#mae-ratio input[type=range]').disabled", timeout=30_000)
        _drag(page, 0.52, 0.05, 0.95, 20)
        page.wait_for_function(f"Number(document.body.dataset.vitvizInpageRuns) > {runs}"
                               " && !document.querySelector('#mae-metrics').innerText.includes('(147 hidden)')",
                               timeout=120_000)
        page.wait_for_function("new URL(location.href).searchParams.get('mask')", timeout=30_000)
        last = page.evaluate("window.vitviz.inpage.last()")
        recon, original = (_png(x) for x in page.evaluate(SHOWN_TWO))
        label = page.locator("#mae-ratio").inner_text()
        code = page.evaluate("new URL(location.href).searchParams.get('mask')")
        assert "in your browser" in page.inner_text("#mae-metrics")
        page.uncheck("#mae-paint input")
        page.wait_for_function("!document.querySelector('#mae-ratio input[type=range]').disabled"
                               " && !new URL(location.href).searchParams.get('mask')"
                               " && document.querySelector('#mae-metrics').innerText.includes('(147 hidden)')",
                               timeout=60_000)
        assert sent == [], f"{len(sent)} requests reached the server: {sent[:3]}"
        browser.close()
    model = load_model("mae-tiny")
    start = mae_paint.stop_mask("mae-tiny", 0.75, 0, "random")
    expected = mae_paint.paint_stroke(start, last["points"])  # the server's rule on the same stroke
    painted = np.asarray(last["mask"], bool).reshape(14, 14)
    assert np.array_equal(painted, expected) and (painted != start).any()
    assert code == encode_mask(painted)
    assert f"{int(painted.sum())} of 196" in label
    r = reconstruct(model, photo, mask=painted)
    assert np.abs(recon.astype(int) - r.reconstruction.astype(int)).max() <= 2
    server_original = mae_view.panels(r, painting=True).original
    assert np.abs(original.astype(int) - server_original.astype(int)).max() <= 2
    assert last["maskedMse"] == pytest.approx(r.masked_mse, rel=0.02)


def test_painting_without_the_model_in_the_page_goes_to_the_server_with_the_same_rule(app_url):
    """A page that could not load mae-tiny (its files refused) paints through the server: the same patch rule,
    the slider off and labelled by the page, the URL's mask, and the slider back once unticked."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    from vitviz.views.urlstate import decode_mask
    from vitviz.views import mae_paint

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.route("**/in-browser/**", lambda route: route.abort())
        page.goto(app_url)
        _want(page)
        page.wait_for_function("document.body.dataset.vitvizInpage === 'off'"
                               " && (document.querySelector('#mae-metrics') || {innerText: ''}).innerText"
                               ".includes('(147 hidden)')", timeout=300_000)
        page.evaluate("""() => { const f = window.vitviz.inpage.paint; window.__strokes = [];
          window.vitviz.inpage.paint = (...a) => { window.__strokes.push(a[2]); return f(...a); }; }""")
        page.check("#mae-paint input")
        page.wait_for_function("document.querySelector('#mae-ratio input[type=range]').disabled", timeout=60_000)
        for _ in range(3):  # on a loaded machine a stroke can come before the paint layer listens: draw it again
            _drag(page, 0.3, 0.05, 0.65, 10)
            try:
                page.wait_for_function("window.__strokes.some((s) => !!s)", timeout=15_000)
                break
            except PlaywrightTimeout:
                continue
        page.wait_for_function("new URL(location.href).searchParams.get('mask')"
                               " && !document.querySelector('#mae-metrics').innerText.includes('(147 hidden)')",
                               timeout=120_000)
        strokes = page.evaluate("window.__strokes")
        code = page.evaluate("new URL(location.href).searchParams.get('mask')")
        metrics, label = page.inner_text("#mae-metrics"), page.locator("#mae-ratio").inner_text()
        assert "Computed on the server" in page.inner_text("#mae-path")
        page.uncheck("#mae-paint input")
        page.wait_for_function("!document.querySelector('#mae-ratio input[type=range]').disabled"
                               " && !new URL(location.href).searchParams.get('mask')", timeout=60_000)
        browser.close()
    import json

    points = json.loads([s for s in strokes if s][-1])["points"]
    painted = decode_mask(code)
    assert np.array_equal(painted, mae_paint.paint_stroke(mae_paint.stop_mask("mae-tiny", 0.75, 0, "random"), points))
    assert f"({int(painted.sum())} hidden)" in metrics and "in your browser" not in metrics
    assert f"{int(painted.sum())} of 196" in label


#: The sweep chart as drawn: its error curve (x, y), its title, its slider marker, and the presenter readout.
CHART = """() => { const p = document.querySelector('#mae-sweep-chart .js-plotly-plot');
  const s = (p.layout.shapes || []).find((s) => s.name === 'current-ratio');
  const a = (p.layout.annotations || []).find((a) => a.name === 'current-ratio');
  return {x: Array.from(p.data[0].x), y: Array.from(p.data[0].y), title: p.layout.title.text, marker: s.x0,
          note: a.text, readout: document.querySelector('#mae-ratio-readout .vitviz-readout-value').textContent}; }"""


def test_a_seed_chosen_in_the_page_redraws_the_sweep_chart_there_and_the_path_line_names_a_comparison(app_url):
    """After a seed changed in the page, the chart's error curve is the new seed's (computed in the page, equal to
    the library's within 2%), with no server request; the marker and the readout follow the slider; while a
    comparison is on, the path line says the server computes."""
    from playwright.sync_api import sync_playwright

    from vitviz import load_model, reconstruct
    from vitviz.assets import example_images

    photo = example_images()[1]
    with sync_playwright() as p:
        browser, page, sent = _in_page(p, app_url)
        page.evaluate(SET, ["#mae-seed input", 3])
        page.wait_for_function("document.body.dataset.vitvizInpageChart === '3:random'", timeout=180_000)
        chart = page.evaluate(CHART)
        page.evaluate(SET, ["#mae-ratio input[type=range]", 0.4])
        _settle(page, round(0.4 * 196), 0)
        page.wait_for_function("(() => { const p = document.querySelector('#mae-sweep-chart .js-plotly-plot');"
                               " return p.layout.shapes.some((s) => s.name === 'current-ratio' && s.x0 === 40); })()",
                               timeout=30_000)
        moved = page.evaluate(CHART)
        assert sent == [], f"{len(sent)} requests reached the server: {sent[:3]}"
        page.evaluate("window.vitviz.inpage.show(undefined, 'mae-base', '(none)')")
        page.wait_for_function("document.querySelector('#mae-path').dataset.path === 'server'", timeout=30_000)
        compared = page.inner_text("#mae-path")
        page.evaluate("window.vitviz.inpage.show(undefined, '(none)', '(none)')")
        page.wait_for_function("document.querySelector('#mae-path').dataset.path === 'browser'", timeout=30_000)
        browser.close()
    assert "seed 3" in chart["title"] and "in your browser" in chart["title"]
    assert (moved["marker"], moved["note"], moved["readout"]) == (40, "slider: 40%", "40%")
    assert "on the server" in compared and "mae-base" in compared
    model = load_model("mae-tiny")
    want = [reconstruct(model, photo, mask_ratio=round(x) / 100, seed=3).masked_mse for x in chart["x"]]
    assert chart["y"] == pytest.approx(want, rel=0.02)


#: The camera computed in the page (#mae-inpage-live): its rate line, its button, and whether its panels are drawn.
CAMERA = """() => { const root = document.querySelector('#mae-inpage-live');
  const drawn = (k) => root.querySelector('canvas[data-panel=' + k + ']').getContext('2d')
    .getImageData(0, 0, 224, 224).data.some((v, i) => i % 4 !== 3 && v !== 0);
  return {rate: root.querySelector('[data-rate]').textContent, button: root.querySelector('button').textContent,
          drawn: ['original', 'masked', 'pasted', 'error'].every(drawn)}; }"""


def test_the_camera_in_the_page_streams_with_no_server_request(app_url, tmp_path):
    """The tab's camera on mae-tiny (Chromium's fake camera: a pan across a photo) reconstructs frame after frame
    in the page and draws its four panels; while it runs, and once stopped, the page makes no request to the server.
    No timing is asserted (bench/web_page.py --app measures the rate)."""
    from playwright.sync_api import sync_playwright

    y4m = write_y4m(tmp_path / "pan.y4m", pan_frames(count=20))
    with sync_playwright() as p:
        browser, page, sent = _in_page(p, app_url, camera_args(y4m))
        isolated, threads, cores = page.evaluate(THREADS)
        path = page.inner_text("#mae-path")
        page.click("#mae-live-box button")  # open the live accordion
        page.wait_for_selector("#mae-inpage-live button", state="visible", timeout=60_000)
        time.sleep(1.0)  # anything the accordion's opening asked for is over
        sent.clear()
        page.click("#mae-inpage-live button")
        page.wait_for_function("Number(document.body.dataset.vitvizInpageFrames || 0) >= 8"
                               " && document.querySelector('#mae-inpage-live [data-rate]').textContent"
                               ".includes('frames a second')", timeout=240_000)
        running = page.evaluate(CAMERA)
        page.click("#mae-inpage-live button")  # stop
        page.wait_for_function("document.querySelector('#mae-inpage-live button').textContent.startsWith('Start')",
                               timeout=60_000)
        time.sleep(1.5)  # a frame in flight when stopped is finished
        frames = page.evaluate("document.body.dataset.vitvizInpageFrames")
        time.sleep(1.0)
        assert page.evaluate("document.body.dataset.vitvizInpageFrames") == frames  # stopped: no more frames
        assert sent == [], f"{len(sent)} requests reached the server while the camera ran: {sent[:3]}"
        browser.close()
    assert running["button"] == "Stop the camera" and running["drawn"], running
    assert "computed in your browser" in running["rate"], running
    assert int(frames) >= 8
    # the page is cross-origin isolated (vitviz.ui.serve.http.PAGE_ISOLATION): the model runs the default threads
    assert isolated is True
    assert threads == default_threads(cores), (threads, cores)
    assert f"WebAssembly, {threads} thread" in path, path


def default_threads(cores: int) -> int:
    """mae_core.js's defaultThreads(cores, defaultLanes(cores)): the WASM threads of each lane of an isolated page."""
    lanes = 2 if cores >= 2 else 1
    return max(1, (max(1, cores) if cores <= 2 else min(4, cores - 1)) // lanes)


#: Whether the page is cross-origin isolated, the in-page model's WASM threads, and the cores the browser reports.
THREADS = """async () => [self.crossOriginIsolated, (await window.vitviz.inpage.load()).state.model.threads,
  navigator.hardwareConcurrency]"""


def test_threads_asked_in_the_address_run_and_a_frame_that_is_not_isolated_runs_one(app_url):
    """``?threads=2`` runs the tab's model on two WebAssembly threads (the page is isolated) and computes there;
    the app inside another site's frame that is not isolated (a Space on huggingface.co) computes on one thread."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page, sent = _in_page(p, app_url + "?threads=2")
        isolated, threads, _ = page.evaluate(THREADS)
        path = page.inner_text("#mae-path")
        page.evaluate(SET, ["#mae-seed input", 4])
        _settle(page, 147, 0)
        assert sent == [], sent[:3]
        framed = browser.new_page(viewport={"width": 1280, "height": 720})
        framed.set_content(f"<iframe src='{app_url}' style='width:1260px;height:3000px;border:0'></iframe>")
        frame = None
        for _ in range(600):
            frame = next((f for f in framed.frames if f.url.startswith(app_url)), None)
            if frame is not None:
                break
            framed.wait_for_timeout(100)
        assert frame is not None
        frame.wait_for_selector("#mae-ratio input[type=range]", timeout=300_000)
        frame.hover("#mae-ratio input[type=range]")
        frame.wait_for_function("(document.querySelector('#mae-path') || {dataset: {}}).dataset.path === 'browser'",
                                timeout=300_000)
        in_frame = frame.evaluate(THREADS)
        framed_path = frame.inner_text("#mae-path")
        browser.close()
    assert isolated is True and threads == 2 and "WebAssembly, 2 threads" in path, (isolated, threads, path)
    assert in_frame[:2] == [False, 1] and "WebAssembly, 1 thread" in framed_path, (in_frame, framed_path)
