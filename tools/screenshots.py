"""Take screenshots of the running app in Debian's Chromium (for the README).

Usage::

    python tools/screenshots.py [--out assets/screenshots]
    python tools/screenshots.py --tabs heads        # only the named tabs' shots

Starts ``app.py`` on a free loopback port, uploads an example photo, waits for the
panels, and saves one PNG per tab of :data:`vitviz.ui.app.TABS` (``<tab id>.png``) and
one of the presenter layout; first, the MAE tab's first screen (no scrolling) at 1280x720
and 1920x1080, normal and presenter (``mae-WxH.png``, ``presenter-WxH.png``; only those with
``--first-screens-only``); and the MAE tab's decoder provenance after a click on a hidden patch
(``mae-provenance.png``; only that with ``--provenance-only``, or, adding ``--presenter``, the same in the
presenter layout at both projector sizes); and the MAE tab's live camera running on Chromium's fake
camera, a Y4M panned across the example photo (``mae-live.png``; only that with ``--live-only``).
Stops the app afterwards.
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


#: Gradio marks components that wait for a result with these classes.
BUSY_JS = "() => document.querySelectorAll('.pending, .generating, .eta-bar').length === 0"


def settle(page, quiet_ms: int = 2000, timeout_ms: int = 300_000) -> None:  # noqa: ANN001
    """Wait until no component has been waiting for a result for ``quiet_ms`` (the event chains ran)."""
    page.wait_for_timeout(500)
    waited = 0
    while waited < timeout_ms:
        page.wait_for_function(BUSY_JS, timeout=timeout_ms)
        page.wait_for_timeout(quiet_ms)
        waited += quiet_ms
        if page.evaluate(BUSY_JS):
            return


def full_page(page, path: Path) -> None:  # noqa: ANN001
    """A full-page screenshot with every image loaded."""
    page.evaluate(LOAD_ALL_IMAGES_JS)
    page.wait_for_timeout(300)
    page.screenshot(path=str(path), full_page=True)


#: What shows that a tab has drawn its first view (default: a visible image or chart).
READY = {"patches": "#patches-overlay img", "attention": "#attn-query-overlay img",
         "swin": ".js-plotly-plot >> visible=true", "compute": ".js-plotly-plot >> visible=true",
         "features": "#feat-probes .js-plotly-plot", "beit": "#beit-compare-mae img",
         "heads": "#heads-token img", "explain": "#explain-curves .js-plotly-plot",
         "pretraining": "#pre-epochs .js-plotly-plot"}
DEFAULT_READY = "img:visible, .js-plotly-plot:visible"
#: Clicks that fill a tab's on-demand views before its screenshot: (button, what appears).
ACTIONS = {"swin": ("#swin-show-attention", "#swin-overlay img")}


#: Projector sizes: the first screen of the MAE tab is taken at each, normal and presenter (issue 15).
VIEWPORTS: tuple[tuple[int, int], ...] = ((1280, 720), (1920, 1080))
#: The MAE tab's page-load chain (view, sweep, slider stops shipped to the page) has run to its end.
FIRST_VIEWS_DONE = "() => (document.body.dataset.vitvizScrub || '').startsWith('ready:')"
METRICS_READY = ("document.querySelector('#mae-metrics') && "
                 "document.querySelector('#mae-metrics').innerText.includes('of 196')")


def first_screens(browser, url: str, out: Path) -> list[Path]:  # noqa: ANN001
    """What a class sees without scrolling: ``mae-WxH.png`` and ``presenter-WxH.png`` per viewport."""
    written = []
    for w, h in VIEWPORTS:
        for name, query in (("mae", "?ratio=0.75"), ("presenter", "?presenter=1&ratio=0.75")):
            page = browser.new_page(viewport={"width": w, "height": h})
            page.goto(url + query)
            page.wait_for_function(METRICS_READY, timeout=180_000)
            settle(page)
            page.evaluate(LOAD_ALL_IMAGES_JS)
            path = out / f"{name}-{w}x{h}.png"
            page.screenshot(path=str(path))
            written.append(path)
            page.close()
    return written


def provenance_shot(browser, url: str, out: Path, size: tuple[int, int] = (1600, 1000),  # noqa: ANN001
                    presenter: bool = False) -> Path:
    """The MAE tab after a click on the hidden patch nearest the centre of *Reconstruction + visible*:
    ``mae-provenance.png``, from the panels down to the provenance tiles (where it copied from); with
    ``presenter``, in the presenter layout at ``size``: ``presenter-provenance-WxH.png``."""
    import numpy as np

    from vitviz.core.masking import make_mask

    hidden = np.argwhere(make_mask((14, 14), 0.75, 0, "random").numpy())  # the page's mask: 75%, seed 0
    r, c = (int(v) for v in hidden[np.argmin(((hidden - 6.5) ** 2).sum(1))])
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.goto(url + ("?presenter=1&ratio=0.75" if presenter else "?ratio=0.75"))
    page.wait_for_function(METRICS_READY, timeout=180_000)
    settle(page)
    img = page.locator("#panel-pasted img").first
    img.scroll_into_view_if_needed()
    box = img.bounding_box()
    side = min(box["width"], box["height"])  # object-fit: contain
    page.mouse.click(box["x"] + (box["width"] - side) / 2 + (c + 0.5) / 14 * side,
                     box["y"] + (box["height"] - side) / 2 + (r + 0.5) / 14 * side)
    page.wait_for_function("() => { const i = document.querySelector('#mae-provenance img');"
                           " return i && i.complete && i.naturalWidth > 0; }", timeout=180_000)
    settle(page)
    page.evaluate(LOAD_ALL_IMAGES_JS)
    top, bottom = page.locator("#mae-panels").bounding_box(), page.locator("#mae-provenance").bounding_box()
    scroll = page.evaluate("() => [window.scrollX, window.scrollY]")
    path = out / (f"presenter-provenance-{size[0]}x{size[1]}.png" if presenter else "mae-provenance.png")
    page.screenshot(path=str(path), full_page=True,
                    clip={"x": top["x"] + scroll[0], "y": top["y"] + scroll[1], "width": top["width"],
                          "height": bottom["y"] + bottom["height"] - top["y"]})
    page.close()
    return path


def live_shot(p, url: str, out: Path, size: tuple[int, int] = (1600, 1000)) -> Path:  # noqa: ANN001
    """The MAE tab's live section running on a fake camera (``tools/fake_camera.py``): ``mae-live.png``,
    taken once 20 reconstructions have reached the page (its rate line filled)."""
    import tempfile

    from tools.fake_camera import camera_args, pan_frames, write_y4m

    with tempfile.TemporaryDirectory(prefix="vitviz-shot-") as tmp:
        y4m = write_y4m(Path(tmp) / "camera.y4m", pan_frames())
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS + camera_args(y4m))
        page = browser.new_page(viewport={"width": size[0], "height": size[1]})
        page.goto(url + "?ratio=0.75")
        page.wait_for_function(METRICS_READY, timeout=180_000)
        settle(page)
        page.locator("#mae-live-box").click()
        page.locator("#mae-live-camera div[title='grant webcam access'] button").click()
        page.locator("#mae-live-camera button[aria-label='capture photo']").click()
        page.wait_for_function("() => vitviz.live.stats().total >= 20", timeout=300_000)
        box = page.locator("#mae-live-box")
        box.scroll_into_view_if_needed()
        path = out / "mae-live.png"
        box.screenshot(path=str(path))
        browser.close()
    return path


def tab_shot(page, tab, out: Path) -> Path:  # noqa: ANN001
    """Open ``tab`` (a tab module) in ``page``, wait for its views, and take ``out/<id>.png`` (full page)."""
    page.get_by_role("tab", name=tab.LABEL).click()
    page.wait_for_timeout(500)
    page.locator(READY.get(tab.TAB_ID, DEFAULT_READY)).first.wait_for(timeout=180_000)
    settle(page)
    if tab.TAB_ID in ACTIONS:
        button, shown = ACTIONS[tab.TAB_ID]
        page.locator(button).click()
        page.locator(shown).first.wait_for(timeout=180_000)
        settle(page)
    path = out / f"{tab.TAB_ID}.png"
    full_page(page, path)
    return path


def tab_shots(browser, url: str, out: Path, tab_ids: list[str]) -> list[Path]:  # noqa: ANN001
    """Full-page shots of the named tabs only, each opened by its URL (``?tab=``)."""
    from vitviz.ui.app import TABS

    known = {t.TAB_ID: t for t in TABS}
    unknown = [t for t in tab_ids if t not in known]
    if unknown:
        raise SystemExit(f"unknown tab(s) {unknown}; choose from {', '.join(known)}")
    written = []
    for tab_id in tab_ids:
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"{url}?tab={tab_id}")
        page.wait_for_function("window.vitviz && window.vitviz.tabs.ready === true", timeout=120_000)
        written.append(tab_shot(page, known[tab_id], out))
        page.close()
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "screenshots")
    ap.add_argument("--image", type=Path, default=ROOT / "assets" / "examples" / "chelsea.jpg")
    ap.add_argument("--first-screens-only", action="store_true",
                    help="only the MAE tab's first screen at 1280x720 and 1920x1080, normal and presenter")
    ap.add_argument("--provenance-only", action="store_true",
                    help="only the MAE tab's decoder-provenance shot (a hidden patch clicked), mae-provenance.png")
    ap.add_argument("--presenter", action="store_true",
                    help="with --provenance-only: in the presenter layout at 1280x720 and 1920x1080 instead "
                         "(presenter-provenance-WxH.png)")
    ap.add_argument("--live-only", action="store_true",
                    help="only the MAE tab's live camera on a fake camera (mae-live.png)")
    ap.add_argument("--tabs", nargs="+", metavar="TAB_ID",
                    help="only these tabs' full-page shots (e.g. --tabs heads), without the MAE and presenter shots")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with running_app() as (url, _proc):
        args.out.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            if args.live_only:
                live_shot(p, url, args.out)
                print(f"screenshots in {args.out}")
                return 0
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
            if args.provenance_only:
                if args.presenter:
                    for size in VIEWPORTS:
                        provenance_shot(browser, url, args.out, size, presenter=True)
                else:
                    provenance_shot(browser, url, args.out)
                browser.close()
                print(f"screenshots in {args.out}")
                return 0
            if args.tabs:
                tab_shots(browser, url, args.out, args.tabs)
                browser.close()
                print(f"screenshots in {args.out}")
                return 0
            first_screens(browser, url, args.out)
            if args.first_screens_only:
                browser.close()
                print(f"screenshots in {args.out}")
                return 0
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(url)
            # dropped once the page's first views are in (earlier, the tab's opening puts the example back),
            # then the box must show it and every event chain it started must have run
            page.wait_for_function(FIRST_VIEWS_DONE, timeout=300_000)
            page.locator("#mae-input input[type=file]").set_input_files(str(args.image))
            page.wait_for_function("(n) => (document.querySelector('#mae-input img') || {}).src?.includes(n)",
                                   arg=args.image.name, timeout=120_000)
            page.wait_for_function(METRICS_READY, timeout=120_000)
            page.wait_for_selector("#mae-sweep-chart .js-plotly-plot", timeout=300_000)
            settle(page)
            full_page(page, args.out / "mae.png")
            provenance_shot(browser, url, args.out)
            from vitviz.ui.app import TABS

            for tab in TABS:
                if tab.TAB_ID != "mae":
                    tab_shot(page, tab, args.out)
            presenter = browser.new_page(viewport={"width": 1600, "height": 1000})
            presenter.goto(url + "?presenter=1&ratio=0.75")
            presenter.wait_for_function("document.querySelector('#mae-metrics') && "
                                        "document.querySelector('#mae-metrics').innerText.includes('of 196')",
                                        timeout=120_000)
            presenter.wait_for_timeout(1500)
            presenter.screenshot(path=str(args.out / "presenter.png"))
            browser.close()
            live_shot(p, url, args.out)
    print(f"screenshots in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
