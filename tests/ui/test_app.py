"""The running app, used as a person and as an API client would."""

import shutil

import numpy as np
import pytest
from PIL import Image

from tools.appserver import CHROMIUM, LAUNCH_ARGS
from vitviz.assets import default_example


def _read(path: str) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"))


def test_reconstruct_endpoint(app_url, photo_path):
    from gradio_client import Client, handle_file

    client = Client(app_url, verbose=False)
    a = client.predict(handle_file(str(photo_path)), "mae-tiny", 0.75, 0, "random", api_name="/reconstruct")
    original, masked, recon, pasted, metrics = a
    for path in (original, masked, recon, pasted):
        assert _read(path).shape == (224, 224, 3)
    assert "49 of 196" in metrics
    b = client.predict(handle_file(str(photo_path)), "mae-tiny", 0.25, 0, "random", api_name="/reconstruct")
    assert not np.array_equal(_read(recon), _read(b[2]))
    # a bad request is an error message, and the server keeps serving
    with pytest.raises(Exception, match="mask ratio|greater than maximum"):
        client.predict(handle_file(str(photo_path)), "mae-tiny", 2.0, 0, "random", api_name="/reconstruct")
    with pytest.raises(Exception, match="unknown mask pattern|not in the list of choices"):
        client.predict(handle_file(str(photo_path)), "mae-tiny", 0.5, 0, "zigzag", api_name="/reconstruct")
    again = client.predict(handle_file(str(photo_path)), "mae-tiny", 0.75, 0, "random", api_name="/reconstruct")
    assert np.array_equal(_read(again[2]), _read(recon))


def _panel(page, elem_id: str) -> bytes:
    """Bytes of the image shown in a panel (fetched by the page itself)."""
    src = page.locator(f"#{elem_id} img").first.get_attribute("src")
    assert src
    return page.evaluate(
        "async (u) => { const r = await fetch(u); const b = new Uint8Array(await r.arrayBuffer());"
        " return Array.from(b); }", src)


#: The MAE tab's page-load chain (view, sweep, slider stops shipped to the page) has run to its end.
FIRST_VIEWS_DONE = "() => (document.body.dataset.vitvizScrub || '').startsWith('ready:')"


def metrics_marker(image, ratio: float, seed: int = 0, pattern: str = "random", model: str = "mae-tiny") -> str:
    """The start of the MAE tab's metrics line for ``image`` (model, hidden-patch MSE, PSNR), computed here by
    the view functions the page's handler uses: a text that only that image's view puts on the page."""
    from vitviz.views import mae as mae_view

    loaded, r = mae_view.result(str(image), model, ratio, seed, pattern, None)
    return mae_view.metrics_text(mae_view.metrics(loaded, r)).split(" · training loss")[0]


def wait_metrics(page, marker: str, timeout: int = 180_000) -> None:
    """Wait until the MAE metrics line starts as ``marker`` (from :func:`metrics_marker`) says."""
    page.wait_for_function("(s) => (document.querySelector('#mae-metrics')?.innerText || '').includes(s)",
                           arg=marker, timeout=timeout)


@pytest.mark.skipif(not shutil.which("chromium") and not __import__("os").path.exists(CHROMIUM),
                    reason="Debian's chromium is not installed")
def test_browser_upload_and_slider(app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    # A fresh photo that is not one of the examples: a crop of the rocket example.
    upload = tmp_path / "upload.png"
    Image.open(__import__("pathlib").Path(__file__).parents[2] / "assets/examples/rocket.jpg").crop(
        (100, 0, 500, 400)).save(upload)
    # The page opens on an example photo whose first view already shows a reconstruction and "of 196": the
    # upload's own numbers, computed here by the same views, say when its view is on screen.
    at_75 = metrics_marker(upload, 0.75)
    assert metrics_marker(default_example(), 0.75) != at_75
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.goto(app_url)
        # The upload is made once the page's first views have all arrived (the slider's stops are in the page);
        # an upload made while the page opens is the test below.
        page.wait_for_function(FIRST_VIEWS_DONE, timeout=300_000)
        page.locator("#mae-input input[type=file]").set_input_files(str(upload))
        wait_metrics(page, at_75)
        page.wait_for_selector("#panel-reconstruction img", timeout=120_000)
        first = _panel(page, "panel-reconstruction")
        metrics_before = page.locator("#mae-metrics").inner_text()
        assert "147 hidden" in metrics_before  # 75% of 196
        # Move the slider with the keyboard: 3 steps of 0.05 down -> 0.60.
        slider = page.locator("#mae-ratio input[type=range]")
        slider.focus()
        for _ in range(3):
            page.keyboard.press("ArrowLeft")
        # mae-tiny's slider is computed in the visitor's browser (its digits within the parity tolerance of the
        # server's, tests/ui/test_mae_inpage.py), so the count of hidden patches says the move has landed
        assert "118 hidden" in _wait_hidden(page, [118])
        page.wait_for_timeout(500)
        second = _panel(page, "panel-reconstruction")
        assert first != second
        page.screenshot(path=str(tmp_path / "after.png"), full_page=True)
        browser.close()


def _wait_hidden(page, counts: list[int], timeout: int = 120_000) -> str:
    """Wait until the metrics line reports one of ``counts`` hidden patches; return its text."""
    try:
        _wait_hidden_js(page, counts, timeout)
    except Exception:
        page.screenshot(path="/tmp/vitviz-test-failure.png", full_page=True)
        raise
    return page.locator("#mae-metrics").inner_text()


def _wait_hidden_js(page, counts: list[int], timeout: int) -> None:
    page.wait_for_function("(counts) => { const e = document.querySelector('#mae-metrics');"
                           " return e && counts.some(c => e.innerText.includes('(' + c + ' hidden)')); }",
                           arg=counts, timeout=timeout)


def _hidden_count(text: str) -> int:
    import re

    return int(re.search(r"\((\d+) hidden\)", text).group(1))


@pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_upload_while_the_page_opens_is_kept(app_url, tmp_path):
    """A photo dropped as soon as the box is there, before the page has opened its first tab, stays.

    The tab's select handler (``vitviz.ui.shared_image.select_js``) waits for the page's tab; it used to
    return the box value it had read before that wait, which put the example back over the upload.
    """
    from playwright.sync_api import sync_playwright

    upload = tmp_path / "early.png"
    Image.open(__import__("pathlib").Path(__file__).parents[2] / "assets/examples/coffee.jpg").crop(
        (50, 20, 420, 390)).save(upload)
    marker = metrics_marker(upload, 0.75)
    assert metrics_marker(default_example(), 0.75) != marker
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(app_url)
            page.locator("#mae-input input[type=file]").set_input_files(str(upload))
            wait_metrics(page, marker)
            # once everything the page opened with has arrived, the upload's view is still the one shown
            page.wait_for_function(FIRST_VIEWS_DONE, timeout=300_000)
            assert "early" in (page.locator("#mae-input img").first.get_attribute("src") or "")
            assert marker in page.locator("#mae-metrics").inner_text()
        finally:
            browser.close()


@pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_browser_slider_stops_paint_and_sweep(app_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        page.goto(app_url)
        # The page opens on an example photo: the first stop appears without an upload.
        page.wait_for_function("document.querySelector('#mae-metrics') && "
                               "document.querySelector('#mae-metrics').innerText.includes('147 hidden')",
                               timeout=120_000)
        # The ratio sweep fills in: one MSE point per stop with hidden patches (19 of the 20 stops).
        page.wait_for_selector("#mae-sweep-chart .js-plotly-plot", timeout=300_000)
        n_points = page.evaluate("document.querySelector('#mae-sweep-chart .js-plotly-plot').data[0].x.length")
        assert n_points == 19
        assert page.locator("#mae-thumbs img").count() >= 4
        # Drag across several stops: each one shows a new reconstruction.
        slider = page.locator("#mae-ratio input[type=range]")
        seen = {_panel(page, "panel-reconstruction").__repr__()}
        text = page.locator("#mae-metrics").inner_text()
        for value, expected in (("0.8", 157), ("0.85", 167), ("0.5", 98), ("0.75", 147)):
            slider.fill(value)
            text = _wait_hidden(page, [expected])
            seen.add(_panel(page, "panel-reconstruction").__repr__())
        assert len(seen) >= 3
        # Paint: clicking two patches of the Original panel toggles them.
        before_img = _panel(page, "panel-reconstruction")
        box = page.locator("#panel-original img").first.bounding_box()
        side = min(box["width"], box["height"])  # the square image is drawn centred (object-fit: contain)
        x0, y0 = box["x"] + (box["width"] - side) / 2, box["y"] + (box["height"] - side) / 2
        for fx, fy in ((0.1, 0.1), (0.55, 0.45)):
            old = _hidden_count(text)
            page.mouse.click(x0 + fx * side, y0 + fy * side)
            text = _wait_hidden(page, [old - 1, old + 1])
            page.wait_for_timeout(300)
            after_img = _panel(page, "panel-reconstruction")
            assert after_img != before_img
            before_img = after_img
        assert page.locator("#mae-paint input[type=checkbox]").is_checked()
        browser.close()


def test_every_named_endpoint_keeps_its_name():
    """The HTTP API the README documents: each name exactly (a private event must not claim it first,
    which makes Gradio rename the endpoint ``<name>_<n>``)."""
    import re

    from vitviz.ui import serve
    from vitviz.ui.app import build_demo

    names = set(serve.install(build_demo()).get_api_info()["named_endpoints"])
    assert {"/reconstruct", "/sweep", "/patch_grid", "/pos_similarity", "/attention_query", "/rollout",
            "/attention_distance", "/swin_windows", "/swin_attention", "/attention_flops", "/model_flops",
            "/patch_size_flops", "/mae_flops", "/measure_attention", "/tokenize", "/beit_predict",
            "/head_atlas", "/qk_space", "/explain", "/decoder_provenance", "/ablate", "/logit_lens"} <= names
    assert not [n for n in names if re.search(r"_\d+$", n)]


def test_no_chained_event_covers_what_its_chain_already_drew():
    """A later event of a chain that redraws an output an earlier event of the chain drew (a first pass, then the
    rest) must not show Gradio's full progress mark: it covers the output with a blank panel until the event ends,
    so the earlier drawing is never seen (session 16: Explain's curves on the page load's chain)."""
    from vitviz.ui.app import build_demo

    fns = build_demo().fns
    covered = []
    for d in fns.values():
        if d.show_progress != "full" or d.trigger_after is None:
            continue
        drawn, j = set(), d.trigger_after
        while j is not None:  # every earlier event of the chain
            drawn |= {o._id for o in fns[j].outputs}
            j = fns[j].trigger_after
        covered += [(d.name, o.elem_id) for o in d.outputs if o._id in drawn]
    assert any(d.trigger_after is not None for d in fns.values())  # the app has chains
    assert covered == []
