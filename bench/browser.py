"""Slider moves as a visitor sees them: Chromium on the running app, timed inside the page.

Usage::

    python bench/browser.py [--moves 20] [--model mae-tiny] [--page-loads 3]

Opens the app in headless Chromium (``/usr/bin/chromium``, see ``tests/setup.sh``),
waits for the first view and for the background sweep that fills every slider stop,
then moves the masking-ratio slider between stops. Each move is timed with
``performance.now()`` from the slider's input event until the four panels that depend on
the ratio (masked, reconstruction, pasted, error) all show new, decoded images and the
metrics line reports the new hidden-patch count: what the user waits for.

"Cached" moves go to stops the sweep has filled (the steady state after an upload). After
the sweep the page holds every stop's panels (``vitviz/ui/scrub.py``) and swaps them
itself; the same moves are then timed once more with the page's copy switched off, which
is the server path every move took before. "Uncached" moves change the seed first without
waiting for its sweep, so they measure a reconstruction computed on demand. A drag across
every stop counts the requests that reach the server (it should be none).

``--page-loads N`` also measures the server CPU of N page loads, each in a fresh Chromium
context, and then of 10 s with no page open (per second): the loads' waits include it.

For scale, the same moves are timed on a minimal Gradio app (one slider, four image
outputs of the same size and a line of text, panels precomputed so the server does no
work): Gradio's own floor for showing four new images, on this machine, in this run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import percentile, stop  # noqa: E402

from tools.appserver import running_app  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run"]
PANELS = ("panel-masked", "panel-reconstruction", "panel-pasted", "panel-error")

#: Moves the slider and resolves with the milliseconds until every ratio-dependent panel is new and decoded.
MOVE_JS = """
async ([value, expect, panels]) => {
  const srcs = () => panels.map(id => { const i = document.querySelector('#' + id + ' img'); return i ? i.src : null; });
  const before = srcs();
  const input = document.querySelector('#mae-ratio input[type=range]');
  const t0 = performance.now();
  input.value = value;
  input.dispatchEvent(new Event('input', {bubbles: true}));
  input.dispatchEvent(new Event('change', {bubbles: true}));
  const done = () => {
    const metrics = document.querySelector('#mae-metrics');
    if (!metrics || !metrics.innerText.includes(expect)) return false;
    return panels.every((id, k) => {
      const i = document.querySelector('#' + id + ' img');
      return i && i.src !== before[k] && i.complete && i.naturalWidth > 0;
    });
  };
  while (!done()) {
    if (performance.now() - t0 > 60000) throw new Error('no new panels after 60 s');
    await new Promise(r => setTimeout(r, 1));
  }
  return performance.now() - t0;
}
"""


#: True once the page holds every stop's panels (set by vitviz/ui/scrub.py).
SCRUB_READY = "() => (document.body.dataset.vitvizScrub || '').startsWith('ready:')"

#: Makes the page forget its stops and never reload them: every move goes to the server again.
SCRUB_OFF = "() => { const S = window.vitviz.scrub; S.forget(); S.load = () => {}; }"


def _expect(ratio: float) -> str:
    """Text the metrics line shows at a stop: its hidden-patch count (or that nothing is hidden)."""
    hidden = _hidden(ratio)
    return f"({hidden} hidden)" if hidden else "nothing is hidden"


def _hidden(ratio: float, num_patches: int = 196) -> int:
    return int(round(ratio * num_patches))


def _floor_demo():  # noqa: ANN202
    """A minimal Gradio app with the MAE tab's slider and panel ids; panels precomputed."""
    import gradio as gr
    import numpy as np

    rng = np.random.default_rng(0)
    panels = {k: [rng.integers(0, 256, (224, 224, 3), dtype=np.uint8) for _ in PANELS] for k in range(20)}

    def show(ratio: float) -> list:
        k = int(round(float(ratio) * 20))
        return [f"({_hidden(k / 20)} hidden)", *panels[k]]

    with gr.Blocks() as demo:
        ratio = gr.Slider(0.0, 0.95, value=0.75, step=0.05, elem_id="mae-ratio")
        text = gr.Markdown(elem_id="mae-metrics")
        images = [gr.Image(type="numpy", format="png", elem_id=e) for e in PANELS]
        ratio.change(show, ratio, [text, *images], trigger_mode="always_last", show_progress="minimal")
    return demo


class _Slider:
    """Moves a page's ratio slider around the stops, never to the stop it is on."""

    def __init__(self, page) -> None:  # noqa: ANN001
        self.page = page
        self.current = 0.75
        self.step = 0

    def moves(self, count: int) -> list[float]:
        """Move ``count`` times; milliseconds until the new panels show, each."""
        stops = [round(0.05 * i, 2) for i in range(1, 20)]
        out = []
        for _ in range(count):
            ratio = self.current
            while abs(ratio - self.current) < 1e-9:
                ratio = stops[(7 * self.step + 3) % len(stops)]
                self.step += 1
            self.current = ratio
            out.append(self.page.evaluate(MOVE_JS, [str(ratio), _expect(ratio), list(PANELS)]))
        return out


def browser_own(req) -> bool:  # noqa: ANN001
    """A request Chromium makes by itself when the page's address changes: the page icon and the
    web-app manifest's start page (``resource_type`` "other"), not a request of the app."""
    path = req.url.split("?")[0]
    return req.resource_type == "other" and (path.endswith("/favicon.ico") or path.rstrip("/").count("/") == 2)


def drag_requests(page) -> tuple[int, int, int]:  # noqa: ANN001
    """Move the slider through every stop and back; (moves made, requests of the app, the browser's own).

    Each move waits for its panels (as :data:`MOVE_JS` does); every HTTP request meanwhile is
    counted (``blob:`` and ``data:`` URLs are the page's own memory), and the browser's own
    icon checks after an address change (:func:`browser_own`) apart.
    """
    sent: list[str] = []
    own: list[str] = []

    def count(req) -> None:  # noqa: ANN001
        if req.url.startswith("http"):
            (own if browser_own(req) else sent).append(req.url)

    page.on("request", count)
    stops = [round(0.05 * i, 2) for i in range(20)]
    current = float(page.locator("#mae-ratio input[type=range]").input_value())
    made = 0
    for ratio in stops + stops[::-1]:
        if abs(ratio - current) < 1e-9:
            continue
        page.evaluate(MOVE_JS, [str(ratio), _expect(ratio), list(PANELS)])
        current = ratio
        made += 1
    page.wait_for_timeout(1000)  # the address is written once the slider rests
    page.remove_listener("request", count)
    return made, len(sent), len(own)


def measure_floor(moves: int = 20) -> dict:
    """Slider moves on :func:`_floor_demo` in Chromium: p50/p95 milliseconds."""
    from playwright.sync_api import sync_playwright

    from tools.appserver import free_port

    demo = _floor_demo()
    demo.queue()
    _, url, _ = demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=free_port(), quiet=True)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            page.goto(url)
            page.wait_for_selector("#mae-ratio input[type=range]", timeout=60_000)
            page.wait_for_timeout(1000)
            times = _Slider(page).moves(moves)
            browser.close()
    finally:
        demo.close()
    return {"row": "browser: minimal Gradio app, 4 precomputed new images per move (framework floor)",
            "p50_ms": statistics.median(times), "p95_ms": percentile(times, 0.95), "n": len(times)}


def measure(moves: int = 20, model: str = "mae-tiny", url: str | None = None) -> list[dict]:
    """Time cached and uncached slider moves in Chromium; rows of p50/p95 milliseconds.

    Args:
        moves: cached moves (a quarter as many uncached ones).
        model: the MAE to open the page with.
        url: a running app to use (default: start one).
    """
    if url is None:
        with running_app() as (started, _proc):
            return measure(moves, model, started)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        page.goto(f"{url}?model={model}")
        page.wait_for_selector("#panel-reconstruction img", timeout=300_000)
        # The sweep fills every stop in the background; its thumbnails appear when it is done.
        page.wait_for_selector("#mae-thumbs img", timeout=300_000)
        page.wait_for_function(SCRUB_READY, timeout=300_000)  # the page holds every stop
        slider = _Slider(page)
        cached = slider.moves(moves)
        made, requests, own = drag_requests(page)
        page.evaluate(SCRUB_OFF)
        server = slider.moves(moves)
        uncached: list[float] = []
        seed_box = page.locator("#mae-seed input")
        for i in range(max(3, moves // 4)):
            seed_box.fill(str(500 + i))
            seed_box.press("Enter")
            page.wait_for_timeout(50)
            uncached += slider.moves(1)
        browser.close()
    return [
        {"row": f"browser: slider move, cached stop, page's own copy ({model})", "p50_ms": statistics.median(cached),
         "p95_ms": percentile(cached, 0.95), "n": len(cached)},
        {"row": f"browser: requests of the app reaching the server while dragging through every stop and back, "
                f"and 1 s after ({model}); the browser's own icon checks after address changes: {own}",
         "count": requests, "n": made},
        {"row": f"browser: slider move, cached stop, server path (page's copy off; {model})",
         "p50_ms": statistics.median(server), "p95_ms": percentile(server, 0.95), "n": len(server)},
        {"row": f"browser: slider move, seed changed, stop not yet cached ({model})",
         "p50_ms": statistics.median(uncached), "p95_ms": percentile(uncached, 0.95), "n": len(uncached)},
        measure_floor(moves),
    ]


#: Arms a wait: resolves with the ms from the next keydown to when all four panels' ``src`` have changed
#: (seen by a MutationObserver, before decoding or painting): the issue's "keydown -> new panel src".
KEY_ARM_JS = """
([panels]) => {
  const srcs = () => panels.map(id => { const i = document.querySelector('#' + id + ' img'); return i ? i.src : null; });
  const before = srcs();
  window.__vitvizKeyWait = new Promise((resolve, reject) => {
    let t0 = null;
    document.addEventListener('keydown', () => { t0 = performance.now(); }, {capture: true, once: true});
    const obs = new MutationObserver(() => {
      const now = srcs();
      if (t0 !== null && now.every((s, i) => s && s !== before[i])) { obs.disconnect(); resolve(performance.now() - t0); }
    });
    obs.observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ['src']});
    setTimeout(() => { obs.disconnect(); reject(new Error('no new panels 10 s after the key')); }, 10000);
  });
}
"""


def key_moves(page, count: int) -> list[float]:  # noqa: ANN001
    """``count`` arrow-key presses on the page (its keyboard steps the MAE ratio slider: left, right, ...,
    cached stops around 0.75); ms from each keydown to four new panel ``src``."""
    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # the page's own keys
    out = []
    for i in range(count):
        page.evaluate(KEY_ARM_JS, [list(PANELS)])
        page.keyboard.press("ArrowLeft" if i % 2 == 0 else "ArrowRight")
        out.append(page.evaluate("window.__vitvizKeyWait"))
        page.wait_for_timeout(150)  # the marker and the URL settle; the next key starts from a quiet page
    return out


def measure_keys(trees: dict[str, Path], count: int, rounds: int, port: int = 7764) -> dict[str, list[float]]:
    """Arrow-key slider steps after the sweep on each checkout's app (alternated by round)."""
    import tempfile

    from page_waits import start_app
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for t, tree in trees.items():
                proc = start_app(tree, port, Path(tmp) / "app.log")
                try:
                    with sync_playwright() as pw:
                        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
                        page = browser.new_page(viewport={"width": 1280, "height": 720})
                        page.goto(f"http://127.0.0.1:{port}/")
                        page.wait_for_selector("#panel-reconstruction img", timeout=600_000)
                        page.wait_for_function(SCRUB_READY, timeout=600_000)
                        out[t] += key_moves(page, count)
                        browser.close()
                finally:
                    stop(proc)
                print(f"  keys on {t} done (load {' '.join(Path('/proc/loadavg').read_text().split()[:3])})",
                      file=sys.stderr, flush=True)
    return out


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: Seconds the server is left alone after the page loads, to measure what it spends idle.
IDLE_SECONDS = 10.0


def _page_loads(url: str, pid: int, loads: int, ready: str) -> tuple[list[float], float]:
    """Server CPU seconds (process ``pid``) of ``loads`` page loads, each in a fresh tab of one browser; then the
    server's CPU seconds per second over :data:`IDLE_SECONDS` with no page open (what the loads' waits include)."""
    import time

    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        for _ in range(loads):
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            before = _cpu_seconds(pid)
            page.goto(url)
            page.wait_for_selector(ready, timeout=300_000)
            page.wait_for_timeout(4000)
            out.append(_cpu_seconds(pid) - before)
            page.close()
        browser.close()
    time.sleep(2.0)  # the closed pages' connections wind down
    before = _cpu_seconds(pid)
    time.sleep(IDLE_SECONDS)
    return out, (_cpu_seconds(pid) - before) / IDLE_SECONDS


def page_load_cpu(loads: int = 3) -> tuple[list[float], float]:
    """Server CPU seconds of each of ``loads`` page loads in a fresh tab (the first is cold), and idle CPU per second.

    Each load waits for the MAE tab's sweep thumbnails and then 4 s more, so the
    background work a page load starts (the visible tab's views, the sweep, the panels
    shipped to the page) is included, and so is what the server spends idle meanwhile.
    """
    with running_app() as (url, proc):
        return _page_loads(url, proc.pid, loads, "#mae-thumbs img")


def floor_page_load_cpu(loads: int = 3) -> tuple[list[float], float]:
    """The same page loads on the minimal Gradio app of :func:`_floor_demo`, run as its own process."""
    import subprocess

    from tools.appserver import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve-floor", str(port)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import time
        import urllib.request

        for _ in range(240):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        return _page_loads(f"http://127.0.0.1:{port}/", proc.pid, loads, "#mae-ratio")
    finally:
        stop(proc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Time slider moves in Chromium.")
    ap.add_argument("--moves", type=int, default=20)
    ap.add_argument("--model", default="mae-tiny")
    ap.add_argument("--page-loads", type=int, default=0,
                    help="also measure the server CPU time of this many page loads (and of the minimal app's)")
    ap.add_argument("--serve-floor", type=int, default=0, help=argparse.SUPPRESS)  # the minimal app, on this port
    ap.add_argument("--keys", type=int, default=0,
                    help="only time this many arrow-key slider steps (keydown -> four new panel src) per round")
    ap.add_argument("--before", type=Path, default=None, help="with --keys: another checkout, side by side")
    ap.add_argument("--rounds", type=int, default=2, help="with --keys: rounds, checkouts alternated")
    args = ap.parse_args(argv)
    if args.keys:
        trees = {"after": ROOT} if args.before is None else {"before": args.before.resolve(), "after": ROOT}
        print(f"load average before: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
        got = measure_keys(trees, args.keys, args.rounds)
        print(f"load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
        print("| slider step after the sweep, keydown -> four new panel src | steps | p50 ms | p95 ms |")
        print("| --- | ---: | ---: | ---: |")
        for t, v in got.items():
            print(f"| {t} ({trees[t]}) | {len(v)} | {statistics.median(v):.1f} | {percentile(v, 0.95):.1f} |")
        return 0
    if args.serve_floor:
        demo = _floor_demo()
        demo.queue()
        demo.launch(server_name="127.0.0.1", server_port=args.serve_floor, quiet=True)
        return 0
    if args.page_loads:
        cpu, idle = page_load_cpu(args.page_loads)
        floor, floor_idle = floor_page_load_cpu(args.page_loads)
        print("| page load | vitviz server CPU s | minimal Gradio app server CPU s |")
        print("| --- | ---: | ---: |")
        for i, (c, f) in enumerate(zip(cpu, floor)):
            print(f"| {'first (cold)' if i == 0 else f'#{i + 1}'} | {c:.2f} | {f:.2f} |")
        print(f"| idle afterwards, per second ({IDLE_SECONDS:.0f} s) | {idle:.3f} | {floor_idle:.3f} |")
        print()
    if args.moves <= 0:
        return 0
    rows = measure(args.moves, args.model)
    print("| in Chromium | moves | p50 ms | p95 ms |")
    print("| --- | ---: | ---: | ---: |")
    for r in rows:
        if "count" in r:
            print(f"| {r['row']} | {r['n']} | {r['count']} requests | |")
        else:
            print(f"| {r['row']} | {r['n']} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} |")
    floor = next(r for r in rows if "framework floor" in r["row"])
    print(f"\npage's own copy / framework floor: {rows[0]['p50_ms'] / floor['p50_ms']:.3f}x (p50)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
