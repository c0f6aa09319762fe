"""Load tests of the running app: well-behaved users, and the same users beside hostile clients.

Usage::

    python bench/load.py --users 8 --seconds 60          # well-behaved users only
    python bench/load.py --hostile --users 8 --seconds 30 --sessions 1000
    python bench/load.py --rows [--app-root CHECKOUT]     # issue 32's rows, one by one (bench/rows.py)

Starts ``app.py`` on a free loopback port (traffic goes to 127.0.0.1 only, bounded in
count and time), then runs ``--users`` threads, each a ``gradio_client`` session with its
own client address (``X-Forwarded-For``; the server trusts one proxy hop, as on a
Space). Each user cycles through the ``reconstruct``, ``rollout``, ``patch_grid`` and
``attention_query`` endpoints with varying ratios and seeds, until ``--seconds`` have
passed or ``--max-requests`` were made.

``--hostile`` runs that twice: alone, then beside ``bench/hostile.py`` in its own
process (one client flooding uncached sweeps with ``--flood-threads`` threads, one
opening a fresh session per request, one asking for an unavailable model; at the
lowest CPU priority, standing in for clients on other machines). Then it
opens ``--sessions`` fresh sessions, one ``reconstruct`` each, sampling the server's
resident memory, and finally waits for the file cleaner (``VITVIZ_CACHE_SECONDS=60``)
and counts the files left in the server's temp folder outside Gradio's cache, and in
Gradio's cache. Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from common import percentile

ROOT = Path(__file__).resolve().parents[1]
PHOTOS = sorted((ROOT / "assets" / "examples").glob("*.jpg"))


def _rss_mb(pid: int, field: str = "VmRSS:") -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _call(client, k: int, i: int, photo, phase: int) -> None:  # noqa: ANN001
    """One request of well-behaved user ``k``: reconstruct, rollout or patch grid.

    ``phase`` changes the seeds and settings, so a second run computes as much as the
    first (nothing it asks was cached by the first).
    """
    ratio = round(0.05 * ((k + 3 * i) % 20), 2)
    kind = i % 4
    if kind in (0, 2):
        client.predict(photo, "mae-tiny", ratio, k % 4 + 4 * phase, "random", api_name="/reconstruct")
    elif kind == 1:
        client.predict(photo, "mae-tiny", "encoder", 0.0, 0, "mean", 0.1 * phase, api_name="/rollout")
    else:
        client.predict(photo, 16, 224 + 16 * phase, api_name="/patch_grid")


def run_users(url: str, users: int, seconds: float, max_requests: int, on_ready=None,  # noqa: ANN001
              phase: int = 0) -> dict:
    """Drive ``users`` well-behaved clients; latencies and errors.

    The users open their pages first (a client each); then ``on_ready()`` runs (the
    hostile clients start: an attack on visitors already there), then the users work for
    ``seconds``.
    """
    from gradio_client import Client, handle_file

    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    ready = threading.Barrier(users + 1)
    go = threading.Event()
    deadline = [0.0]

    def user(k: int) -> None:
        client = None
        for _ in range(5):
            try:
                client = Client(url, verbose=False, headers={"X-Forwarded-For": f"10.1.0.{k + 1}"})
                break
            except Exception as exc:  # noqa: BLE001 - a well-behaved user that cannot connect is an error
                with lock:
                    errors.append(f"connect: {type(exc).__name__}: {exc}"[:200])
                time.sleep(1.0)
        photo = handle_file(str(PHOTOS[k % len(PHOTOS)]))
        ready.wait()
        go.wait()
        for i in range(max_requests if client is not None else 0):
            if time.monotonic() > deadline[0]:
                return
            t0 = time.perf_counter()
            try:
                _call(client, k, i, photo, phase)
                with lock:
                    latencies.append(time.perf_counter() - t0)
            except Exception as exc:  # noqa: BLE001 - counted and reported
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])

    threads = [threading.Thread(target=user, args=(k,), daemon=True) for k in range(users)]
    for t in threads:
        t.start()
    ready.wait()
    if on_ready is not None:
        on_ready()
    t_start = time.monotonic()
    deadline[0] = t_start + seconds
    go.set()
    for t in threads:
        t.join(timeout=seconds + 120)
    wall = time.monotonic() - t_start
    lat = sorted(latencies)
    return {"users": users, "wall": wall, "served": len(lat), "errors": errors,
            "p50": statistics.median(lat) * 1000 if lat else float("nan"),
            "p95": percentile(lat, 0.95) * 1000 if lat else float("nan")}


def _row(label: str, r: dict, peak: float) -> str:
    return (f"| {label} | {r['users']} | {r['wall']:.0f} | {r['served']} | {len(r['errors'])} | "
            f"{r['served'] / r['wall']:.1f} | {r['p50']:.0f} | {r['p95']:.0f} | {peak:.0f} |")


def fresh_sessions(url: str, n: int, pid: int, threads: int = 4) -> dict:
    """``n`` reconstructs, each from a brand-new session; the server's RSS before, at its peak, after."""
    import httpx

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from hostile import fn_index, fresh_session_call, upload

    start = _rss_mb(pid)
    peak = [start]
    done = [0, 0]
    lock = threading.Lock()
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _rss_mb(pid))
            time.sleep(0.2)

    def worker(k: int, count: int) -> None:
        address = f"10.2.0.{k + 1}"
        with httpx.Client(timeout=120) as http:
            idx = fn_index(http, url, "reconstruct")
            image = upload(http, url, address)
            for i in range(count):
                ok = fresh_session_call(http, url, idx, [image, "mae-tiny", 0.75, i % 50, "random"], address)
                with lock:
                    done[0 if ok else 1] += 1

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.monotonic()
    per = [n // threads + (1 if k < n % threads else 0) for k in range(threads)]
    ws = [threading.Thread(target=worker, args=(k, c), daemon=True) for k, c in enumerate(per)]
    for w in ws:
        w.start()
    for w in ws:
        w.join(timeout=3600)
    time.sleep(2)
    stop.set()
    sampler.join()
    return {"sessions": n, "ok": done[0], "failed": done[1], "seconds": time.monotonic() - t0, "start": start,
            "peak": max(peak[0], _rss_mb(pid)), "end": _rss_mb(pid)}


def count_files(folder: Path, exclude: Path | None = None) -> int:
    """Files under ``folder`` (not under ``exclude``)."""
    n = 0
    for p in folder.rglob("*"):
        if p.is_file() and (exclude is None or exclude not in p.parents):
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--rows" in argv:  # issue 32's hostile rows: bench/rows.py
        import rows

        return rows.main([a for a in argv if a != "--rows"])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--max-requests", type=int, default=200, help="per user and run")
    ap.add_argument("--hostile", action="store_true", help="also run beside hostile clients, then sessions and files")
    ap.add_argument("--flood-threads", type=int, default=72)
    ap.add_argument("--sessions", type=int, default=1000, help="fresh sessions of the memory run (--hostile)")
    ap.add_argument("--cleanup-wait", type=float, default=130.0, help="seconds to wait for the file cleaner")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tools.appserver import running_app

    work = Path(tempfile.mkdtemp(prefix="vitviz-load-"))
    server_tmp, gradio_cache = work / "tmp", work / "gradio"
    server_tmp.mkdir()
    env = dict(VITVIZ_TRUSTED_PROXIES="1", HF_HUB_OFFLINE="1", VITVIZ_CACHE_SECONDS="60",
               TMPDIR=str(server_tmp), GRADIO_TEMP_DIR=str(gradio_cache))
    t_run = time.monotonic()
    with running_app(log=work / "app.log", **env) as (url, proc):
        base = run_users(url, args.users, args.seconds, args.max_requests)
        peak = _rss_mb(proc.pid, "VmHWM:")
        print("| run | users | seconds | requests served | errors | req/s | p50 ms | p95 ms | server peak RSS MB |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        print(_row("well-behaved users alone", base, peak), flush=True)
        if not args.hostile:
            for e in base["errors"][:5]:
                print("error:", e)
            return 0 if not base["errors"] else 1
        # The hostile clients run at the lowest CPU priority: on this shared 2-core machine their own
        # client work (72 threads) would otherwise compete with the server for the cores, which a remote
        # attacker's would not.
        hostile: list[subprocess.Popen] = []

        def start_hostile() -> None:
            hostile.extend(subprocess.Popen(["nice", "-n", "19", sys.executable,
                                             str(Path(__file__).with_name("hostile.py")), url, "--seconds",
                                             str(args.seconds + 3), "--flood-threads", str(args.flood_threads),
                                             "--kind", kind], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                            text=True)
                           for kind in ("flood", "fresh", "unavailable"))
            time.sleep(3)  # let the flood fill what it can

        mixed = run_users(url, args.users, args.seconds, args.max_requests, on_ready=start_hostile, phase=1)
        reports = [json.loads(p.communicate(timeout=args.seconds + 300)[0].strip().splitlines()[-1]) for p in hostile]
        peak = _rss_mb(proc.pid, "VmHWM:")
        print(_row(f"same users beside the hostile clients ({args.flood_threads} flood threads)", mixed, peak))
        print(f"\np50 ratio {mixed['p50'] / base['p50']:.2f}x, p95 ratio {mixed['p95'] / base['p95']:.2f}x "
              f"(hostile / alone)")
        print("\n| hostile client | served | refused or failed |\n| --- | ---: | ---: |")
        for kind, h in zip(("flood", "fresh", "unavailable"), reports):
            c = h["counts"][kind]
            refused_connects = h["counts"]["connect"]["refused"]
            print(f"| {kind} | {c['served']} | {c['refused']} (+{refused_connects} refused connections) |")
        h = reports[2]
        print(f"\nunavailable model (mae-large): answer p50 {h['unavailable_p50_ms']} ms, "
              f"max {h['unavailable_max_ms']} ms (round trip through gradio_client, queue wait included)")
        for e in (base["errors"] + mixed["errors"])[:5]:
            print("error:", e)
        s = fresh_sessions(url, args.sessions, proc.pid)
        print("\n| fresh sessions | served | failed | seconds | RSS start MB | RSS peak MB | RSS end MB | end - start MB |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        print(f"| {s['sessions']} | {s['ok']} | {s['failed']} | {s['seconds']:.0f} | {s['start']:.0f} | "
              f"{s['peak']:.0f} | {s['end']:.0f} | {s['end'] - s['start']:.0f} |", flush=True)
        time.sleep(args.cleanup_wait)
        outside = count_files(server_tmp, gradio_cache)
        inside = count_files(gradio_cache) if gradio_cache.exists() else 0
        print(f"\nfiles after the cleaner ({args.cleanup_wait:.0f} s, VITVIZ_CACHE_SECONDS=60): "
              f"{outside} in the server's temp folder outside Gradio's cache, {inside} in Gradio's cache")
    shutil.rmtree(work, ignore_errors=True)
    print(f"\nrun time {time.monotonic() - t_run:.0f} s")
    failed = base["errors"] or mixed["errors"] or outside
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tools.appserver import client_temp_folder  # gradio_client's empty download folders go with it

    with client_temp_folder():
        raise SystemExit(main())
