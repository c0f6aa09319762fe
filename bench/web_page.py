"""The static page (``python -m vitviz export-web``) in headless Chromium: download, first frame, camera rate.

Usage::

    python bench/web_page.py [--port 7891] [--seconds 20] [--ratio 0.75] [--isolated]

Exports the page to a temporary folder, serves it with ``python -m http.server`` and opens it in
headless Chromium (``--no-sandbox --disable-gpu``) with a fake camera playing a 320x240 Y4M panned
across a photo at 30 frames a second (``tools/fake_camera.py``). It reports:

* the bytes the page downloads before its first reconstruction (every response body, from Playwright),
  of which the model and the WASM runtime;
* time from navigation to the model ready, and to the first reconstruction drawn;
* the camera: frames reconstructed and drawn a second, measured over ``--seconds`` after a 3 s warm-up,
  and the page's time per frame (``stats.lastMs``: since the camera is pipelined, from a frame's capture to its
  panels drawn, which includes waiting for the previous frame; before that change, normalise + graph + panels);
* with ``--isolated`` the server adds COOP/COEP (as the app's ``/in-browser/`` route does), so the page
  is cross-origin isolated and ONNX Runtime Web runs ``min(4, cores)`` threads; without, one thread;
* the load average before and after (the machine may be shared: read the rates with it).

Everything runs in the page: the server only sends files. Prints one JSON object.

``--compare LABEL=FOLDER[?QUERY] ... [--rounds N]`` measures the camera of several already exported folders (e.g.
one exported from an older commit) or page options (``?threads=2&proxy=0``: the static page's overrides of ONNX
Runtime Web's threads and proxy worker) side by side, the order reversed every other round.

``--app URL --page-bytes`` measures what one load of the app's page downloads (every response body): with no
visitor action for ``--seconds`` after the MAE tab's first views, then after the first intent (the pointer over
the slider), which fetches mae-tiny for the page.

``--app URL --breakdown`` times one camera frame's stages in the page (normalise, the graph, the panels, the
error map, drawing), on the photo the tab shows.

``--app URL`` measures the app's MAE tab instead (an app already running at URL; ``URL?threads=2`` asks the tab's
model for 2 WASM threads, which the app's cross-origin isolated page allows): once mae-tiny is in the
page, *Start the camera in your browser* (the live accordion) with the same fake camera; frames reconstructed
and drawn a second over ``--seconds``, and the HTTP requests the page made meanwhile. ``--flood ROW`` runs
``bench/rows.py``'s attack ROW (e.g. ``"11 eight addresses together"``) against the same app during the
measurement (the other visitors), and reports the load average with it. ``--group-nice 10`` puts this shell
session's scheduling group -- this script, the flood's clients, and an app started from the same shell -- behind the
page for the run (Linux autogroups: Playwright starts Chromium in a session of its own, and without this the kernel
gives each session half of a 2-core machine whatever the processes' own nice; a visitor's page runs on the
visitor's own machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.appserver import CHROMIUM, LAUNCH_ARGS, free_port  # noqa: E402
from tools.fake_camera import camera_args, pan_frames, write_y4m  # noqa: E402
from tools.static_site import opened_page, serving_folder  # noqa: E402


def measure(port: int, seconds: float, ratio: float, isolated: bool = False, site: Path | None = None,
            query: str = "") -> dict:
    """Export the page (or take the exported folder ``site``), serve it on ``port`` and measure it in Chromium
    (the figures listed above); ``query`` is appended to the page's URL (``threads=2&proxy=0``)."""
    from vitviz.web.export import export_web

    with tempfile.TemporaryDirectory() as tmp:
        if site is None:
            site = Path(tmp) / "site"
            export_web(site)
        y4m = write_y4m(Path(tmp) / "pan.y4m", pan_frames(count=60))
        sizes: dict[str, int] = {}

        def on_response(r):
            try:
                sizes[r.url] = len(r.body())
            except Exception:  # noqa: BLE001 - a redirect or an aborted request has no body
                pass

        with serving_folder(site, port, isolated) as url:
            load_before = os.getloadavg()
            with opened_page(url + (f"?{query}" if query else ""), y4m, {"response": on_response},
                             ready_ms=300_000) as (_, page):
                first = page.evaluate("window.maePage.stats")
                downloaded = dict(sizes)
                page.evaluate("(r) => { const s = document.querySelector('#ratio'); s.value = r; "
                              "s.dispatchEvent(new Event('input')); }", ratio)
                page.click("#camera")
                page.wait_for_function("window.maePage.stats.frames >= 3", timeout=120_000)
                time.sleep(3)
                f0, t0 = page.evaluate("[window.maePage.stats.frames, performance.now()]")
                page.evaluate("window.__ms = []; setInterval(() => window.__ms.push(window.maePage.stats.lastMs), 250)")
                time.sleep(seconds)
                f1, t1 = page.evaluate("[window.maePage.stats.frames, performance.now()]")
                per_frame = sorted(page.evaluate("window.__ms"))
                page.click("#camera")
            load_after = os.getloadavg()
    total = sum(downloaded.values())
    return {
        "download_bytes": total,
        "model_bytes": first["modelBytes"],
        "wasm_bytes": sum(v for k, v in downloaded.items() if k.endswith(".wasm")),
        "isolated": isolated,
        "threads": first["threads"],
        "lanes": first.get("lanes"),
        "proxy": first.get("proxy"),
        "query": query,
        "model_ready_ms": round(first["loadMs"]),
        "first_reconstruction_ms": round(first["firstFrameMs"]),
        "camera_fps": round((f1 - f0) * 1000 / (t1 - t0), 2),
        "camera_frames_measured": f1 - f0,
        "fake_camera_fps": 30,
        "page_ms_per_frame_median": round(per_frame[len(per_frame) // 2], 1) if per_frame else None,
        "ratio": ratio,
        "seconds": seconds,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
    }


def compare(variants: list[str], rounds: int, seconds: float, ratio: float, isolated: bool) -> dict:
    """The static page's camera for several variants side by side: ``LABEL=FOLDER[?QUERY]`` (an exported folder,
    e.g. one exported from an older commit, and the page's query: ``threads=2&proxy=0``); each round measures every
    variant once, the order reversed every other round. Returns the rates and page times per variant, in order."""
    parsed = []
    for v in variants:
        label, _, rest = v.partition("=")
        folder, _, query = rest.partition("?")
        parsed.append((label, Path(folder), query))
    runs: dict[str, list[dict]] = {label: [] for label, _, _ in parsed}
    for r in range(rounds):
        for label, folder, query in (parsed if r % 2 == 0 else parsed[::-1]):
            m = measure(free_port(), seconds, ratio, isolated, site=folder, query=query)
            runs[label].append(m)
            print(json.dumps({"round": r, "variant": label, "camera_fps": m["camera_fps"],
                              "page_ms_per_frame_median": m["page_ms_per_frame_median"], "threads": m["threads"],
                              "proxy": m["proxy"], "loadavg": [m["loadavg_before"][0], m["loadavg_after"][0]]}),
                  file=sys.stderr, flush=True)
    return {label: {"camera_fps": [m["camera_fps"] for m in ms],
                    "page_ms_per_frame_median": [m["page_ms_per_frame_median"] for m in ms],
                    "threads": ms[0]["threads"], "lanes": ms[0].get("lanes"), "proxy": ms[0]["proxy"],
                    "loadavg_1min_before_after": [[m["loadavg_before"][0], m["loadavg_after"][0]] for m in ms]}
            for label, ms in runs.items()} | {"rounds": rounds, "seconds": seconds, "isolated": isolated,
                                              "cpus": os.cpu_count()}


def _autogroup() -> str | None:
    """This process's scheduling group (``/proc/self/autogroup``: its session's, with the group's nice), where Linux
    has autogroups; None elsewhere."""
    try:
        return Path("/proc/self/autogroup").read_text().strip()
    except OSError:
        return None


def set_group_nice(nice: int) -> None:
    """Lower this process's session's scheduling group to ``nice`` (Linux autogroups).

    With autogroups on (``/proc/sys/kernel/sched_autogroup_enabled``), the kernel shares the CPU between sessions
    first, and a process's own nice counts only inside its session: Playwright starts Chromium in a session of its
    own, so an app started with ``nice -n 10`` from this shell still takes half the cores from the page. The group's
    nice is what puts this session -- this script, the flood's clients it starts, and an app started from the same
    shell -- behind the page, as a visitor's own machine would be."""
    Path("/proc/self/autogroup").write_text(str(nice))


def measure_app(url: str, seconds: float, ratio: float, flood: str | None = None, flood_nice: int = 0) -> dict:
    """The app's MAE tab camera computed in the page (see the module docstring)."""
    from playwright.sync_api import sync_playwright

    attacker = None
    with tempfile.TemporaryDirectory() as tmp:
        y4m = write_y4m(Path(tmp) / "pan.y4m", pan_frames(count=60))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS + camera_args(y4m))
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(url)
            page.hover("#mae-ratio input[type=range]", timeout=300_000)  # intent: the page loads mae-tiny
            page.wait_for_function("(document.querySelector('#mae-path') || {dataset: {}}).dataset.path === 'browser'",
                                   timeout=300_000)
            page.evaluate("""(r) => { const i = document.querySelector('#mae-ratio input[type=range]');
              i.value = String(r); i.dispatchEvent(new Event('input', {bubbles: true}));
              i.dispatchEvent(new Event('change', {bubbles: true})); }""", ratio)
            page.click("#mae-live-box button")  # open the accordion
            page.click("#mae-inpage-live button")
            frames = "(async () => (await window.vitviz.inpage.load()).state.camera.frames)()"
            deadline = time.time() + 120
            while page.evaluate(frames) < 3 and time.time() < deadline:
                time.sleep(0.5)
            if flood:
                # the attack's calls name a photo the app has: uploaded first (a local path is refused, as a
                # file the server does not serve); its URL without the page's query (?threads=2)
                sys.path.insert(0, str(ROOT / "bench"))
                from rows import App

                base = url.split("?")[0].rstrip("/") + "/"
                photo = App(base).upload((ROOT / "assets" / "examples" / "chelsea.jpg").read_bytes(),
                                         "10.9.0.1").json()[0]
                attacker = subprocess.Popen([sys.executable, str(ROOT / "bench" / "rows.py"), "--attack", flood,
                                             "--url", base, "--seconds", str(seconds + 10), "--photo", photo],
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                            preexec_fn=(lambda: os.nice(flood_nice)) if flood_nice else None)
                if attacker.stdout.readline().strip() != "started":
                    raise SystemExit(f"the flood {flood!r} did not start")
            time.sleep(3)
            sent: list[str] = []
            page.on("request", lambda r: sent.append(r.url) if r.url.startswith("http") else None)
            load_before = os.getloadavg()
            f0, t0 = page.evaluate(f"Promise.all([{frames}, performance.now()])")
            time.sleep(seconds)
            f1, t1 = page.evaluate(f"Promise.all([{frames}, performance.now()])")
            load_after = os.getloadavg()
            ms = page.evaluate("(async () => (await window.vitviz.inpage.load()).state.camera.ms)()")
            isolated, threads, lanes = page.evaluate(
                "(async () => { const m = (await window.vitviz.inpage.load()).state.model;"
                " return [self.crossOriginIsolated, m.threads, m.lanes]; })()")
            page.click("#mae-inpage-live button")
            browser.close()
    if attacker is not None:
        attacker.terminate()
        attacker.wait(timeout=60)
    return {
        "where": "the app's MAE tab, camera computed in the page (mae-tiny)",
        "url": url,
        "isolated": isolated,
        "threads": threads,
        "lanes": lanes,
        "camera_fps": round((f1 - f0) * 1000 / (t1 - t0), 2),
        "camera_frames_measured": f1 - f0,
        "fake_camera_fps": 30,
        "last_frame_ms": round(ms, 1),
        "requests_during_measurement": len(sent),
        "requests_during_measurement_urls": sent[:10],
        "flood": flood,
        "flood_client_nice": flood_nice if flood else None,
        "this_session_group": _autogroup(),
        "ratio": ratio,
        "seconds": seconds,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
    }


def measure_page_bytes(url: str, seconds: float) -> dict:
    """Bytes the app's page downloads on a load (every response body, from Playwright): until the MAE tab's
    first views and the slider's stops are in the page and ``seconds`` more have passed with no visitor
    action; then after the visitor's first intent (the pointer over the slider) until mae-tiny is in the page."""
    from playwright.sync_api import sync_playwright

    sizes: dict[str, int] = {}

    def on_response(r):  # noqa: ANN001
        try:
            sizes[r.url] = sizes.get(r.url, 0) + len(r.body())
        except Exception:  # noqa: BLE001 - a redirect or an aborted request has no body
            pass

    load_before = os.getloadavg()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.on("response", on_response)
        page.goto(url)
        page.wait_for_function("(document.body.dataset.vitvizScrub || '').startsWith('ready:')", timeout=300_000)
        time.sleep(seconds)
        idle = dict(sizes)
        state = page.evaluate("document.body.dataset.vitvizInpage || null")
        page.hover("#mae-ratio input[type=range]")
        page.wait_for_function("['ready', 'off'].includes(document.body.dataset.vitvizInpage)", timeout=300_000)
        page.wait_for_function("(document.querySelector('#mae-path') || {dataset: {}}).dataset.path === 'browser'",
                               timeout=300_000)
        time.sleep(2)
        wanted = dict(sizes)
        final = page.evaluate("document.body.dataset.vitvizInpage")
        browser.close()
    inb = lambda d: sum(v for k, v in d.items() if "/in-browser/" in k)  # noqa: E731
    return {
        "page_load_bytes": sum(idle.values()), "of_which_in_browser_bytes": inb(idle), "inpage_state": state,
        "after_intent_bytes": sum(wanted.values()), "after_intent_in_browser_bytes": inb(wanted),
        "inpage_state_after_intent": final,
        "in_browser_files": {k.split("/in-browser/")[1]: v for k, v in wanted.items() if "/in-browser/" in k},
        "seconds_idle": seconds, "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(),
    }


#: One camera frame's stages on the photo the tab shows, timed in the page (25 rounds, medians of the last 20):
#: normalise, the graph (ONNX Runtime Web), the panels' arithmetic, the error map, drawing three canvases.
BREAKDOWN_JS = """async () => {
  const t = await window.vitviz.inpage.load(); const st = t.state;
  const core = await import(new URL('in-browser/mae_core.js', document.baseURI).href);
  const rgba = await st.view.rgba; const {size, patch, mean, std} = st.config;
  // the visible ids are built for every run: the model's worker takes the buffer it is sent
  const mask = core.makeMask(st.tables, 'random', 0.75, 0);
  const T = {normalise_ms: [], graph_ms: [], panels_ms: [], error_map_ms: [], draw_ms: []};
  const ctx = Object.assign(document.createElement('canvas'), {width: size, height: size}).getContext('2d');
  const timed = async (k, f) => { const a = performance.now(); const v = await f(); T[k].push(performance.now() - a); return v; };
  for (let i = 0; i < 25; i++) {
    const x = await timed('normalise_ms', () => core.normalise(rgba, size, mean, std));
    const pred = await timed('graph_ms', () => st.model.run(x, core.visibleIds(mask)));
    const out = await timed('panels_ms', () => core.panels(rgba, pred, mask, size, patch, mean, std));
    const e = await timed('error_map_ms', () => core.errorPanel(out, mask, size, patch));
    await timed('draw_ms', () => { for (const a of [out.masked, out.pasted, e]) ctx.putImageData(new ImageData(a, size, size), 0, 0); });
  }
  const med = (xs) => xs.slice(5).sort((p, q) => p - q)[Math.floor((xs.length - 5) / 2)];
  return Object.fromEntries(Object.entries(T).map(([k, v]) => [k, Math.round(med(v) * 10) / 10]));
}"""


def measure_breakdown(url: str) -> dict:
    """Where a camera frame's time goes in the app's MAE tab (:data:`BREAKDOWN_JS`), once mae-tiny is in the page."""
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(url)
        page.hover("#mae-ratio input[type=range]", timeout=300_000)
        page.wait_for_function("!!document.body.dataset.vitvizInpageView", timeout=300_000)
        stages = page.evaluate(BREAKDOWN_JS)
        browser.close()
    return {**stages, "ratio": 0.75, "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0, help="port of the static server (default: a free one)")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--ratio", type=float, default=0.75)
    ap.add_argument("--isolated", action="store_true", help="serve with COOP/COEP: WASM threads")
    ap.add_argument("--app", help="measure the app's MAE tab at this URL (an app already running) instead")
    ap.add_argument("--flood", help="with --app: bench/rows.py's attack row run against the app meanwhile")
    ap.add_argument("--flood-nice", type=int, default=0,
                    help="with --flood: OS priority added to the attack's client process (its clients are other "
                         "machines on a real host; here they share the page's cores)")
    ap.add_argument("--group-nice", type=int, default=None,
                    help="the nice of this shell session's scheduling group (Linux autogroups): this script, the "
                         "flood's clients and an app started from the same shell, behind the page (set_group_nice)")
    ap.add_argument("--page-bytes", action="store_true",
                    help="with --app: bytes a page load downloads, idle for --seconds, then after the first intent")
    ap.add_argument("--breakdown", action="store_true", help="with --app: where a camera frame's time goes")
    ap.add_argument("--compare", nargs="+", metavar="LABEL=FOLDER[?QUERY]",
                    help="exported folders (and page queries) measured side by side, --rounds times, order alternating")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if args.group_nice is not None:
        before = int((_autogroup() or "nice 0").rsplit(" ", 1)[-1])
        set_group_nice(args.group_nice)
        try:
            return _run(args)
        finally:
            set_group_nice(before)  # the whole shell session's group: as it was
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    if args.compare:
        print(json.dumps(compare(args.compare, args.rounds, args.seconds, args.ratio, args.isolated), indent=1))
        return 0
    if args.app and args.breakdown:
        print(json.dumps(measure_breakdown(args.app), indent=1))
        return 0
    if args.app and args.page_bytes:
        print(json.dumps(measure_page_bytes(args.app, args.seconds), indent=1))
        return 0
    if args.app:
        print(json.dumps(measure_app(args.app, args.seconds, args.ratio, args.flood, args.flood_nice), indent=1))
        return 0
    print(json.dumps(measure(args.port or free_port(), args.seconds, args.ratio, args.isolated), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
