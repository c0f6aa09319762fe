"""Slider moves as a visitor sees them: Chromium on the running app, timed inside the page.

Usage::

    python bench/browser.py [--moves 20] [--model mae-tiny]

Opens the app in headless Chromium (``/usr/bin/chromium``, see ``tests/setup.sh``),
waits for the first view and for the background sweep that fills every slider stop,
then moves the masking-ratio slider between stops. Each move is timed with
``performance.now()`` from the slider's input event until the four panels that depend on
the ratio (masked, reconstruction, pasted, error) all show new, decoded images and the
metrics line reports the new hidden-patch count: what the user waits for.

"Cached" moves go to stops the sweep has filled (the steady state after an upload);
"uncached" moves change the seed first without waiting for its sweep, so they measure a
reconstruction computed on demand.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.appserver import running_app  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run"]
PANELS = ("panel-masked", "panel-reconstruction", "panel-pasted", "panel-error")

#: Moves the slider and resolves with the milliseconds until every ratio-dependent panel is new and decoded.
MOVE_JS = """
async ([value, hidden, panels]) => {
  const srcs = () => panels.map(id => { const i = document.querySelector('#' + id + ' img'); return i ? i.src : null; });
  const before = srcs();
  const input = document.querySelector('#mae-ratio input[type=range]');
  const t0 = performance.now();
  input.value = value;
  input.dispatchEvent(new Event('input', {bubbles: true}));
  input.dispatchEvent(new Event('change', {bubbles: true}));
  const done = () => {
    const metrics = document.querySelector('#mae-metrics');
    if (!metrics || !metrics.innerText.includes('(' + hidden + ' hidden)')) return false;
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


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def _hidden(ratio: float, num_patches: int = 196) -> int:
    return int(round(ratio * num_patches))


def measure(moves: int = 20, model: str = "mae-tiny") -> list[dict]:
    """Time cached and uncached slider moves in Chromium; rows of p50/p95 milliseconds."""
    from playwright.sync_api import sync_playwright

    stops = [round(0.05 * i, 2) for i in range(1, 20)]
    with running_app() as (url, _proc), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        page.goto(f"{url}?model={model}")
        page.wait_for_selector("#panel-reconstruction img", timeout=300_000)
        # The sweep fills every stop in the background; its thumbnails appear when it is done.
        page.wait_for_selector("#mae-thumbs img", timeout=300_000)
        page.wait_for_timeout(2000)  # and for the panels of every stop to be pre-encoded
        current = 0.75
        order = iter([stops[(7 * i + 3) % len(stops)] for i in range(10 * moves)])

        def move() -> float:
            nonlocal current
            ratio = next(r for r in order if abs(r - current) > 1e-9)
            current = ratio
            return page.evaluate(MOVE_JS, [str(ratio), _hidden(ratio), list(PANELS)])

        cached = [move() for _ in range(moves)]
        uncached: list[float] = []
        seed_box = page.locator("#mae-seed input")
        for i in range(max(3, moves // 4)):
            seed_box.fill(str(500 + i))
            seed_box.press("Enter")
            page.wait_for_timeout(50)
            uncached.append(move())
        browser.close()
    return [
        {"row": f"browser: slider move, cached stop ({model})", "p50_ms": statistics.median(cached),
         "p95_ms": _pct(cached, 0.95), "n": len(cached)},
        {"row": f"browser: slider move, seed changed, stop not yet cached ({model})",
         "p50_ms": statistics.median(uncached), "p95_ms": _pct(uncached, 0.95), "n": len(uncached)},
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Time slider moves in Chromium.")
    ap.add_argument("--moves", type=int, default=20)
    ap.add_argument("--model", default="mae-tiny")
    args = ap.parse_args(argv)
    rows = measure(args.moves, args.model)
    print("| in Chromium | moves | p50 ms | p95 ms |")
    print("| --- | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['row']} | {r['n']} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
