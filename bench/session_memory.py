"""Memory of browser sessions: one new session in the Python heap (Gradio 6.31's own SessionState against
vitviz.ui.serve.contacts.slim_sessions), the page configuration every page load is sent, and the served app's memory as
fresh sessions arrive (300 at a time, up to 1,500).

Usage::

    python bench/session_memory.py                      # one session's memory and the page configuration
    python bench/session_memory.py --served [--sessions 1500 --step 300 --photo step|one --port 7321 --env NAME=VALUE]

The first builds the app, creates 50 sessions each way and prints the Python memory each holds
(tracemalloc): Gradio copies every component's configuration into each session, vitviz keeps only the
session's own state. Then the page configuration as the page receives it (compact JSON, and gzip-compressed at
level 1 as the app sends it), with vitviz.ui.serve.pageconfig and as Gradio builds it, and its largest components.

``--served`` starts ``app.py`` in public mode (offline, trusting one proxy hop), warms it with one visitor,
then sends ``--step`` fresh sessions at a time (each its own session id and ``X-Forwarded-For`` address, never
used before in the run, one reconstruct of mae-tiny each, three at a time; ``bench/rows.py``'s fresh sessions)
until ``--sessions``, and prints the app's resident memory after each step (its own process, and with its
worker processes), the growth per step, and whether it is flat past the first step (issue 47: at most 100 MB
per 300 sessions, and not growing from 300 to 1,500). ``VITVIZ_MAX_SESSIONS`` bounds the sessions kept (auto:
300 in public mode).

``--photo`` says what the sessions look at: ``step`` (default), a new photo for each step's sessions, so the
app's per-image caches (decoded uploads, slider stops: bounded by entry counts and ``VITVIZ_CACHE_BUDGET``)
fill while the sessions arrive, with malloc's free space around their entries; ``one``, one photo for the
whole run, so what grows is what each new session and address leaves behind.

``--probe`` loads ``bench/memory_probe.py`` into the app and adds to each step what its memory is made of
(malloc's arenas in use and free, Python's heap, Gradio's per-session tables, vitviz's caches);
``--probe-trim`` also the resident memory after ``malloc_trim(0)`` (which then changes the steps after).
``--idle-seconds S`` adds the resident memory after the last step and ``S`` seconds without requests (the
memory the app keeps after a flood).
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
sys.path.insert(0, str(ROOT / "bench"))


def per_session_report() -> None:
    """One session's memory each way, and the page configuration (the module's text)."""
    import gzip
    import tracemalloc

    import gradio.state_holder as sh

    original = sh.SessionState.__init__
    from vitviz.ui import build_demo, serve
    from vitviz.ui.serve.pageconfig import slim

    demo = serve.install(build_demo())  # installs vitviz.ui.serve.contacts.slim_sessions

    def per_session(n: int = 50) -> float:
        tracemalloc.start()
        kept = [sh.SessionState(demo) for _ in range(n)]  # noqa: F841 - held while measured
        current, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return current / n / 1024

    lean = per_session()
    sh.SessionState.__init__ = original
    gradio_own = per_session()
    print(f"per new session: Gradio 6.31's SessionState {gradio_own:.0f} KiB, with vitviz.ui.serve.contacts.slim_sessions "
          f"{lean:.0f} KiB")

    def _json(value: object) -> bytes:
        return json.dumps(value, default=str, separators=(",", ":"), ensure_ascii=False).encode()

    def _kb(config: dict) -> str:
        raw = _json(config)
        return f"{len(raw) / 1000:.0f} KB (gzip -1: {len(gzip.compress(raw, 1)) / 1000:.0f} KB)"

    full = demo.get_config_file()  # Gradio's own; the app's middleware (pageconfig) slims what it serves
    served = slim(demo.get_config_file())
    tabs = [c["props"].get("label") for c in served["components"] if c.get("type") == "tabitem"]
    print(f"page configuration ({len(tabs)} tabs: {', '.join(tabs)}): {_kb(served)}; as Gradio builds it {_kb(full)}")
    print(f"  components {len(_json(served['components'])) / 1000:.0f} KB ({len(served['components'])}), "
          f"events {len(_json(served['dependencies'])) / 1000:.0f} KB ({len(served['dependencies'])})")
    largest = sorted(served["components"], key=lambda c: -len(_json(c)))[:5]
    print("  largest components: " + ", ".join(
        f"{c['props'].get('elem_id') or c['type']} {len(_json(c)) / 1000:.1f} KB" for c in largest))


def _rss_tree_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants (worker processes), in MB."""
    import rows

    seen, todo, total = set(), [pid], 0.0
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            total += rows.rss_mb(p)
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        todo += [int(c) for c in children]
    return total


def served(sessions: int, step: int, port: int, env: list[str], seconds: float, photo: str = "step",
           probe: str | None = None, idle: float = 0.0) -> dict:
    """The served app's memory after each ``step`` fresh sessions up to ``sessions`` (the module's text)."""
    import random

    import rows
    from tools.appserver import stop, wait_for_page

    work = Path(tempfile.mkdtemp(prefix="vitviz-sessions-"))
    full_env = dict(os.environ, VITVIZ_PUBLIC="1", VITVIZ_TRUSTED_PROXIES="1", HF_HUB_OFFLINE="1", VITVIZ_WARMUP="0",
                    GRADIO_TEMP_DIR=str(work / "gradio"), GRADIO_SERVER_PORT=str(port),
                    GRADIO_SERVER_NAME="127.0.0.1", GRADIO_ANALYTICS_ENABLED="False")
    full_env.update(dict(kv.split("=", 1) for kv in env))
    if probe:
        import memory_probe

        full_env.update(memory_probe.environment(work / "probe"))
    log = (work / "app.log").open("w")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=full_env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    report: dict = {"env": env, "photo": photo, "loadavg_start": Path("/proc/loadavg").read_text().split()[:3],
                    "steps": []}
    t0 = time.monotonic()
    try:
        wait_for_page(url, proc, 300)
        rng = random.Random(0)
        app = rows.App(url)
        rows.visitor(app, 3, rng)  # the model in memory, its first caches filled
        report["warm_rss_mb"] = round(rows.rss_mb(proc.pid))
        report["warm_rss_with_workers_mb"] = round(_rss_tree_mb(proc.pid))
        if probe:
            report["warm_anatomy"] = memory_probe.request(work / "probe", "warm", probe == "trim")
        done, one = 0, rows.new_photo(rng) if photo == "one" else None
        while done < sessions:
            got = rows.fresh_sessions(app, proc.pid, step, rng, seconds, photo_bytes=one, first=done)
            done += got["sessions"]
            report["steps"].append({"sessions": done, "errors": got["errors"], "rss_mb": got["rss_after_mb"],
                                    "growth_mb": got["growth_mb"], "peak_mb": got["peak_mb"],
                                    "rss_with_workers_mb": round(_rss_tree_mb(proc.pid))})
            if probe:
                report["steps"][-1]["anatomy"] = memory_probe.request(work / "probe", str(done), probe == "trim")
            if got["sessions"] < step:  # out of time: the rest would not be comparable
                break
        steps = report["steps"]
        if steps:
            report["first_step_growth_mb"] = steps[0]["rss_mb"] - report["warm_rss_mb"]
            report["growth_after_first_step_mb"] = steps[-1]["rss_mb"] - steps[0]["rss_mb"]
        if idle > 0:
            time.sleep(idle)
            report["idle_rss_mb"] = round(rows.rss_mb(proc.pid))
    finally:
        report["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
        report["wall_s"] = round(time.monotonic() - t0)
        stop(proc)
        log.close()
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--served", action="store_true", help="the served app's memory as fresh sessions arrive")
    ap.add_argument("--sessions", type=int, default=1500)
    ap.add_argument("--step", type=int, default=300)
    ap.add_argument("--step-seconds", type=float, default=150.0, help="longest time for one step's sessions")
    ap.add_argument("--port", type=int, default=7321)
    ap.add_argument("--photo", choices=("step", "one"), default="step",
                    help="a new photo for each step's sessions (the per-image caches fill), or one for the run")
    ap.add_argument("--probe", action="store_true", help="what the app's memory is made of, after each step")
    ap.add_argument("--probe-trim", action="store_true", help="--probe, and the memory after malloc_trim(0)")
    ap.add_argument("--idle-seconds", type=float, default=0.0, help="then the memory after this long idle")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="for the app (repeatable)")
    args = ap.parse_args(argv)
    if not args.served:
        per_session_report()
        return 0
    probe = "trim" if args.probe_trim else "measure" if args.probe else None
    report = served(args.sessions, args.step, args.port, args.env, args.step_seconds, args.photo, probe,
                    args.idle_seconds)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
