"""What a visitor waits for in the page, on two checkouts side by side (issue 34's table).

Usage::

    python bench/page_waits.py [--before DIR] [--rounds 2] [--scenarios heads-click tabs] [--port 7760]
                               [--after-env NAME=VALUE ...]

Each round starts ``python app.py`` of each checkout in turn (its own environment, a loopback
port) and drives it with headless Chromium (``/usr/bin/chromium``, 1280×720), timed in
Python around the page's own events:

- ``heads-click``: the Heads tab's first view drawn, then a click on the grid cell of layer 5,
  head 2; timed until the Attention tab's query view names that layer and head and shows
  its overlay (the Attention tab not opened before: what a visitor's first click meets).
- ``tabs``: the MAE tab's first view, then a new photo (an example flipped and cropped: no
  cache has seen it) uploaded there and the MAE tab settled; then every other tab that
  shares the photo is opened in turn, each timed from the click on its button until its
  ready text is shown and none of its outputs is pending for 0.8 s (the time reported is
  the moment they stopped being pending). The Explain tab also gets rows for its maps alone and for its
  curves' first drawing (both before it settles, :data:`FIRST_VISUAL`).

With ``--warm`` each scenario starts once the app's warm-up has ended (its log's last warm-up line): what a
visitor meets after the first ~20 s of a start. Without it the scenario starts right after the start, beside
the warm-up, which gives way at its pause points but not while it loads a model.

Prints the median of each row per checkout, their ratio and the load average (``uptime``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import APP_COMMAND, stop, warmed  # noqa: E402
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run"]
SCENARIOS = ("heads-click", "tabs")
#: Tab label -> (elem_id, text) that the tab's first view shows (the tour's ready texts).
TABS: dict[str, tuple[str, str]] = {
    "Patches": ("patches-readout", "Grid"),
    "Attention": ("attn-query-info", "Layer 1 of"),
    "Heads": ("heads-info", "heads"),
    "Explain": ("explain-auc", "deletion"),
    "Features": ("feat-pca-info", "PCA"),
    "BEiT tokens": ("beit-token-text", "Round trip"),
    "Swin": ("swin-info", "stage 1"),
}

#: Resolves, once the element's text holds ``text`` and no status tracker of the shown tab has been
#: pending for ``quiet`` ms, with the ms from ``t0`` (``performance.now()`` origin) to when they stopped.
SETTLED_JS = """
async ([id, text, quiet, timeout]) => {
  const start = performance.now();
  const busy = () => [...document.querySelectorAll('[role=tabpanel] [data-testid=status-tracker]')]
    .some(el => el.offsetParent !== null && !el.classList.contains('hide'));
  let since = null;
  while (performance.now() - start < timeout) {
    const el = document.getElementById(id);
    const ready = el && el.innerText.includes(text) && !busy();
    if (ready && since === null) since = performance.now();
    if (!ready) since = null;
    if (since !== null && performance.now() - since >= quiet) return since - start;
    await new Promise(r => setTimeout(r, 20));
  }
  throw new Error(`not settled: #${id} ${text}`);
}
"""

#: Tabs that draw parts of their view before the rest: label -> [(elem_id, text, what, panel_id)], each timed until
#: the element holds the text and no full progress mark covers the panel (Explain: the maps, then the curves' first
#: drawing, before the curves settle; a full mark over the curves hides their first drawing behind a blank panel).
FIRST_VISUAL: dict[str, list[tuple[str, str, str, str]]] = {
    "Explain": [("explain-maps-info", "explains", "maps", "explain-maps"),
                ("explain-curves-info", "Areas under the curves", "curves", "explain-curves")]}
#: Starts a watch (from now) for each element's text and uncovered panel; the time in ms is left in
#: ``window.__vitvizShownAt[what]``.
WATCH_JS = """(watches) => { window.__vitvizShownAt = {}; const t0 = performance.now();
  const covered = (id) => [...document.querySelectorAll(`#${id} [data-testid=status-tracker]`)]
    .some(el => el.classList.contains('full') && !el.classList.contains('hide') && el.offsetParent !== null);
  for (const [id, text, what, panel] of watches) (async () => {
    while (!(document.getElementById(id) && document.getElementById(id).innerText.includes(text)) || covered(panel))
      await new Promise(r => setTimeout(r, 20));
    window.__vitvizShownAt[what] = performance.now() - t0; })(); }"""

#: Page coordinates of the centre of the Heads grid cell of (layer, head), 1-based.
CELL_JS = """([layer, head]) => {
  const gd = document.querySelector('#heads-grid .js-plotly-plot');
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
  return [r.left + xa._offset + xa.l2p(head), r.top + ya._offset + ya.l2p(layer)];
}"""
#: The grid is drawn and the page's click handler is on it (either checkout's way of saying so).
ATTACHED_JS = """() => { const gd = document.querySelector('#heads-grid .js-plotly-plot');
  return !!(gd && gd._fullLayout && gd._fullLayout.xaxis &&
            (gd.__vitvizClick || (window.vitviz && window.vitviz.heads && window.vitviz.heads.attached(gd)))); }"""
QUERY_DONE_JS = """([l, h]) => { const t = document.querySelector('#attn-query-info');
  const img = document.querySelector('#attn-query-overlay img');
  return t && t.innerText.includes(`Head ${h} selected`) && t.innerText.includes(`Layer ${l} of`) &&
         img && img.getAttribute('src'); }"""


def loadavg() -> str:
    """The first three fields of ``/proc/loadavg``."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def start_app(tree: Path, port: int, log: Path, tries: int = 3, extra_env: dict[str, str] | None = None
              ) -> subprocess.Popen:
    """``python app.py`` of ``tree`` on ``port``, once ``GET /`` answers. Started again (up to ``tries``
    times) when it exits early: under load, Gradio's own check that it answers on localhost (a 3 s HEAD)
    can fail and stop the start ("When localhost is not accessible...")."""
    for attempt in range(tries):
        try:
            return _start_once(tree, port, log, extra_env or {})
        except RuntimeError:
            if attempt == tries - 1:
                raise
            print(f"  the app in {tree} exited early; starting it again", file=sys.stderr, flush=True)
    raise AssertionError("unreachable")


def _start_once(tree: Path, port: int, log: Path, extra_env: dict[str, str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(tree), "GRADIO_SERVER_PORT": str(port),
           "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_ANALYTICS_ENABLED": "False", **extra_env}
    proc = subprocess.Popen(APP_COMMAND, cwd=tree, env=env, stdout=log.open("w"),
                            stderr=subprocess.STDOUT)
    deadline = time.time() + 600
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the app in {tree} exited:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"the app in {tree} did not start")


def new_photo(tree: Path, out: Path) -> Path:
    """An example photo flipped and cropped (content no cache has seen), as PNG."""
    from PIL import Image

    src = sorted((tree / "assets" / "examples").glob("*.jpg"))[0]
    im = Image.open(src).convert("RGB").transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    w, h = im.size
    im = im.crop((w // 10, h // 12, w - w // 14, h - h // 9))
    path = out / "never-seen.png"
    im.save(path)
    return path


def heads_click(page, url: str) -> dict[str, float]:  # noqa: ANN001
    page.goto(url + "?tab=heads")
    page.wait_for_function("document.querySelector('#heads-info') && "
                           "document.querySelector('#heads-info').innerText.includes('heads')", timeout=600_000)
    page.locator("#heads-grid").scroll_into_view_if_needed()
    page.wait_for_function(ATTACHED_JS, timeout=120_000)
    page.wait_for_timeout(500)
    x, y = page.evaluate(CELL_JS, [5, 2])
    t0 = time.perf_counter()
    page.mouse.click(x, y)
    page.wait_for_function(QUERY_DONE_JS, arg=[5, 2], timeout=600_000, polling=20)
    return {"Heads cell click -> Attention query view of that head": time.perf_counter() - t0}


def tabs(page, url: str, photo: Path) -> dict[str, float]:  # noqa: ANN001
    page.goto(url + "?tab=mae")
    page.evaluate(SETTLED_JS, ["mae-metrics", "hidden", 800, 600_000])
    page.set_input_files("#mae-input input[type=file]", str(photo))
    t0 = time.perf_counter()
    page.wait_for_timeout(1000)
    page.evaluate(SETTLED_JS, ["mae-metrics", "hidden", 800, 600_000])
    out = {"MAE: new photo uploaded (until settled)": time.perf_counter() - t0}
    for label, (elem, text) in TABS.items():
        first = FIRST_VISUAL.get(label)
        if first:
            page.evaluate(WATCH_JS, [list(w) for w in first])
        page.get_by_role("tab", name=label, exact=True).click()
        ms = page.evaluate(SETTLED_JS, [elem, text, 800, 600_000])
        shown = page.evaluate("window.__vitvizShownAt") if first else {}
        for _, _, what, _ in first or ():
            out[f"{label} tab opened with the new photo: {what} shown"] = shown.get(what, float("nan")) / 1000
        out[f"{label} tab opened with the new photo"] = ms / 1000
    return out


def run_tree(tree: Path, scenario: str, port: int, tmp: Path, extra_env: dict[str, str] | None = None,
             warm: bool = False) -> dict[str, float]:
    """One scenario on a fresh app of ``tree`` (``extra_env`` added to its environment) and a fresh browser;
    ``warm``: once the app's warm-up has ended (:func:`warmed`)."""
    from playwright.sync_api import sync_playwright

    proc = start_app(tree, port, tmp / "app.log", extra_env=extra_env)
    try:
        if warm:
            warmed(tmp / "app.log")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            url = f"http://127.0.0.1:{port}/"
            try:
                return heads_click(page, url) if scenario == "heads-click" else tabs(page, url, new_photo(tree, tmp))
            finally:
                browser.close()
    finally:
        stop(proc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, default=None, help="the other checkout (a worktree of the start)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    ap.add_argument("--port", type=int, default=7760)
    ap.add_argument("--warm", action="store_true",
                    help="start each scenario once the app's warm-up has ended (default: right after the start)")
    ap.add_argument("--after-env", nargs="*", default=[], metavar="NAME=VALUE",
                    help="settings for the after checkout's app only (e.g. VITVIZ_WARMUP=1; --before . compares a setting)")
    args = ap.parse_args(argv)
    after_env = dict(kv.split("=", 1) for kv in args.after_env)
    trees = {"after": ROOT} if args.before is None else {"before": args.before.resolve(), "after": ROOT}
    results: dict[str, dict[str, list[float]]] = {}
    print(f"load average before: {loadavg()}; after's settings: {after_env or 'none'}", flush=True)
    with tempfile.TemporaryDirectory() as d:
        for scenario in args.scenarios:
            for r in range(args.rounds):
                for t, tree in trees.items():
                    env = after_env if t == "after" else None
                    for row, s in run_tree(tree, scenario, args.port, Path(d), env, args.warm).items():
                        results.setdefault(row, {k: [] for k in trees})[t].append(s)
                    print(f"  {scenario} round {r + 1} {t} done (load {loadavg()})", file=sys.stderr, flush=True)
    print(f"load average after: {loadavg()}")
    heads = ["row"] + [f"{t} s, median (min–max)" for t in trees] + (["after / before"] if len(trees) == 2 else [])
    print("| " + " | ".join(heads) + " |")
    print("| --- |" + " ---: |" * (len(heads) - 1))
    for row, by in results.items():
        med = {t: statistics.median(v) for t, v in by.items() if v}
        cells = [f"{med[t]:.2f} ({min(by[t]):.2f}–{max(by[t]):.2f})" if by[t] else "n/a" for t in trees]
        if len(trees) == 2 and len(med) == 2:
            cells.append(f"{med['after'] / med['before']:.2f}x")
        print(f"| {row} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
