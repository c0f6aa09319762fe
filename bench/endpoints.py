"""Every named endpoint's first answer alone, on a freshly started app, under two settings side by side.

Usage::

    python bench/endpoints.py [--port 7822] [--rounds 1] [--env VITVIZ_WORKERS=processes] [--skip NAME,...]
    python bench/endpoints.py --before /tmp/old-checkout [--rounds 1] [--warmup --settle 120]

Starts ``python app.py`` (offline, warm-up off, so nothing is computed before the first call) once with the
checkout's defaults ("base") and once with ``--env`` added ("with"), alternately, ``--rounds`` times each
(``--warmup``: with the app's warm-up on, as a served app runs by default, so the first answers are those of a
visitor who comes after it; give ``--settle`` the time it takes);
with ``--before DIR``, "base" is the app of another checkout (a ``git worktree`` of an older commit) and
"with" this one's, so two commits are compared side by side in one run;
in each app, after ``--settle`` idle seconds, calls every named endpoint of ``/info`` one after the other,
each with its parameters' defaults and a photo no cache holds (the example with fixed noise), then the
same call again ("second": a cache or a loaded
model). Prints a table with the median seconds of each and the ratio with/base, and the load average at
the start and the end. ``measure_attention`` (a fixed time budget) is skipped by default.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHOTO = ROOT / "assets" / "examples" / "chelsea.jpg"
sys.path.insert(0, str(ROOT))

from tools.appserver import stop, wait_for_page  # noqa: E402


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def fresh_photo(folder: Path) -> Path:
    """The example photo with a little fixed noise: no result shipped with the package or cached on disk
    matches it, so every first answer computes."""
    import numpy as np
    from PIL import Image

    arr = np.asarray(Image.open(PHOTO).convert("RGB"), dtype=np.int16)
    noise = np.random.default_rng(47).integers(-3, 4, arr.shape)
    path = folder / "photo.jpg"
    Image.fromarray(np.clip(arr + noise, 0, 255).astype(np.uint8)).save(path, "JPEG", quality=90)
    return path


def one_app(port: int, env: dict[str, str], skip: set[str], settle: float,
            photo: Path, root: Path = ROOT, warmup: bool = False) -> dict[str, tuple[float | None, float | None, str]]:
    """Start the app of the checkout at ``root`` with ``env`` (its warm-up on with ``warmup``), let it idle
    ``settle`` s; per endpoint ``(first s, second s, error or "")``; stop it."""
    from gradio_client import Client, handle_file

    with tempfile.TemporaryDirectory(prefix="vitviz-endpoints-") as tmp:
        full = dict(os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", HF_HUB_OFFLINE="1",
                    GRADIO_ANALYTICS_ENABLED="False", VITVIZ_WARMUP="1" if warmup else "0", TMPDIR=tmp, **env)
        log = open(Path(tmp) / "app.log", "w")
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=root, env=full, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/"
        try:
            try:
                wait_for_page(url, proc, 300)
            except RuntimeError:
                raise SystemExit("the app did not start:\n" + (Path(tmp) / "app.log").read_text()[-3000:]) from None
            time.sleep(settle)  # what starts in the background (worker processes) is ready, as for a later visitor
            client = Client(url, verbose=False, download_files=False)
            info = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
            out = {}
            for name, spec in info.items():
                if name.strip("/") in skip:
                    continue
                args = [handle_file(str(photo)) if p.get("component") == "Image" and p.get("parameter_default")
                        is not None else p.get("parameter_default") for p in spec["parameters"]]
                times, error = [], ""
                for _ in range(2):
                    t0 = time.perf_counter()
                    try:
                        client.predict(*args, api_name=name)
                    except Exception as exc:  # noqa: BLE001 - an endpoint that fails is reported, not fatal
                        error = str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__
                    times.append(time.perf_counter() - t0)
                out[name] = (times[0], times[1], error)
            client.close()
            return out
        finally:
            stop(proc)
            log.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=7822)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--skip", default="measure_attention")
    ap.add_argument("--settle", type=float, default=20.0, help="seconds the started app idles before the calls")
    ap.add_argument("--before", type=Path, default=None, help="another checkout whose app is the base")
    ap.add_argument("--warmup", action="store_true", help="both apps with their warm-up on (settle long enough)")
    args = ap.parse_args()
    extra = dict(kv.split("=", 1) for kv in args.env)
    skip = set(filter(None, args.skip.split(",")))
    start = loadavg()
    runs: dict[str, list[dict]] = {"base": [], "with": []}
    folder = Path(tempfile.mkdtemp(prefix="vitviz-endpoints-photo-"))
    photo = fresh_photo(folder)
    for _ in range(args.rounds):
        for label, env, root in (("base", {}, args.before or ROOT), ("with", extra, ROOT)):
            runs[label].append(one_app(args.port, env, skip, args.settle, photo, root, args.warmup))
            print(f"# {label} done, load {loadavg()}", file=sys.stderr, flush=True)
    end = loadavg()
    import shutil

    shutil.rmtree(folder, ignore_errors=True)

    def med(label: str, name: str, i: int) -> float:
        return statistics.median(r[name][i] for r in runs[label] if name in r)

    base = f"base = {args.before}; " if args.before else ""
    warm = f"; warm-up on, settle {args.settle:g} s" if args.warmup else ""
    print(f"load average: start {start}, end {end}; {base}with = {json.dumps(extra)}; rounds {args.rounds}{warm}")
    print("| endpoint | base first s | with first s | ratio | base second s | with second s | error |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name in runs["base"][0]:
        err = runs["base"][0][name][2] or runs["with"][0].get(name, (0, 0, ""))[2]
        b1, w1 = med("base", name, 0), med("with", name, 0)
        print(f"| {name} | {b1:.2f} | {w1:.2f} | {w1 / b1:.2f}x | {med('base', name, 1):.2f} | "
              f"{med('with', name, 1):.2f} | {err} |")
    total_b = sum(med("base", n, 0) for n in runs["base"][0])
    total_w = sum(med("with", n, 0) for n in runs["base"][0])
    print(f"| all first answers | {total_b:.1f} | {total_w:.1f} | {total_w / total_b:.2f}x | | | |")


if __name__ == "__main__":
    main()
