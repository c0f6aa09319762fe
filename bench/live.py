"""The MAE tab's live camera as a visitor sees it: frames per second and frame-to-panel latency.

Usage::

    python bench/live.py [--seconds 20] [--model mae-tiny] [--ratio 0.75]

Starts the app (``python app.py``, the served path with its queue groups) and opens it in headless
Chromium with a fake camera (``--use-fake-device-for-media-stream --use-fake-ui-for-media-stream
--use-file-for-fake-video-capture``) playing a 320x240 Y4M panned across a photo
(``tools/fake_camera.py``). The live section is started and, after a warm-up, measured for
``--seconds``:

* frames the page sent (POSTs of the stream, counted by Playwright), frames whose
  reconstruction reached the page, and so the share the server dropped;
* frames a second shown (reconstruction panels loaded in the page);
* frame-to-panel latency: from the frame's request leaving the page to its reconstruction panel
  having loaded, measured by the page itself (``vitviz.live.history()``, ``page.js``);
* where a frame's time goes (medians; page and server run on this machine, so they share a clock):
  the page encoding the camera picture (``canvas.toDataURL``, timed by a wrapper this script adds),
  the frame's send to the handler starting (upload, queue, Gradio decoding the JPEG), the handler
  (reconstruction and panels), the handler's end to the answer in the page (Gradio writing the
  panels as files, its message, the page's update), the answer to the panel loaded (fetching and
  decoding the picture), and the page's wait before it sends the next frame.

Side by side, in the same run on the same server: the same 30 frames (saved as the JPEGs the page
sends) through ``/reconstruct`` one by one with ``gradio_client`` -- the still-image endpoint's
upload, queue, reconstruction, four PNG panels and their download -- and the equivalent rate: first
alone, then again (another seed, so nothing is cached) while the stream runs, which shows what a
stream costs another visitor (its frames give way to other requests).

The machine is shared: the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import percentile  # noqa: E402

from tools.appserver import CHROMIUM, LAUNCH_ARGS, running_app  # noqa: E402
from tools.fake_camera import camera_args, pan_frames, write_y4m  # noqa: E402


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def live(url: str, y4m: Path, seconds: float, ratio_steps: int, during=None) -> tuple[dict, dict | None]:  # noqa: ANN001
    """Run the live section in Chromium for ``seconds`` after a warm-up; the page's own measurements. Then,
    with the stream still running, ``during()`` (another visitor's calls), and what it measured."""
    from playwright.sync_api import sync_playwright

    sent: list[float] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS + camera_args(y4m))
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.add_init_script(TIME_ENCODING)
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
        if "/queue/data" in e["request"]["url"]:
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
            ("send -> handler starts (upload, queue, Gradio decodes the JPEG)", med([h[4] - h[3] for h in rows])),
            ("handler (reconstruction, two panels, their JPEG data URLs)", med([h[5] - h[4] for h in rows])),
            ("handler ends -> answer in the page", med([h[3] + h[2] - h[5] for h in rows])),
            ("  of which: handler ends -> its message reaches the browser (Gradio, network)",
             med([a for a, _ in net]) if net else float("nan")),
            ("  of which: message in the browser -> panel in the page (Gradio's page code)",
             med([b for _, b in net]) if net else float("nan")),
            ("answer -> panel loaded (decode the picture)", med([h[1] - h[2] for h in rows])),
            ("page waits before sending the next frame", med(waits) if waits else float("nan"))]


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--model", default="mae-tiny")
    ap.add_argument("--ratio", type=float, default=0.75, help="0.75 (the tab's default) or a stop of 0.05")
    ap.add_argument("--stream-only", action="store_true", help="only the live stream, not /reconstruct beside it")
    args = ap.parse_args()
    steps = round((args.ratio - 0.75) / 0.05)
    if args.model != "mae-tiny":
        raise SystemExit("the live section uses the tab's model; this benchmark opens the app on mae-tiny")
    frames = pan_frames()
    print(f"load average before: {loadavg()}")
    with tempfile.TemporaryDirectory(prefix="vitviz-live-") as tmp:
        folder = Path(tmp)
        y4m = write_y4m(folder / "camera.y4m", frames)
        with running_app(log=folder / "app.log", HF_HUB_OFFLINE="1") as (url, _proc):
            calls = None if args.stream_only else one_by_one(url, frames, folder, args.model, args.ratio)
            stream, beside = live(url, y4m, args.seconds, steps, None if args.stream_only else
                                  lambda: one_by_one(url, frames, folder, args.model, args.ratio, seed=1))
    print(f"load average after:  {loadavg()}")
    print()
    print(f"mae-tiny at 224, ratio {args.ratio:.2f}, 320x240 fake camera, {args.seconds:.0f} s measured")
    print("| path | frames shown (of sent) | frames/s | latency p50 | latency p90 |")
    print("|---|---|---|---|---|")
    print(f"| live stream (page -> panel loaded) | {stream['shown']} (of {stream['sent']}) | {stream['fps']:.1f} | "
          f"{stream['p50']:.0f} ms | {stream['p90']:.0f} ms |")
    if calls is not None and beside is not None:
        print(f"| /reconstruct one by one (gradio_client), alone | {calls['calls']} | {calls['fps']:.1f} | "
              f"{calls['p50']:.0f} ms | {calls['p90']:.0f} ms |")
        print(f"| /reconstruct one by one while the stream runs | {beside['calls']} | {beside['fps']:.1f} | "
              f"{beside['p50']:.0f} ms | {beside['p90']:.0f} ms |")
        print(f"| (the stream meanwhile: panels shown) | {beside['stream_frames']} | | | |")
    print()
    print(f"live: the answer reached the page after {stream['answer_p50']:.0f} ms (median), the panel had loaded "
          f"after {stream['p50']:.0f} ms; the last frame's server time: {stream['server_ms']} ms")
    print()
    print("| where a live frame's time goes (median) | ms |")
    print("|---|---|")
    for name, ms in stream["parts"]:
        print(f"| {name} | {ms:.0f} |")
    print()
    print(f"page's line: {stream['rate']}")
    print(f"last frame:  {stream['line']}")


if __name__ == "__main__":
    main()
