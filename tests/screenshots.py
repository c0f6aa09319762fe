"""Take screenshots of the running app in Debian's Chromium (for the README).

Usage::

    python tests/screenshots.py [--out assets/screenshots]

Starts ``app.py`` on a free loopback port, uploads an example photo, waits for the
panels, and saves one PNG per tab. Stops the app afterwards.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.conftest import free_port  # noqa: E402
from tests.test_app import CHROMIUM, LAUNCH_ARGS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "screenshots")
    ap.add_argument("--image", type=Path, default=ROOT / "assets" / "examples" / "chelsea.jpg")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    port = free_port()
    env = dict(os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(360):
            try:
                urllib.request.urlopen(url, timeout=2)
                break
            except OSError:
                time.sleep(0.5)
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
            page.screenshot(path=str(args.out / "mae.png"), full_page=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    print(f"screenshots in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
