"""The app's main-process CPU per call of each flood row's call, one call at a time, with model workers on.

``bench/rows.py`` measures a visitor beside each flood, where the number of calls an attack completes in its
seconds depends on the machine's load; this measures the work the app's own process does for one such call:
the CPU seconds (``/proc/<pid>/stat``) its main process uses over ``--calls`` calls of a kind, divided by them.
The kinds are the calls of the flood rows: ``attention_query`` (rows 2 and 11), the Features tab's update_all
(rows 1 and 2; and with a new photo each time: what a flood of new photos costs), ``sweep`` with a new seed each
time (row 3), and, for scale, the visitor's ``reconstruct``.

    python bench/main_cpu.py [--app-root CHECKOUT] [--before CHECKOUT] [--calls 20] [--port 7420]

Each app runs as ``bench/rows.py`` runs it (public mode, offline, ``VITVIZ_WORKERS=processes`` unless
``--env`` says otherwise), one app at a time; the load average is printed at each start and end.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from rows import App, cpu_s, new_photo

ROOT = Path(__file__).resolve().parents[1]


def kinds(app: App, photo: str) -> dict[str, Any]:
    """``kind -> call(i)``: the i-th call of each kind, with the arguments its flood row sends."""
    ids = {c["props"].get("elem_id"): c["id"] for c in app.config["components"] if isinstance(c.get("props"), dict)}
    features, n_features = app.fn(lambda name, dep: {ids.get("feat-input"), ids.get("feat-model")} <= set(dep["inputs"])
                                  and len(dep.get("outputs", [])) >= 10)
    attn, _ = app.fn(lambda name, dep: name == "attention_query")
    sweep, _ = app.fn(lambda name, dep: name == "sweep")
    rec, _ = app.fn(lambda name, dep: name == "reconstruct")
    rng = random.Random(1)
    return {
        "attention_query": lambda i: app.call(attn, app.args(attn, [app.file(photo), "mae-tiny", "encoder", 0.0, i, 4,
                                                                    "cls", 0, 0]), "10.3.0.1"),
        "features update_all": lambda i: app.call(features, app.args(features, [app.file(photo), "vit-base:random", 6,
                                                                                 False, 7, 7][:n_features]), "10.2.0.1"),
        "features update_all, new photo": lambda i: app.call(features, app.args(features, [
            app.file(app.upload(new_photo(rng), "10.2.0.2").json()[0]), "vit-base:random", 6, False, 7, 7][:n_features]),
            "10.2.0.2"),
        "sweep, new seed": lambda i: app.call(sweep, app.args(sweep, [app.file(photo), "mae-tiny", rng.randrange(10**9),
                                                                      "random"]), "10.4.0.1"),
        "reconstruct": lambda i: app.call(rec, app.args(rec, [app.file(photo), "mae-tiny", 0.75, i, "random"]),
                                          "10.1.0.1"),
    }


def measure(root: Path, args: Any) -> dict[str, Any]:
    """Start ``root``'s app, then per kind: two warm calls, ``args.calls`` measured ones; the report."""
    import os
    import subprocess
    import sys
    import tempfile

    import httpx

    from common import warmed

    work = Path(tempfile.mkdtemp(prefix="vitviz-main-cpu-"))
    (work / "tmp").mkdir()
    env = dict(os.environ, VITVIZ_PUBLIC="1", VITVIZ_TRUSTED_PROXIES="1", HF_HUB_OFFLINE="1", TMPDIR=str(work / "tmp"),
               GRADIO_TEMP_DIR=str(work / "gradio"), GRADIO_SERVER_PORT=str(args.port),
               GRADIO_SERVER_NAME="127.0.0.1", GRADIO_ANALYTICS_ENABLED="False", VITVIZ_WORKERS="processes")
    env.pop("PYTHONPATH", None)
    env.update(dict(kv.split("=", 1) for kv in args.env))
    log = (work / "app.log").open("w")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{args.port}/"
    report: dict[str, Any] = {"app_root": str(root), "loadavg_start": Path("/proc/loadavg").read_text().split()[:3]}
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 240 and proc.poll() is None:
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        warmed(work / "app.log", timeout=240)
        app = App(url)
        photo = app.upload(new_photo(random.Random(0)), "10.9.0.1").json()[0]
        for kind, call in kinds(app, photo).items():
            n = args.calls if "new" not in kind else max(2, args.calls // 3 if "sweep" in kind else args.calls // 6)
            for i in range(2):
                call(10_000 + i)
            cpu0, walls, errors = cpu_s(proc.pid), [], 0
            for i in range(n):
                t = time.perf_counter()
                ok, _ = call(i)
                walls.append(time.perf_counter() - t)
                errors += not ok
            report[kind] = {"calls": n, "errors": errors,
                            "main_cpu_ms_per_call": round(1000 * (cpu_s(proc.pid) - cpu0) / n, 1),
                            "wall_p50_ms": round(1000 * statistics.median(walls), 1)}
    finally:
        from common import end_app

        end_app(report, proc, log, work)
    return report


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app-root", type=Path, default=ROOT)
    ap.add_argument("--before", type=Path, default=None, help="a second checkout, measured right after")
    ap.add_argument("--calls", type=int, default=20,
                    help="measured calls per kind (a third of them for sweeps, a sixth for new photos)")
    ap.add_argument("--port", type=int, default=7420)
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args(argv)
    for root in [args.app_root] + ([args.before] if args.before else []):
        print(json.dumps(measure(root, args), indent=1), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
