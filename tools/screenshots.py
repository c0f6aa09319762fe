"""Take screenshots of the running app in Debian's Chromium (for the README).

Usage::

    python tools/screenshots.py [--out assets/screenshots]

Starts ``app.py`` on a free loopback port, uploads an example photo, waits for the
panels, and saves one PNG per tab. Stops the app afterwards.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tools.appserver import running_app  # noqa: E402
from tools.appserver import CHROMIUM, LAUNCH_ARGS  # noqa: E402


#: Gradio's images load lazily; a full-page screenshot would catch those below the fold
#: empty. Load them all, then resolve when every visible image is decoded.
LOAD_ALL_IMAGES_JS = """
async () => {
  const imgs = [...document.querySelectorAll('img')].filter(i => i.offsetParent !== null && i.src);
  imgs.forEach(i => { i.loading = 'eager'; });
  await Promise.all(imgs.map(i => i.complete ? null : new Promise(r => { i.onload = r; i.onerror = r; })));
}
"""


def full_page(page, path: Path) -> None:  # noqa: ANN001
    """A full-page screenshot with every image loaded."""
    page.evaluate(LOAD_ALL_IMAGES_JS)
    page.wait_for_timeout(300)
    page.screenshot(path=str(path), full_page=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "screenshots")
    ap.add_argument("--image", type=Path, default=ROOT / "assets" / "examples" / "chelsea.jpg")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with running_app() as (url, _proc):
        args.out.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(url)
            page.locator("#mae-input input[type=file]").set_input_files(str(args.image))
            page.wait_for_function("document.querySelector('#mae-metrics') && "
                                   "document.querySelector('#mae-metrics').innerText.includes('of 196')",
                                   timeout=120_000)
            page.wait_for_selector("#mae-sweep-chart .js-plotly-plot", timeout=300_000)
            page.wait_for_timeout(1500)
            full_page(page, args.out / "mae.png")
            for name, ready in (("Patches", "#patches-overlay img"),
                                ("Attention", "#attn-query-overlay img"),
                                ("Swin", ".js-plotly-plot >> visible=true"),
                                ("Compute", ".js-plotly-plot >> visible=true")):
                page.get_by_role("tab", name=name).click()
                page.locator(ready).first.wait_for(timeout=180_000)
                page.wait_for_timeout(4000)
                full_page(page, args.out / f"{name.lower()}.png")
            presenter = browser.new_page(viewport={"width": 1600, "height": 1000})
            presenter.goto(url + "?presenter=1&ratio=0.75")
            presenter.wait_for_function("document.querySelector('#mae-metrics') && "
                                        "document.querySelector('#mae-metrics').innerText.includes('of 196')",
                                        timeout=120_000)
            presenter.wait_for_timeout(1500)
            presenter.screenshot(path=str(args.out / "presenter.png"))
            browser.close()
    print(f"screenshots in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
