"""Load test: N concurrent users of the running app, for a bounded time.

Usage::

    python bench/load.py --users 8 --seconds 60

Starts ``app.py`` on a free loopback port (or uses ``--url``), then runs ``--users``
threads, each with its own ``gradio_client`` session: it uploads an example photo
and moves the masking-ratio slider through a few stops (calls of the
``reconstruct`` endpoint with varying ratios and seeds), until ``--seconds`` have
passed or ``--max-requests`` per user were made. Prints requests served, errors,
p50/p95 latency and the server's peak resident memory (VmHWM), then stops the
server. Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from common import percentile

ROOT = Path(__file__).resolve().parents[1]


def _peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--max-requests", type=int, default=50, help="per user")
    ap.add_argument("--url", default=None, help="use a running app instead of starting one")
    args = ap.parse_args(argv)
    if args.url is not None:
        return run_load(args, args.url, None)
    sys.path.insert(0, str(ROOT))
    from tools.appserver import running_app

    with running_app() as (url, proc):
        return run_load(args, url, proc)


def run_load(args: argparse.Namespace, url: str, proc: subprocess.Popen | None) -> int:
    """Drive ``args.users`` clients against ``url``; print the table; 0 if no errors."""
    from gradio_client import Client, handle_file

    photos = sorted((ROOT / "assets" / "examples").glob("*.jpg"))
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + args.seconds

    def user(k: int) -> None:
        client = Client(url, verbose=False)
        photo = handle_file(str(photos[k % len(photos)]))
        for i in range(args.max_requests):
            if time.monotonic() > deadline:
                return
            ratio = round(0.05 * ((k + 3 * i) % 20), 2)
            t0 = time.perf_counter()
            try:
                client.predict(photo, "mae-tiny", ratio, k % 4, "random", api_name="/reconstruct")
                with lock:
                    latencies.append(time.perf_counter() - t0)
            except Exception as exc:  # noqa: BLE001 - counted and reported
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])

    t_start = time.monotonic()
    threads = [threading.Thread(target=user, args=(k,), daemon=True) for k in range(args.users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=args.seconds + 120)
    wall = time.monotonic() - t_start
    peak = _peak_rss_mb(proc.pid) if proc is not None else float("nan")
    lat = sorted(latencies)
    p50 = statistics.median(lat) * 1000 if lat else float("nan")
    p95 = percentile(lat, 0.95) * 1000 if lat else float("nan")
    print(f"| users | seconds | requests served | errors | req/s | p50 ms | p95 ms | server peak RSS MB |")
    print(f"| --- | --- | --- | --- | --- | --- | --- | --- |")
    print(f"| {args.users} | {wall:.0f} | {len(lat)} | {len(errors)} | {len(lat) / wall:.1f} | {p50:.0f} | {p95:.0f} "
          f"| {peak:.0f} |")
    for e in errors[:5]:
        print("error:", e)
    return 0 if not errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
