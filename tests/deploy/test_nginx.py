"""deploy/: two app replicas behind nginx (deploy/render.py's configuration) with sticky sessions.

Ten visitors go through the proxy: each one's requests reach one replica, and every answer equals a single
replica's. Then one replica stops: new visitors are served by the other, and a visitor of the stopped one
gets a clear error (its uploaded file was on the stopped replica), not a hang.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import pytest

from tools.appserver import ROOT, free_port, running_app, stop

NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)
pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (tests/setup.sh installs Debian's "
                                                       "nginx when run as root: apt-get install -y nginx)")
httpx = pytest.importorskip("httpx")

PHOTO = ROOT / "assets" / "examples" / sorted(p.name for p in (ROOT / "assets" / "examples").glob("*.jpg"))[0]
TIMEOUT = 60.0
COOKIE = "vitviz_replica"


def _digest(client: httpx.Client, value: object) -> object:
    """An answer's value with each image replaced by the SHA-256 of its decoded pixels (file names differ
    between replicas; the pixels must not). The file is fetched through the proxy with the visitor's cookie."""
    import numpy as np
    from PIL import Image

    if isinstance(value, dict) and value.get("url"):
        r = client.get(value["url"])
        r.raise_for_status()
        return hashlib.sha256(np.asarray(Image.open(io.BytesIO(r.content)).convert("RGB")).tobytes()).hexdigest()
    if isinstance(value, list):
        return [_digest(client, v) for v in value]
    return value


def _call(client: httpx.Client, path: str, seed: int, seen: set[str]) -> tuple[str, object]:
    """One reconstruct call through Gradio's HTTP API (``/gradio_api/call``); returns ``(event, data)``:
    ``complete`` with the answer's values, or ``error`` with its message."""
    image = {"path": path, "meta": {"_type": "gradio.FileData"}}
    r = client.post("/gradio_api/call/reconstruct", json={"data": [image, "mae-tiny", 0.75, seed, "random"]})
    seen.add(r.headers.get("x-vitviz-upstream", ""))
    if r.status_code != 200:
        return "error", r.text
    event_id = r.json()["event_id"]
    r = client.get(f"/gradio_api/call/reconstruct/{event_id}")
    seen.add(r.headers.get("x-vitviz-upstream", ""))
    event, data = "", None
    for line in r.text.splitlines():
        if line.startswith("event:"):
            event = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            data = json.loads(line.split(":", 1)[1].strip() or "null")
    if event == "complete":
        return event, _digest(client, data)
    return event or "error", data


class Visitor:
    """A browser-like client: it keeps the proxy's route cookie and notes the replica of every answer."""

    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=url, timeout=TIMEOUT)
        self.replicas: set[str] = set()
        self.upload = ""

    def arrive(self) -> None:
        r = self.client.get("/")
        r.raise_for_status()
        assert COOKIE in r.cookies, "the proxy gives each new browser its route cookie"
        self.replicas.add(r.headers["x-vitviz-upstream"])
        r = self.client.post("/gradio_api/upload", files=[("files", (PHOTO.name, PHOTO.read_bytes(), "image/jpeg"))])
        r.raise_for_status()
        self.replicas.add(r.headers["x-vitviz-upstream"])
        self.upload = r.json()[0]

    def reconstruct(self, seed: int) -> tuple[str, object]:
        return _call(self.client, self.upload, seed, self.replicas)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """Two replicas (own temp folders, as on two machines) and nginx in front; yields
    ``(proxy_url, {address: (replica_url, process)})``."""
    base = tmp_path_factory.mktemp("deploy")
    env = dict(VITVIZ_WARMUP="0", HF_HUB_OFFLINE="1", VITVIZ_THREADS="1")
    with ExitStack() as stack:
        replicas = {}
        for i in range(2):
            (base / f"gradio{i}").mkdir()
            url, proc = stack.enter_context(running_app(log=base / f"replica{i}.log",
                                                        GRADIO_TEMP_DIR=str(base / f"gradio{i}"), **env))
            replicas[url.rstrip("/").removeprefix("http://")] = (url, proc)
        port = free_port()
        # nginx started as root runs its workers as nobody, who must reach the prefix (pytest's is private)
        prefix = Path(tempfile.mkdtemp(prefix="vitviz-nginx-", dir="/tmp"))
        prefix.chmod(0o755)
        stack.callback(shutil.rmtree, prefix, True)
        conf = subprocess.run(["python", str(ROOT / "deploy" / "render.py"), "--replicas", *replicas,
                               "--listen", f"127.0.0.1:{port}", "--standalone", str(prefix), "--expose-upstream"],
                              check=True, capture_output=True, text=True).stdout
        (prefix / "nginx.conf").write_text(conf)
        nginx = subprocess.Popen([NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        stack.callback(stop, nginx)
        proxy = f"http://127.0.0.1:{port}"
        deadline = time.time() + 30
        while True:
            try:
                if httpx.get(proxy + "/", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert nginx.poll() is None, f"nginx exited: {nginx.stderr.read().decode()}"
            assert time.time() < deadline, "nginx did not answer in 30 s"
            time.sleep(0.2)
        yield proxy, replicas


def test_replicas_behind_nginx(cluster):
    proxy, replicas = cluster
    # what one replica alone answers, called directly
    first_url = next(iter(replicas.values()))[0]
    alone = Visitor(first_url)
    r = alone.client.post("/gradio_api/upload", files=[("files", (PHOTO.name, PHOTO.read_bytes(), "image/jpeg"))])
    alone.upload = r.json()[0]
    expected = {seed: alone.reconstruct(seed) for seed in (0, 1)}
    assert all(event == "complete" for event, _ in expected.values()), expected

    def visit(i: int) -> Visitor:
        v = Visitor(proxy)
        v.arrive()
        assert v.reconstruct(i % 2) == expected[i % 2]
        assert v.reconstruct((i + 1) % 2) == expected[(i + 1) % 2]
        return v

    with ThreadPoolExecutor(5) as pool:
        visitors = list(pool.map(visit, range(10)))
    for v in visitors:
        assert len(v.replicas) == 1, f"a visitor's requests went to several replicas: {v.replicas}"
    # ten random cookies all on one replica: 1 in 512; then more visitors until one reaches the other
    while len({a for v in visitors for a in v.replicas}) < 2 and len(visitors) < 40:
        visitors.append(visit(len(visitors)))
    by_replica = {a: [v for v in visitors if a in v.replicas] for a in replicas}
    assert all(by_replica.values()), f"the cookie hash sent every visitor to one replica: {by_replica.keys()}"

    # the static bundle is cached at the proxy
    page = httpx.get(proxy + "/", timeout=TIMEOUT).text
    asset = next((part.split('"')[0] for part in page.split('src="')[1:] if "/assets/" in part.split('"')[0]), None)
    assert asset is not None, "the page names no script under /assets/"
    statuses = [httpx.get(proxy + asset[asset.index("/assets/"):], timeout=TIMEOUT).headers.get("x-cache-status")
                for _ in range(2)]
    assert statuses[-1] == "HIT", statuses

    # one replica stops
    gone, (_, gone_proc) = next(iter(replicas.items()))
    stop(gone_proc)
    stranded = by_replica[gone][0]
    started = time.monotonic()
    event, data = stranded.reconstruct(0)
    assert time.monotonic() - started < TIMEOUT
    assert event == "error", f"a visitor of the stopped replica was answered from a file it no longer has: {data}"
    assert "upload the file first" in str(data), data
    # new visitors: served by the other replica, with the same answers
    for i in range(3):
        v = visit(i)
        assert v.replicas and gone not in v.replicas, v.replicas
