"""The hostile clients of ``bench/load.py --hostile``, run in their own process.

Usage (started by load.py, one process per kind; every request goes to the loopback URL given)::

    python bench/hostile.py URL --seconds 30 --flood-threads 72 [--kind flood|fresh|unavailable]

* **flood**: ``--flood-threads`` threads sharing one client (one address, one session)
  resubmitting uncached sweeps (a new seed every call) as fast as answers come;
* **fresh sessions**: one client opening a new session for every request (a cheap
  ``patch_grid`` call through the raw queue API, so the session id is new each time);
* **unavailable**: one client asking for ``mae-large`` (not on disk; the server is offline).

Each kind has its own ``X-Forwarded-For`` address (the server trusts one proxy hop).
Prints one JSON line: requests served and refused per kind, and the unavailable
model's answer times.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHOTO = ROOT / "assets" / "examples" / "chelsea.jpg"
FLOOD_ADDRESS, FRESH_ADDRESS, UNAVAILABLE_ADDRESS = "10.66.0.1", "10.77.0.1", "10.88.0.1"


def fresh_session_call(http, url: str, fn_index: int, data: list, address: str) -> bool:  # noqa: ANN001
    """One queued call from a brand-new session (raw queue API); True when it completed."""
    session = uuid.uuid4().hex
    headers = {"X-Forwarded-For": address}
    r = http.post(f"{url}gradio_api/queue/join", headers=headers,
                  json={"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None,
                        "trigger_id": None})
    if r.status_code != 200:
        return False
    with http.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": session},
                     headers=headers, timeout=120) as resp:
        for line in resp.iter_lines():
            if line.startswith("data:"):
                msg = json.loads(line[5:])
                if msg.get("msg") == "process_completed":
                    return bool(msg.get("success"))
    return False


def upload(http, url: str, address: str) -> dict:  # noqa: ANN001
    """Upload the photo once; the FileData the queue API takes."""
    with PHOTO.open("rb") as fh:
        r = http.post(f"{url}gradio_api/upload", files={"files": (PHOTO.name, fh, "image/jpeg")},
                      headers={"X-Forwarded-For": address})
    r.raise_for_status()
    return {"path": r.json()[0], "orig_name": PHOTO.name, "meta": {"_type": "gradio.FileData"}}


def fn_index(http, url: str, api_name: str) -> int:  # noqa: ANN001
    """The function index of a named endpoint, from the page configuration."""
    config = http.get(f"{url}config").json()
    for dep in config["dependencies"]:
        if dep.get("api_name") == api_name:
            return int(dep["id"])
    raise SystemExit(f"no endpoint named {api_name}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--flood-threads", type=int, default=72)
    ap.add_argument("--kind", choices=("flood", "fresh", "unavailable", "all"), default="all",
                    help="run one kind of client (load.py runs each in its own process)")
    args = ap.parse_args(argv)
    import httpx
    from gradio_client import Client, handle_file

    url = args.url if args.url.endswith("/") else args.url + "/"
    deadline = time.monotonic() + args.seconds
    counts = {k: {"served": 0, "refused": 0} for k in ("flood", "fresh", "unavailable", "connect")}
    unavailable_s: list[float] = []
    reasons: list[str] = []
    lock = threading.Lock()

    def count(kind: str, ok: bool) -> None:
        with lock:
            counts[kind]["served" if ok else "refused"] += 1

    def connect(address: str) -> Client | None:
        """A client, retried until the deadline (the server may refuse page configurations for a while)."""
        while time.monotonic() < deadline:
            try:
                return Client(url, verbose=False, headers={"X-Forwarded-For": address})
            except Exception as exc:  # noqa: BLE001 - refused: try again
                count("connect", False)
                with lock:
                    if len(reasons) < 3:
                        reasons.append(f"{type(exc).__name__}: {exc}"[:160])
        return None

    shared: list[Client | None] = []
    shared_lock = threading.Lock()

    def flood(k: int) -> None:
        with shared_lock:  # one client (one session) for every thread, as a script would do
            if not shared:
                shared.append(connect(FLOOD_ADDRESS))
        client = shared[0]
        photo = handle_file(str(PHOTO))
        rng = random.Random(k)
        while client is not None and time.monotonic() < deadline:
            try:
                client.predict(photo, "mae-tiny", rng.randrange(10**9), "random", api_name="/sweep")
                count("flood", True)
            except Exception:  # noqa: BLE001 - refusals are the point
                count("flood", False)

    def fresh() -> None:
        with httpx.Client(timeout=60) as http:
            idx = fn_index(http, url, "patch_grid")
            image = upload(http, url, FRESH_ADDRESS)
            while time.monotonic() < deadline:
                count("fresh", fresh_session_call(http, url, idx, [image, 16, 224], FRESH_ADDRESS))

    def unavailable() -> None:
        client = connect(UNAVAILABLE_ADDRESS)
        photo = handle_file(str(PHOTO))
        while client is not None and time.monotonic() < deadline:
            t0 = time.perf_counter()
            try:
                client.predict(photo, "mae-large", 0.75, 0, "random", api_name="/reconstruct")
                count("unavailable", True)
            except Exception:  # noqa: BLE001 - the expected answer: a message
                count("unavailable", False)
                with lock:
                    unavailable_s.append(time.perf_counter() - t0)

    threads = []
    if args.kind in ("flood", "all"):
        threads += [threading.Thread(target=flood, args=(k,), daemon=True) for k in range(args.flood_threads)]
    if args.kind in ("fresh", "all"):
        threads.append(threading.Thread(target=fresh, daemon=True))
    if args.kind in ("unavailable", "all"):
        threads.append(threading.Thread(target=unavailable, daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=args.seconds + 180)
    times = sorted(unavailable_s)
    print(json.dumps({"counts": counts, "connect_refusals": reasons,
                      "unavailable_p50_ms": round(statistics.median(times) * 1000) if times else None,
                      "unavailable_max_ms": round(times[-1] * 1000) if times else None}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tools.appserver import client_temp_folder  # gradio_client's empty download folders go with it

    with client_temp_folder():
        sys.exit(main())
