"""Client-side scrubbing: after the sweep the page moves the slider by itself, with the server's panels."""

from __future__ import annotations

import base64
import io
import json
import os

import numpy as np
import pytest
from PIL import Image

from tools.appserver import CHROMIUM, LAUNCH_ARGS
from vitviz.ui import scrub
from vitviz.views import mae_scrub

STOPS = [round(0.05 * i, 2) for i in range(20)]
PANEL_IDS = ("panel-masked", "panel-reconstruction", "panel-pasted", "panel-error")
needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")

#: Moves the slider like a person does (input, then change) to each value in turn, without waiting.
MOVE = """(values) => {
  const input = document.querySelector('#mae-ratio input[type=range]');
  for (const v of values) {
    input.value = String(v);
    input.dispatchEvent(new Event('input', {bubbles: true}));
    input.dispatchEvent(new Event('change', {bubbles: true}));
  }
}"""

#: The bytes of every ratio-dependent panel as shown, read by the page itself (blob: URLs never leave it).
SHOWN = """async (ids) => {
  const out = [];
  for (const id of ids) {
    const img = document.querySelector('#' + id + ' img');
    const b = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
    let s = ''; for (let i = 0; i < b.length; i += 8192) s += String.fromCharCode.apply(null, b.subarray(i, i + 8192));
    out.push(btoa(s));
  }
  return out;
}"""

READY = "() => (document.body.dataset.vitvizScrub || '').startsWith('ready:')"
#: mae-tiny in the page has settled: it waits for the visitor's intent (a pointer or a key on the MAE tab; these
#: tests move the slider by script, so it never loads), it failed, or it is loaded and has read the photo it opens
#: with (one download per photo, which the page makes as soon as the server shows the photo, not during a drag).
INPAGE_SETTLED = ("() => { const d = document.body.dataset; return d.vitvizInpage === 'waiting' "
                  "|| d.vitvizInpage === 'off' || (d.vitvizInpage === 'ready' && !!d.vitvizInpageView); }")


def _browser_own(req) -> bool:  # noqa: ANN001
    """Chromium's own request for the page icon or the web-app manifest's start page."""
    path = req.url.split("?")[0]
    return req.resource_type == "other" and (path.endswith("/favicon.ico") or path.rstrip("/").count("/") == 2)


def _hidden(ratio: float) -> int:
    return int(round(ratio * 196))


def _decode(b64: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(b64))).convert("RGB"))


def _settled(page, ratio: float) -> list[np.ndarray]:
    """Wait until the metrics and all four panels show ``ratio``'s stop; its panels."""
    page.wait_for_function(
        """([hidden, ids]) => {
          const m = document.querySelector('#mae-metrics');
          if (!m || !m.innerText.includes(hidden ? '(' + hidden + ' hidden)' : 'nothing is hidden')) return false;
          return ids.every(id => { const i = document.querySelector('#' + id + ' img'); return i && i.complete && i.naturalWidth > 0; });
        }""", arg=[_hidden(ratio), list(PANEL_IDS)], timeout=120_000)
    return [_decode(b) for b in page.evaluate(SHOWN, list(PANEL_IDS))]


def _expected(client, model, photo: str, ratio: float) -> list[np.ndarray]:
    """A stop's four panels as the server shows them: the ``reconstruct`` endpoint's reconstruction
    and pasted images, and the masked and error panels drawn from the same reconstruction."""
    from gradio_client import handle_file

    from vitviz import reconstruct
    from vitviz.views import mae as mae_view

    _, _, recon, pasted, metrics = client.predict(handle_file(photo), "mae-tiny", ratio, 0, "random",
                                                  api_name="/reconstruct")
    assert (f"({_hidden(ratio)} hidden)" if _hidden(ratio) else "nothing is hidden") in metrics
    read = lambda p: np.asarray(Image.open(p).convert("RGB"))  # noqa: E731
    drawn = mae_view.panels(reconstruct(model, photo, ratio, seed=0))
    assert np.array_equal(drawn.reconstruction, read(recon))
    return [drawn.masked, read(recon), read(pasted), drawn.error]


def test_payload_packs_each_panel_file_byte_for_byte(tmp_path):
    files = {}
    stops = []
    for ratio in (0.25, 0.75):
        paths = {}
        for k, kind in enumerate(mae_scrub.PANEL_KINDS):
            p = tmp_path / f"{kind}-{ratio}.png"
            p.write_bytes(bytes([k]) * (10 + int(ratio * 100)) + kind.encode())
            paths[kind] = str(p)
        files[ratio] = paths
        stops.append(mae_scrub.StopPanels(ratio, paths, f"({_hidden(ratio)} hidden)"))
    text = scrub.build_payload({"image": "/x.png", "model": "mae-tiny", "seed": 3, "pattern": "block"}, stops,
                               str(tmp_path))
    data = json.loads(text)
    assert (data["model"], data["seed"], data["pattern"], data["image"]) == ("mae-tiny", 3, "block", "/x.png")
    assert set(data["stops"]) == {"0.25", "0.75"} and mae_scrub.stop_key(0.7500000001) == "0.75"
    blob = open(data["pack"], "rb").read()
    for ratio, paths in files.items():
        entry = data["stops"][mae_scrub.stop_key(ratio)]
        assert entry["metrics"] == f"({_hidden(ratio)} hidden)"
        for kind, path in paths.items():
            offset, length = entry["files"][kind]
            assert blob[offset:offset + length] == open(path, "rb").read()
    # The same stops give the same pack (the next visitor downloads the same file).
    assert json.loads(scrub.build_payload({"image": "/x.png", "model": "mae-tiny", "seed": 3, "pattern": "block"},
                                          stops, str(tmp_path)))["pack"] == data["pack"]


@needs_chromium
def test_drag_after_the_sweep_stays_in_the_page_and_shows_the_servers_panels(app_url, photo_path):
    from gradio_client import Client
    from playwright.sync_api import sync_playwright

    from vitviz.assets import example_images

    photo = example_images()[1]  # the photo the page opens with
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        page.goto(app_url)
        page.wait_for_function(READY, timeout=300_000)
        page.wait_for_function(INPAGE_SETTLED, timeout=300_000)
        sent: list[str] = []
        # Requests of the app; Chromium's own re-checks of the page icon after an address change
        # (the URL is written when the slider rests) are not the app's.
        page.on("request", lambda r: sent.append(r.url) if r.url.startswith("http") and not _browser_own(r) else None)
        shown = {}
        for ratio in STOPS[::-1] + STOPS[1:]:  # every stop, down and up again
            page.evaluate(MOVE, [ratio])
            shown[ratio] = _settled(page, ratio)
        assert sent == [], f"{len(sent)} requests reached the server during the drag: {sent[:3]}"
        browser.close()
    from vitviz import load_model

    client, model = Client(app_url, verbose=False), load_model("mae-tiny")
    for ratio in STOPS:
        for name, got, want in zip(PANEL_IDS, shown[ratio], _expected(client, model, photo, ratio)):
            assert np.array_equal(got, want), f"{name} at {ratio} differs from the server's panel"


@needs_chromium
def test_fast_drags_end_on_the_final_stop(app_url):
    """Bursts of moves (page's copy, server path, and a server answer landing after a newer
    move in the page) always leave the panels of the slider's final stop."""
    from playwright.sync_api import sync_playwright

    rng = np.random.default_rng(0)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        page.goto(app_url)
        page.wait_for_function(READY, timeout=300_000)
        reference = {}
        for ratio in (0.1, 0.35, 0.6, 0.9):  # the page's own panels of a few stops
            page.evaluate(MOVE, [ratio])
            reference[ratio] = _settled(page, ratio)

        def burst(final: float) -> None:
            values = [float(v) for v in rng.choice(STOPS, 25)] + [final]
            page.evaluate(MOVE, values)
            got = _settled(page, final)
            page.wait_for_timeout(1500)  # let any late server answer land
            again = _settled(page, final)
            for a, b, want in zip(got, again, reference[final]):
                assert np.array_equal(a, want) and np.array_equal(b, want)

        burst(0.35)  # in the page
        # A server answer arriving after a newer move in the page: the page's move wins.
        # (and mae-tiny computed in the page switched off: vitviz.inpage)
        page.evaluate("() => { const S = window.vitviz.scrub; S.saved = S.lookup; S.lookup = () => null;"
                      " const I = window.vitviz.inpage; I.saved = I.panels; I.panels = async () => null; }")
        page.evaluate(MOVE, [0.6])  # goes to the server
        page.evaluate("() => { const S = window.vitviz.scrub; S.lookup = S.saved; }")  # the page's copy only
        page.evaluate(MOVE, [0.9])  # in the page, before the server has answered
        page.wait_for_timeout(1500)
        for a, want in zip(_settled(page, 0.9), reference[0.9]):
            assert np.array_equal(a, want)
        # The server path alone (the page's copy switched off): always the last move's view.
        page.evaluate("() => { const S = window.vitviz.scrub; S.forget(); S.load = () => {}; }")  # in-page stays off
        burst(0.1)
        browser.close()
