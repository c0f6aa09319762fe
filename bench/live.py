"""The MAE tab's live camera as a visitor sees it: frames per second and frame-to-panel latency.

Usage::

    python bench/live.py [--seconds 20] [--model mae-tiny] [--ratio 0.75] [--stream-only] [--no-gradio-path]
    python bench/live.py --stages

Starts the app (``python app.py``, the served path with its queue groups) and opens it in headless
Chromium with a fake camera (``--use-fake-device-for-media-stream --use-fake-ui-for-media-stream
--use-file-for-fake-video-capture``) playing a 320x240 Y4M panned across a photo
(``tools/fake_camera.py``). The live section is started and, after a warm-up, measured for
``--seconds``:

* frames the page sent (POSTs of the stream, counted by Playwright: its next frames to the app's
  own route, ``vitviz.ui.serve.frames``), frames whose reconstruction reached the page, and so the
  share dropped;
* frames a second shown (reconstruction panels loaded in the page);
* frame-to-panel latency: from the frame's request leaving the page to its reconstruction panel
  having loaded, measured by the page itself (``vitviz.live.history()``, ``page.js``);
* where a frame's time goes (medians; page and server run on this machine, so they share a clock):
  the page encoding the camera picture (``canvas.toDataURL``, timed by a wrapper this script adds),
  the frame's send to the handler starting (upload, the frame computing before it; through Gradio:
  its queue and its decoding of the JPEG), the handler (reconstruction and panels), the handler's end
  to the answer in the page (the route's answer, or Gradio's event-stream message and page update,
  whose arrival in the browser is read through the DevTools protocol), the answer to the panel loaded
  (decoding the pictures), and the page's wait before it sends the next frame.

Side by side, in the same run on the same server: the same 30 frames (saved as the JPEGs the page
sends) through ``/reconstruct`` one by one with ``gradio_client`` -- the still-image endpoint's
upload, queue, reconstruction, four PNG panels and their download -- and the equivalent rate: first
alone, then again (another seed, so nothing is cached) while the stream runs, which shows what a
stream costs another visitor (its frames give way to other requests). Then the same stream again
with the app's frame route refused (answered "not found" by Playwright), so that every frame goes
through Gradio's queue as before that route existed.

``--stages`` times the steps of one frame's computation on the route in this process instead
(decoding, the model's view, the mask, the model, the panels, the JPEGs), on one and on two
intra-op threads in turn.

The machine is shared: the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import percentile  # noqa: E402

from tools.appserver import CHROMIUM, LAUNCH_ARGS, running_app  # noqa: E402
from tools.fake_camera import camera_args, pan_frames, write_y4m  # noqa: E402


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def live(url: str, y4m: Path, seconds: float, ratio_steps: int, during=None,  # noqa: ANN001
         gradio_path: bool = False) -> tuple[dict, dict | None]:
    """Run the live section in Chromium for ``seconds`` after a warm-up; the page's own measurements. Then,
    with the stream still running, ``during()`` (another visitor's calls), and what it measured. With
    ``gradio_path`` the app's own frame route (``vitviz.ui.serve.frames``) answers "not found", so the page
    sends every frame through Gradio's queue, as before that route existed."""
    from playwright.sync_api import sync_playwright

    sent: list[float] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS + camera_args(y4m))
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.add_init_script(TIME_ENCODING)
        if gradio_path:
            page.route("**/vitviz-live/stream/*", lambda route: route.fulfill(status=404, body="{}"))
        arrivals = sse_arrivals(page)
        page.on("request", lambda r: sent.append(time.monotonic()) if r.method == "POST" and "/stream/" in r.url
                and not r.url.endswith("/close") else None)
        page.goto(url)
        page.locator("button[role=tab][data-tab-id=mae]").click()
        page.locator("#mae-metrics").filter(has_text="hidden").wait_for(timeout=300_000)  # the first still view
        page.locator("#mae-live-box").click()
        for _ in range(abs(ratio_steps)):
            page.locator("#mae-ratio input[type=range]").focus()
            page.keyboard.press("ArrowRight" if ratio_steps > 0 else "ArrowLeft")
        page.locator("#mae-live-camera div[title='grant webcam access'] button").click()
        record = page.locator("#mae-live-camera button[aria-label='capture photo']")
        record.click()
        page.wait_for_function("() => vitviz.live.stats().total >= 5", timeout=300_000)  # warm-up
        page.wait_for_timeout(2000)  # let the page sweep of the still image finish
        start_ms = page.evaluate("Date.now()")
        t0 = time.monotonic()
        page.wait_for_timeout(seconds * 1000)
        t1 = time.monotonic()
        history = [h for h in page.evaluate("vitviz.live.history()") if h[0] >= start_ms]
        encodes = page.evaluate(f"window.__encodeMs.filter(([at, ms]) => at >= {start_ms}).map(([at, ms]) => ms)")
        line = page.locator("#mae-live-line").inner_text()
        rate = page.locator("#mae-live-rate").inner_text()
        other = None
        if during is not None:
            before = page.evaluate("vitviz.live.stats().total")
            other = during()
            other["stream_frames"] = page.evaluate("vitviz.live.stats().total") - before
        record.click()
        browser.close()
    return {**stats(history, sent, t0, t1, line, rate), "parts": parts(history, encodes, arrivals)}, other


#: Times the page's encoding of each camera picture (Gradio's webcam stream calls canvas.toDataURL).
TIME_ENCODING = """
window.__encodeMs = [];
const encode = HTMLCanvasElement.prototype.toDataURL;
HTMLCanvasElement.prototype.toDataURL = function (...args) {
  const t = performance.now();
  const out = encode.apply(this, args);
  window.__encodeMs.push([Date.now(), performance.now() - t]);
  return out;
};
"""


def sse_arrivals(page) -> list[float]:  # noqa: ANN001
    """Wall-clock milliseconds at which bytes of Gradio's event stream (``/queue/data``) reached the browser's
    network stack (Chrome DevTools Protocol), filled in while the page runs."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    streams: dict[str, float] = {}  # request id -> wall-clock minus monotonic, in seconds
    out: list[float] = []

    def sent(e: dict) -> None:
        if "/queue/data" in e["request"]["url"] or "/vitviz-live/" in e["request"]["url"]:
            streams[e["requestId"]] = e["wallTime"] - e["timestamp"]

    def data(e: dict) -> None:
        if e["requestId"] in streams:
            out.append((e["timestamp"] + streams[e["requestId"]]) * 1000.0)

    cdp.on("Network.requestWillBeSent", sent)
    cdp.on("Network.dataReceived", data)
    return out


def parts(history: list, encodes: list, arrivals: list[float]) -> list[tuple[str, float]]:
    """Medians of where a frame's time goes, from the page's history ``[shown, latency, answer, sent, entered,
    left]`` (server times on the same clock), the page's encoding times and the event stream's arrivals."""
    rows = [h for h in history if len(h) >= 6 and h[4] and h[5]]
    if not rows:
        return []
    med = statistics.median
    waits = [b[3] - (a[3] + a[2]) for a, b in zip(rows, rows[1:]) if b[3] - (a[3] + a[2]) < 1000]
    times = sorted(arrivals)
    net = []  # (handler end -> bytes at the browser, bytes at the browser -> the page has the panel)
    for h in rows:
        after = next((t for t in times if t >= h[5] - 2), None)  # clocks read to the millisecond
        if after is not None and after <= h[3] + h[2]:
            net.append((after - h[5], h[3] + h[2] - after))
    return [("page encodes the picture (canvas.toDataURL, JPEG)", med(encodes) if encodes else float("nan")),
            ("send -> handler starts (upload; the frame before it; Gradio: queue, JPEG decoded)",
             med([h[4] - h[3] for h in rows])),
            ("handler (route: JPEG decoded; reconstruction, two panels, their JPEGs)", med([h[5] - h[4] for h in rows])),
            ("handler ends -> answer in the page", med([h[3] + h[2] - h[5] for h in rows])),
            ("  of which: handler ends -> its bytes reach the browser (the route's answer, or Gradio's event stream)",
             med([a for a, _ in net]) if net else float("nan")),
            ("  of which: bytes in the browser -> answer in the page (page code; Gradio: its update)",
             med([b for _, b in net]) if net else float("nan")),
            ("answer -> panel loaded (decode the pictures)", med([h[1] - h[2] for h in rows])),
            ("page waits before sending the next frame (negative: sent before the answer before)",
             med(waits) if waits else float("nan"))]


def stats(history: list, sent: list, t0: float, t1: float, line: str, rate: str) -> dict:
    """The stream's figures from the page's history of panels shown and the frames it sent."""
    lat = [h[1] for h in history]
    answer = [h[2] for h in history]
    span = (history[-1][0] - history[0][0]) / 1000 if len(history) > 1 else 0.0
    frames_sent = sum(1 for t in sent if t0 <= t <= t1)
    return {"shown": len(history), "sent": frames_sent, "fps": (len(history) - 1) / span if span else 0.0,
            "p50": statistics.median(lat) if lat else float("nan"), "p90": percentile(lat, 0.9) if lat else float("nan"),
            "answer_p50": statistics.median(answer) if answer else float("nan"), "line": line, "rate": rate,
            "server_ms": _server_ms(line)}


def _server_ms(line: str) -> str:
    import re

    found = re.search(r"server (\d+) ms", line)
    return found.group(1) if found else "?"


def one_by_one(url: str, frames: list, folder: Path, model: str, ratio: float, seed: int = 0) -> dict:
    """The same frames, each as a JPEG through ``/reconstruct``, one call at a time."""
    from gradio_client import Client, handle_file
    from PIL import Image

    paths = []
    for i, f in enumerate(frames):
        path = folder / f"frame{i:02d}.jpg"
        Image.fromarray(f).save(path, quality=92)  # what the page sends (canvas.toDataURL's JPEG quality 0.92)
        paths.append(path)
    client = Client(url, verbose=False)
    client.predict(handle_file(str(paths[0])), model, ratio, 7, "random", api_name="/reconstruct")  # warm-up
    times = []
    for path in paths:
        t = time.perf_counter()
        client.predict(handle_file(str(path)), model, ratio, seed, "random", api_name="/reconstruct")
        times.append((time.perf_counter() - t) * 1000)
    return {"calls": len(times), "fps": 1000 * len(times) / sum(times), "p50": statistics.median(times),
            "p90": percentile(times, 0.9)}


def stages(frames: list, rounds: int = 3) -> dict[int, list[tuple[str, float]]]:
    """Medians (ms) of each step of one live frame on the route (``vitviz.ui.mae_live.fast_step``), in this
    process, on 1 and on 2 intra-op threads taken in turn frame by frame (so both see the same load): the
    camera frames as the page sends them (JPEG data URLs)."""
    import base64
    import io

    import torch
    from PIL import Image

    from vitviz.core.masking import make_mask
    from vitviz.mae.reconstruct import assemble_stops, predict, prepare
    from vitviz.models.loading import load_model
    from vitviz.ui import mae_live
    from vitviz.views import live_panels
    from vitviz.views.mae import masked_panel

    urls = []
    for f in frames:
        buf = io.BytesIO()
        Image.fromarray(f).save(buf, format="JPEG", quality=92)
        urls.append("data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii"))
    model, previous = load_model("mae-tiny"), torch.get_num_threads()
    names = ["decode the frame (base64, JPEG)", "the model's square view (resize, crop)", "the mask",
             "the model (encoder, decoder)", "panels: pasted picture, error map", "panels: masked picture, grid",
             "two JPEGs", "the whole frame (fast_step)"]
    times: dict[int, dict[str, list[float]]] = {n: {name: [] for name in names} for n in (1, 2)}
    quiet = SimpleNamespace(session_hash="bench", request=None)
    try:
        for i, url in enumerate(urls * rounds):
            threads = 1 + i % 2
            torch.set_num_threads(threads)
            t = [time.perf_counter()]
            rgb = live_panels.picture(url)
            t.append(time.perf_counter())
            original = prepare(model, rgb)
            t.append(time.perf_counter())
            m = make_mask(model.module.config.grid, 0.75, 0, "random")
            t.append(time.perf_counter())
            pixels, losses = predict(model, original, m.unsqueeze(0), channels_last=True)
            t.append(time.perf_counter())
            r = assemble_stops(original, pixels, m.unsqueeze(0), losses, model.module.patch_size, model.norm_pix)[0]
            t.append(time.perf_counter())
            shown = masked_panel(r)
            t.append(time.perf_counter())
            live_panels.jpeg(shown), live_panels.jpeg(r.pasted)
            t.append(time.perf_counter())
            mae_live.fast_step([url, "mae-tiny", 0.75, 0, "random", False, False, None,
                                live_panels.RECONSTRUCTION,
                                "1"], quiet)
            t.append(time.perf_counter())
            if i >= 6:  # warm
                for name, a, b in zip(names, t, t[1:]):
                    times[threads][name].append((b - a) * 1000)
    finally:
        torch.set_num_threads(previous)
    return {n: [(name, statistics.median(v)) for name, v in steps.items()] for n, steps in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--model", default="mae-tiny")
    ap.add_argument("--ratio", type=float, default=0.75, help="0.75 (the tab's default) or a stop of 0.05")
    ap.add_argument("--stream-only", action="store_true", help="only the live stream, not /reconstruct beside it")
    ap.add_argument("--no-gradio-path", action="store_true",
                    help="skip the second stream whose frames all go through Gradio's queue")
    ap.add_argument("--stages", action="store_true",
                    help="only the steps of one frame's computation, in this process, on 1 and 2 threads")
    args = ap.parse_args()
    if args.stages:
        print(f"load average before: {loadavg()}")
        both = stages(pan_frames())
        one, two = both[1], both[2]
        print(f"load average after:  {loadavg()}")
        print("| step of one live frame (median) | 1 thread, ms | 2 threads, ms |")
        print("|---|---|---|")
        for (name, a), (_, b) in zip(one, two):
            print(f"| {name} | {a:.1f} | {b:.1f} |")
        return
    steps = round((args.ratio - 0.75) / 0.05)
    if args.model != "mae-tiny":
        raise SystemExit("the live section uses the tab's model; this benchmark opens the app on mae-tiny")
    frames = pan_frames()
    print(f"load average before: {loadavg()}")
    old = None
    with tempfile.TemporaryDirectory(prefix="vitviz-live-") as tmp:
        folder = Path(tmp)
        y4m = write_y4m(folder / "camera.y4m", frames)
        with running_app(log=folder / "app.log", HF_HUB_OFFLINE="1") as (url, _proc):
            calls = None if args.stream_only else one_by_one(url, frames, folder, args.model, args.ratio)
            stream, beside = live(url, y4m, args.seconds, steps, None if args.stream_only else
                                  lambda: one_by_one(url, frames, folder, args.model, args.ratio, seed=1))
            middle = loadavg()
            if not (args.stream_only or args.no_gradio_path):
                old, _ = live(url, y4m, args.seconds, steps, gradio_path=True)
    print(f"load average after:  {loadavg()} (between the streams: {middle})")
    print()
    print(f"mae-tiny at 224, ratio {args.ratio:.2f}, 320x240 fake camera, {args.seconds:.0f} s measured")
    print("| path | frames shown (of sent) | frames/s | latency p50 | latency p90 |")
    print("|---|---|---|---|---|")
    rows = [("live stream (page -> panel loaded)", stream)]
    if old is not None:
        rows.append(("the same stream, every frame through Gradio's queue (the app's frame route refused)", old))
    for name, s in rows:
        print(f"| {name} | {s['shown']} (of {s['sent']}) | {s['fps']:.1f} | {s['p50']:.0f} ms | {s['p90']:.0f} ms |")
    if calls is not None and beside is not None:
        print(f"| /reconstruct one by one (gradio_client), alone | {calls['calls']} | {calls['fps']:.1f} | "
              f"{calls['p50']:.0f} ms | {calls['p90']:.0f} ms |")
        print(f"| /reconstruct one by one while the stream runs | {beside['calls']} | {beside['fps']:.1f} | "
              f"{beside['p50']:.0f} ms | {beside['p90']:.0f} ms |")
        print(f"| (the stream meanwhile: panels shown) | {beside['stream_frames']} | | | |")
    for name, s in rows:
        print()
        print(f"{name}: the answer reached the page after {s['answer_p50']:.0f} ms (median), the panel had loaded "
              f"after {s['p50']:.0f} ms; the last frame's server time: {s['server_ms']} ms")
        print()
        print("| where a live frame's time goes (median) | ms |")
        print("|---|---|")
        for part, ms in s["parts"]:
            print(f"| {part} | {ms:.0f} |")
        print()
        print(f"page's line: {s['rate']}")
        print(f"last frame:  {s['line']}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tools.appserver import client_temp_folder  # gradio_client's empty download folders go with it

    with client_temp_folder():
        main()
