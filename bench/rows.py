"""Issue 32's hostile rows against a public-mode app: one well-behaved visitor's latency beside each attack
(rows 1-3, 8; issue 47's 11: eight flooding addresses, 12: a dozen live joins from one address), the
server's memory and disk after the others (4-7), clean errors (9), sliders (10), then 300 fresh sessions
and the files left outside Gradio's cache. Run by ``python bench/load.py --rows``. A public-mode app runs its
model calls in worker processes by default; ``--env VITVIZ_WORKERS=off --then-env VITVIZ_WORKERS=processes``
measures it in-process, then again right after with the workers.

Bounded: every call has a deadline (an unanswered call counts as an error, ``timeout``), every attack
stops its threads and their connections after ``--seconds``, the fresh sessions stop at
``--sessions-seconds``; one app's run takes about 6-8 minutes. ``--before CHECKOUT`` then measures that
checkout's app the same way, right after (back to back, one app at a time, with the load average at
each start and end), and prints both reports.

The app runs with ``VITVIZ_PUBLIC=1``, offline, trusting one proxy hop: each client has its own
``X-Forwarded-For`` address, as behind a Space's proxy. The visitor uploads a photo the app never saw
and calls ``/reconstruct`` (mae-tiny, 75%), one call at a time. Every attack is bounded in time.
"""

from __future__ import annotations

import io
import json
import random
import statistics
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
PHOTO = ROOT / "assets" / "examples" / "chelsea.jpg"
VISITOR = "10.1.0.1"


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far (``/proc/<pid>/stat``)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def new_photo(rng: random.Random) -> bytes:
    """A JPEG the app never saw: the example photo with a little noise."""
    arr = np.asarray(Image.open(PHOTO).convert("RGB"), dtype=np.int16)
    noise = np.random.default_rng(rng.randrange(2**32)).integers(-3, 4, arr.shape)
    out = io.BytesIO()
    Image.fromarray(np.clip(arr + noise, 0, 255).astype(np.uint8)).save(out, "JPEG", quality=90)
    return out.getvalue()


class App:
    """The raw HTTP API of the running app (joins and uploads as the page sends them)."""

    def __init__(self, url: str) -> None:
        import httpx

        self.url = url
        self.http = httpx.Client(timeout=300)
        self.config = self.http.get(url + "config").json()

    def fn(self, pred) -> tuple[int, int]:  # noqa: ANN001
        """(fn_index, input count) of the first event whose api_name passes ``pred``."""
        for dep in self.config["dependencies"]:
            if pred(str(dep.get("api_name") or ""), dep):
                return int(dep["id"]), len(dep.get("inputs", []))
        raise SystemExit("no such event")

    def args(self, fn_index: int, given: list) -> list:
        """``given`` followed by the page's own values of the event's remaining inputs, as the page sends them.

        Gradio refuses a join with fewer values than the event has inputs, so an attack written for an older
        signature would measure a storm of refusals instead of the work it names; this fills the rest from the
        page configuration. More values than inputs go as they are (row 3 sends a trailing one on purpose)."""
        dep = next(d for d in self.config["dependencies"] if int(d["id"]) == fn_index)
        inputs = dep.get("inputs", [])
        props = {c["id"]: c.get("props") or {} for c in self.config["components"]}
        return list(given) + [props.get(i, {}).get("value") for i in inputs[len(given):]]

    def upload(self, data: bytes, address: str, name: str = "photo.jpg", field: str = 'name="files"') -> Any:
        import httpx

        body = (b"--vv\r\nContent-Disposition: form-data; " + field.encode() + b'; filename="' + name.encode()
                + b'"\r\nContent-Type: image/jpeg\r\n\r\n' + data + b"\r\n--vv--\r\n")
        try:
            return self.http.post(self.url + "gradio_api/upload", content=body, headers={
                "X-Forwarded-For": address, "content-type": "multipart/form-data; boundary=vv"})
        except httpx.HTTPError as exc:
            return exc

    def file(self, path: str) -> dict:
        return {"path": path, "orig_name": Path(path).name, "meta": {"_type": "gradio.FileData"}}

    def call(self, fn_index: int, data: list, address: str, session: str | None = None,
             http: Any = None, deadline: float | None = None, stop: threading.Event | None = None,
             phases: dict | None = None) -> tuple[bool, str]:
        """One queued call; (succeeded, error text or status). Given up (``timeout``) at ``deadline``
        (``time.monotonic()``; default: 120 s from now) or when ``stop`` is set, checked at each message
        (Gradio sends a heartbeat every few seconds). ``phases``, if given, receives when the join left and
        when each kind of message came (``time.perf_counter()``)."""
        http = http or self.http
        deadline = deadline if deadline is not None else time.monotonic() + 120
        session = session or uuid.uuid4().hex
        headers = {"X-Forwarded-For": address}
        phases = {} if phases is None else phases
        phases["join"] = time.perf_counter()  # when the join left, the run started, it ended
        try:
            r = http.post(self.url + "gradio_api/queue/join", headers=headers, json={
                "data": data, "fn_index": fn_index, "session_hash": session, "event_data": None, "trigger_id": None})
            if r.status_code != 200:
                return False, f"HTTP {r.status_code}"
            with http.stream("GET", self.url + "gradio_api/queue/data", params={"session_hash": session},
                             headers=headers, timeout=30) as resp:
                for line in resp.iter_lines():
                    if time.monotonic() > deadline or (stop is not None and stop.is_set()):
                        return False, "timeout"
                    if line.startswith("data:"):
                        msg = json.loads(line[5:])
                        phases.setdefault(msg.get("msg"), time.perf_counter())
                        if msg.get("msg") == "process_completed":
                            out = msg.get("output") or {}
                            return bool(msg.get("success")), str(out.get("error"))
        except Exception as exc:  # noqa: BLE001 - a failure is a result here
            return False, type(exc).__name__
        return False, "no answer"


def visitor(app: App, calls: int, rng: random.Random, stop: threading.Event | None = None,
            seconds: float = 120.0) -> dict:
    """The well-behaved visitor: upload a new photo, reconstruct, ``calls`` times or until ``stop`` or
    ``seconds`` have passed; latencies and errors (a call unanswered after ``seconds`` is an error)."""
    import httpx

    idx, _ = app.fn(lambda name, dep: name == "reconstruct")
    times, errors, waits, runs, uploads = [], [], [], [], []
    photos = [new_photo(rng) for _ in range(calls)]
    end = time.monotonic() + seconds
    with httpx.Client(timeout=60) as http:
        for photo in photos:
            if (stop is not None and stop.is_set()) or time.monotonic() > end:
                break
            t0 = time.perf_counter()
            up = app.upload(photo, VISITOR)
            if not hasattr(up, "status_code") or up.status_code != 200:
                errors.append(f"upload {getattr(up, 'status_code', up)}")
                continue
            uploads.append(time.perf_counter() - t0)
            phases: dict = {}  # the attack's threads call too: each call its own
            ok, err = app.call(idx, app.args(idx, [app.file(up.json()[0]), "mae-tiny", 0.75, 0, "random"]), VISITOR, http=http,
                               deadline=end, phases=phases)
            times.append(time.perf_counter() - t0)
            if "process_starts" in phases and "process_completed" in phases:
                waits.append(phases["process_starts"] - phases["join"])
                runs.append(phases["process_completed"] - phases["process_starts"])
            if not ok:
                errors.append(err)
    times.sort()
    med = lambda xs: round(statistics.median(xs), 3) if xs else None  # noqa: E731
    return {"calls": len(times), "errors": len(errors), "first_errors": errors[:3],
            # medians of the parts: the upload, the join to the run's start (queue), the run to its answer
            "upload_p50_s": med(uploads), "queued_p50_s": med(waits), "run_p50_s": med(runs),
            "p50_s": round(statistics.median(times), 3) if times else None,
            "p95_s": round(times[min(len(times) - 1, int(0.95 * len(times)))], 3) if times else None}


def attack(target, seconds: float, threads: int) -> tuple[threading.Event, list[threading.Thread]]:  # noqa: ANN001
    """Run ``target(stop, k)`` in ``threads`` threads until ``seconds`` pass; returns the stop event and the
    threads (each gives up its call when ``stop`` is set)."""
    stop = threading.Event()
    workers = [threading.Thread(target=target, args=(stop, k), daemon=True) for k in range(threads)]
    for w in workers:
        w.start()
    timer = threading.Timer(seconds, stop.set)
    timer.daemon = True
    timer.start()
    return stop, workers


#: The latency rows: name -> attack threads.
ROWS = {"1 features update_all x2": 2, "2 five addresses x16": 40, "3 trailing mae-large, 8 sweeps": 8,
        "8 assets, new query, br": 4, "11 eight addresses together": 48, "12 one address, 12 live joins": 12}


def attackers(app: App, photo: str) -> tuple[dict[str, Any], dict[int, int]]:
    """The attack of each latency row (``target(stop, k)`` for :func:`attack`), and the statuses row 8 got."""
    import httpx

    # the Features tab's update_all: private (no name in the page configuration), found by its components
    ids = {c["props"].get("elem_id"): c["id"] for c in app.config["components"] if isinstance(c.get("props"), dict)}
    features, n_features = app.fn(lambda name, dep: {ids.get("feat-input"), ids.get("feat-model")} <= set(dep["inputs"])
                                  and len(dep.get("outputs", [])) >= 10)
    attn, _ = app.fn(lambda name, dep: name == "attention_query")
    sweep, _ = app.fn(lambda name, dep: name == "sweep")
    outcomes: dict[str, int] = {}  # the attack's own calls: "ok", or each error's text, counted
    lock = threading.Lock()

    def tally(result: tuple[bool, str]) -> None:
        key = "ok" if result[0] else result[1][:80]
        with lock:
            outcomes[key] = outcomes.get(key, 0) + 1

    def row1(stop: threading.Event, k: int, address: str = "10.2.0.1") -> None:
        with httpx.Client(timeout=600) as http:
            while not stop.is_set():
                tally(app.call(features, app.args(features, [app.file(photo), "vit-base:random", 6, False, 7, 7][:n_features]),
                         address, http=http, stop=stop))

    def row2(stop: threading.Event, k: int, address: str | None = None) -> None:
        address = address or f"10.3.0.{k % 5 + 1}"
        if k % 8 < 2:
            row1(stop, k, address)
            return
        with httpx.Client(timeout=600) as http:
            while not stop.is_set():
                tally(app.call(attn, app.args(attn, [app.file(photo), "mae-tiny", "encoder", 0.0, k, 4, "cls", 0, 0]), address,
                         http=http, stop=stop))

    def row3(stop: threading.Event, k: int) -> None:
        with httpx.Client(timeout=600) as http:
            while not stop.is_set():
                tally(app.call(sweep, app.args(sweep, [app.file(photo), "mae-tiny", random.randrange(10**9), "random", "mae-large"]),
                         "10.4.0.1", http=http, stop=stop))

    def row11(stop: threading.Event, k: int) -> None:  # row 2's mix from eight addresses, six threads each
        row2(stop, k, f"10.12.0.{k % 8 + 1}")

    live = next((int(d["id"]) for d in app.config["dependencies"]
                 if any(t[1] == "stream" for t in d.get("targets", []))), None)

    def row12(stop: threading.Event, k: int) -> None:  # a dozen live-stream joins at once from one address
        with httpx.Client(timeout=600) as http:
            while not stop.is_set() and live is not None:
                tally(app.call(live, app.args(live, [app.file(photo), "mae-tiny", 0.75, 0, "random", False, False, None, None, ""]),
                         "10.13.0.1", http=http, stop=stop))

    asset = next((p for p in _assets(app) if "Plotly" in p), None) or next(iter(_assets(app)), None)
    statuses: dict[int, int] = {}

    def row8(stop: threading.Event, k: int) -> None:
        # the answer is read as it comes, not decompressed: a hostile client does not decode what it asked
        # for, and decoding 4.6 MB of Brotli per request here took this machine's CPU, not the server's
        with httpx.Client(timeout=10) as http:
            while not stop.is_set() and asset:
                try:
                    with http.stream("GET", app.url + asset.lstrip("/") + f"?v={uuid.uuid4().hex}",
                                     headers={"Accept-Encoding": "br", "X-Forwarded-For": "10.8.0.1"}) as r:
                        for _ in r.iter_raw():
                            pass
                    statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                except httpx.HTTPError:
                    pass

    return dict(zip(ROWS, (row1, row2, row3, row8, row11, row12))), statuses, outcomes


def run_attack(url: str, row: str, seconds: float, photo: str) -> int:
    """The attacker's process (``--attack``): run ``row``'s attack on ``url`` until ``seconds`` pass or SIGTERM,
    then print one JSON line (threads left, row 8's statuses, the attack's own calls by outcome: a row whose
    calls fail at once measures a storm of refusals, not the work it names)."""
    import signal

    ended = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: ended.set())
    app = App(url)
    targets, statuses, outcomes = attackers(app, photo)
    stop, workers = attack(targets[row], seconds, ROWS[row])
    print("started", flush=True)  # the visitor starts 2 s after this line
    while not stop.wait(0.2) and not ended.is_set():
        pass
    stop.set()
    for w in workers:
        w.join(35)
    print(json.dumps({"attack_threads_left": sum(w.is_alive() for w in workers),
                      "attack_answers": {str(k): v for k, v in sorted(statuses.items())},
                      "attack_calls": dict(sorted(outcomes.items(), key=lambda kv: -kv[1])[:4]),
                      "attack_calls_total": sum(outcomes.values())}), flush=True)
    return 0


def latency_rows(app: App, calls: int, seconds: float, rng: random.Random, only: set[str] | None = None,
                 pid: int | None = None) -> dict:
    """Rows 1, 2, 3, 8, 11 and 12 (or those of ``only``: "1", "2", "3", "8", "11", "12"): the visitor beside
    each attack; with ``pid`` (the app's main process), the CPU seconds that process used over each attack
    (``main_cpu_s``: the attack's calls and the visitor's) and per call of the attack (``main_cpu_ms_per_call``). Row 11 is row 2's mix from eight addresses at once (six threads each); row 12 one address
    joining the live stream from twelve threads at once (one stream runs, the others are refused).

    Each attack runs in its own process at the lowest CPU priority (``nice 19``), as ``bench/load.py
    --hostile``'s clients do: it stands in for clients on other machines, so its threads neither take this
    shared machine's cores from the server nor share the visitor's interpreter lock here.
    """
    import os
    import signal
    import subprocess
    import sys

    out = {}
    for name in ROWS:
        if only is not None and name.split()[0] not in only:
            continue
        # each attack its own upload: one shared by every row outlived VITVIZ_CACHE_SECONDS (60 s here), and the
        # later rows' calls failed at once on its deleted file ("no readable file")
        photo = app.upload(new_photo(rng), "10.9.0.1").json()[0]
        child = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--attack", name, "--url", app.url,
                                  "--seconds", str(seconds + 3), "--photo", photo],  # until the visitor ends
                                 stdout=subprocess.PIPE, text=True, preexec_fn=lambda: os.nice(19))
        started = child.stdout.readline().strip() == "started"  # its threads run (or it failed: no line)
        cpu0 = cpu_s(pid) if pid is not None else None
        time.sleep(2.0)  # the attack is under way
        out[name] = visitor(app, calls, rng, None, seconds) if started else {"error": "the attack did not start"}
        child.send_signal(signal.SIGTERM)
        try:
            lines = child.communicate(timeout=60)[0].strip().splitlines()
            out[name].update(json.loads(lines[-1]) if lines else {"attack": "no report"})
        except subprocess.TimeoutExpired:
            child.kill()
            out[name]["attack"] = "killed after 60 s"
        if cpu0 is not None:
            used = cpu_s(pid) - cpu0
            out[name]["main_cpu_s"] = round(used, 2)
            total = out[name].get("attack_calls_total")
            out[name]["main_cpu_ms_per_call"] = round(1000 * used / total, 1) if total else None
        if not name.startswith("8"):
            out[name].pop("attack_answers", None)
        time.sleep(3.0)
    return out


def _assets(app: App) -> list[str]:
    import re

    page = app.http.get(app.url).text
    return sorted(set(re.findall(r'(/assets/[A-Za-z0-9_.-]+\.js)', page)))


def memory_rows(app: App, pid: int, cache: Path, rng: random.Random) -> dict:
    """Rows 4-7 (memory and disk) and 9-10 (answers)."""
    import httpx

    out: dict[str, Any] = {}
    reconstruct, _ = app.fn(lambda name, dep: name == "reconstruct")
    before = rss_mb(pid)
    statuses = []
    for _ in range(2):  # row 4: a join with a 200 MB string
        try:
            statuses.append(app.http.post(app.url + "gradio_api/queue/join", content=b'{"data": ["' + b"x" * 200_000_000
                                          + b'"], "fn_index": 0, "session_hash": "big"}',
                                          headers={"X-Forwarded-For": "10.5.0.1",
                                                   "content-type": "application/json"}).status_code)
        except httpx.HTTPError as exc:
            statuses.append(type(exc).__name__)
    out["4 join with 200 MB string x2"] = {"statuses": statuses, "rss_growth_mb": round(rss_mb(pid) - before)}
    # row 5: 40-megapixel palette PNGs to /tokenize, six at once
    png = io.BytesIO()
    Image.new("P", (8000, 5000)).save(png, "PNG")
    tokenize, n_tokenize = app.fn(lambda name, dep: name == "tokenize")  # the image, then any options left empty
    before, t0 = rss_mb(pid), time.perf_counter()
    paths = [app.upload(png.getvalue(), f"10.6.0.{i}", "bomb.png") for i in range(6)]
    answers: list = []
    workers = [threading.Thread(target=lambda p=p: answers.append(app.call(tokenize, [app.file(p.json()[0])]
                                                                           + [None] * (n_tokenize - 1),
                                                                           "10.6.0.9")))
               for p in paths if getattr(p, "status_code", 0) == 200]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    out["5 palette PNG 40 MP x6 to /tokenize"] = {
        "rss_growth_mb": round(rss_mb(pid) - before), "seconds": round(time.perf_counter() - t0, 2),
        "answers": sorted({a[1][:70] for a in answers})}
    # row 6: 50 non-image files in one upload, the second part written name=files (unquoted)
    junk = b"\0" * 19_000_000
    parts = b"".join(b"--vv\r\nContent-Disposition: form-data; " + (b'name="files"' if i == 0 else b"name=files")
                     + f'; filename="f{i}.bin"\r\n\r\n'.encode() + junk + b"\r\n" for i in range(50))
    used = _disk(cache)
    try:
        r = app.http.post(app.url + "gradio_api/upload", content=parts + b"--vv--\r\n", headers={
            "X-Forwarded-For": "10.7.0.1", "content-type": "multipart/form-data; boundary=vv"})
        status = r.status_code
    except httpx.HTTPError as exc:
        status = type(exc).__name__
    out["6 50 x 19 MB, name=files unquoted"] = {"status": status, "disk_growth_mb": round((_disk(cache) - used) / 2**20)}
    # row 7: single 19 MB JPEG-looking uploads, as fast as they are answered, for 10 s
    used, t0, codes = _disk(cache), time.perf_counter(), []
    big = b"\xff\xd8\xff" + b"\0" * 19_000_000
    while time.perf_counter() - t0 < 10 and len(codes) < 200:
        codes.append(getattr(app.upload(big, "10.7.0.2", "big.jpg"), "status_code", 0))
    out["7 19 MB uploads for 10 s"] = {"accepted": codes.count(200), "refused": len(codes) - codes.count(200),
                                       "disk_mb_per_s": round((_disk(cache) - used) / 2**20 / 10, 1)}
    # row 9: bad payloads
    answers = [app.call(reconstruct, [{"path": "/etc/passwd", "meta": {"_type": "gradio.FileData"}}, "mae-tiny", 0.75,
                                      0, "random"], "10.9.0.2"),
               app.call(reconstruct, ["just a string", "mae-tiny", 0.75, 0, "random"], "10.9.0.2"),
               app.call(reconstruct, [None, "mae-tiny"], "10.9.0.2")]
    example = next((d for d in app.config["dependencies"] if "load_example" in str(d.get("api_name"))), None)
    try:
        run = (app.http.post(app.url + f"gradio_api/run/{example['api_name']}", json={"data": [[999, None]]},
                             timeout=30).status_code if example else None)
    except httpx.HTTPError as exc:
        run = type(exc).__name__
    out["9 bad payloads"] = {"answers": [a[1][:80] for a in answers], "load_example 999 status": run}
    return out


def _disk(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def fresh_sessions(app: App, pid: int, n: int, rng: random.Random, seconds: float = 180.0, threads: int = 3,
                   photo_bytes: bytes | None = None, first: int = 0) -> dict:
    """``n`` fresh sessions (each its own address: the ``first``-th to the ``first + n - 1``-th of
    :func:`fresh_address`), one reconstruct each, ``threads`` at a time, stopped after ``seconds``, all on one
    photo uploaded first (``photo_bytes``, else a new one); the server's RSS before, at its peak and after."""
    import httpx

    idx, _ = app.fn(lambda name, dep: name == "reconstruct")
    photo = app.upload(photo_bytes if photo_bytes is not None else new_photo(rng), "10.10.0.1").json()[0]
    before, peak = rss_mb(pid), [0.0]
    done, errors = [0], [0]
    end = time.monotonic() + seconds
    lock = threading.Lock()

    def worker(k: int) -> None:
        with httpx.Client(timeout=60) as http:
            for i in range(k, n, threads):
                if time.monotonic() > end:
                    return
                ok, _ = app.call(idx, [app.file(photo), "mae-tiny", 0.75, i % 8, "random"],
                                 fresh_address(first + i), http=http, deadline=end)
                with lock:
                    done[0] += 1
                    errors[0] += not ok
                    peak[0] = max(peak[0], rss_mb(pid))

    workers = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(seconds + 60)
    return {"sessions": done[0], "of": n, "errors": errors[0], "rss_before_mb": round(before),
            "rss_after_mb": round(rss_mb(pid)), "growth_mb": round(rss_mb(pid) - before), "peak_mb": round(peak[0])}


def fresh_address(k: int) -> str:
    """The ``k``-th address of the fresh sessions (``10.11.0.0`` on; 62,500 per second octet)."""
    return f"10.{11 + k // 62500}.{k // 250 % 250}.{k % 250}"


def run_app(root: Path, args: Any) -> dict[str, Any]:
    """Start ``app.py`` of ``root`` in public mode, run every row against it, stop it; the report."""
    import os
    import subprocess
    import sys
    import tempfile

    import httpx

    rng = random.Random(0)
    work = Path(tempfile.mkdtemp(prefix="vitviz-rows-"))
    server_tmp, cache = work / "tmp", work / "gradio"
    server_tmp.mkdir()
    env = dict(os.environ, VITVIZ_PUBLIC="1", VITVIZ_TRUSTED_PROXIES="1", HF_HUB_OFFLINE="1",
               VITVIZ_CACHE_SECONDS="60", TMPDIR=str(server_tmp), GRADIO_TEMP_DIR=str(cache),
               GRADIO_SERVER_PORT=str(args.port), GRADIO_SERVER_NAME="127.0.0.1", GRADIO_ANALYTICS_ENABLED="False")
    env.pop("PYTHONPATH", None)
    env.update(dict(kv.split("=", 1) for kv in args.env))
    log = (work / "app.log").open("w")
    t_start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{args.port}/"
    report: dict[str, Any] = {"app_root": str(root), "loadavg_start": Path("/proc/loadavg").read_text().split()[:3]}
    try:
        while time.monotonic() - t_start < args.start_seconds and proc.poll() is None:
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        else:
            report["error"] = "the app did not start in time" if proc.poll() is None else "the app exited"
            return report
        report["start_s"] = round(time.monotonic() - t_start, 1)
        from common import warmed

        report["warm_up_wait_s"] = round(warmed(work / "app.log", timeout=args.start_seconds), 1)
        app = App(url)
        report["page_config_kb"] = round(len(app.http.get(url + "config").content) / 1000)
        visitor(app, 3, rng)  # warm: the model in memory
        report["alone"] = visitor(app, args.calls * 2, rng)
        report["latency_rows"] = latency_rows(app, args.calls, args.seconds, rng, args.only, proc.pid)
        if args.only is not None:  # a diagnostic of some latency rows: no memory rows, no fresh sessions
            return report
        report["memory_rows"] = memory_rows(app, proc.pid, cache, rng)
        report["fresh_sessions"] = fresh_sessions(app, proc.pid, args.sessions, rng, args.sessions_seconds)
        time.sleep(args.cleanup_wait)
        report["files_outside_gradio_cache"] = sum(1 for p in server_tmp.rglob("*") if p.is_file())
        report["tracebacks_in_log"] = (work / "app.log").read_text().count("Traceback")
    finally:
        report["wall_s"] = round(time.monotonic() - t_start)
        from common import end_app

        end_app(report, proc, log, work)
    return report


def main(argv: list[str] | None = None) -> int:
    """Measure ``--app-root`` (default: this checkout), then ``--before`` if given; print the reports."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app-root", type=Path, default=ROOT, help="the checkout whose app.py is measured")
    ap.add_argument("--before", type=Path, default=None, help="a second checkout, measured right after")
    ap.add_argument("--calls", type=int, default=8, help="visitor calls per row")
    ap.add_argument("--seconds", type=float, default=15.0, help="longest attack per row")
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--sessions-seconds", type=float, default=150.0, help="longest time for the fresh sessions")
    ap.add_argument("--start-seconds", type=float, default=240.0, help="longest wait for the app to start")
    ap.add_argument("--cleanup-wait", type=float, default=75.0)
    ap.add_argument("--port", type=int, default=7321)
    ap.add_argument("--only", type=lambda v: set(v.split(",")), default=None,
                    help="latency rows to measure, e.g. 2 or 1,3 (then no memory rows and no fresh sessions)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment variable for both apps (repeatable)")
    ap.add_argument("--then-env", action="append", default=[], metavar="NAME=VALUE",
                    help="measure the app again right after (--before's, else the same checkout) with this "
                         "variable too (repeatable), e.g. --then-env VITVIZ_WORKERS=processes")
    ap.add_argument("--attack", choices=list(ROWS), help=argparse.SUPPRESS)  # the attacker's process
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--photo", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.attack:
        return run_attack(args.url, args.attack, args.seconds, args.photo)
    reports = {"after": run_app(args.app_root, args)}
    print(json.dumps(reports["after"], indent=1), flush=True)
    if args.before is not None or args.then_env:
        if args.then_env:
            args.env = [*args.env, *args.then_env]
        reports["before"] = run_app(args.before or args.app_root, args)
        reports["before"]["env"] = args.env
        print(json.dumps(reports["before"], indent=1), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
