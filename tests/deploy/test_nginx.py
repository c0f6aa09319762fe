"""deploy/: two app replicas behind nginx (deploy/render.py's configuration) with sticky sessions.

Ten visitors go through the proxy: each one's requests reach one replica, and every answer equals a single
replica's. Then one replica stops: new visitors are served by the other, and a visitor of the stopped one
gets a clear error (its uploaded file was on the stopped replica), not a hang.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager

import pytest

from tools.appserver import ROOT, running_app, stop
from tools.nginx import NGINX
from tools.nginx import proxy as nginx_proxy

pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (tests/setup.sh installs Debian's "
                                                       "nginx when run as root: apt-get install -y nginx)")
httpx = pytest.importorskip("httpx")
from tools.gradio_http import Visitor  # noqa: E402 - needs httpx

PHOTO = ROOT / "assets" / "examples" / sorted(p.name for p in (ROOT / "assets" / "examples").glob("*.jpg"))[0]
TIMEOUT = 60.0
COOKIE = "vitviz_replica"


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
        # the visitors all come from loopback, standing in for many addresses: per-address limits out of the way
        proxy = stack.enter_context(nginx_proxy(list(replicas), options=("--rate", "1000r/s", "--burst", "1000")))
        yield proxy, replicas


def test_replicas_behind_nginx(cluster):
    proxy, replicas = cluster
    # what one replica alone answers, called directly
    first_url = next(iter(replicas.values()))[0]
    alone = Visitor(first_url, TIMEOUT)
    alone.arrive(PHOTO)
    expected = {seed: alone.reconstruct(seed) for seed in (0, 1)}
    assert all(event == "complete" for event, _ in expected.values()), expected

    def visit(i: int) -> Visitor:
        v = Visitor(proxy, TIMEOUT)
        v.arrive(PHOTO)
        assert COOKIE in v.client.cookies, "the proxy gives each new browser its route cookie"
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


@contextmanager
def _backends(n: int, slow: list, release: threading.Event):
    """``n`` stand-in replicas on loopback (``host:port`` each): every request answered 200; ``/slow`` noted in
    ``slow`` when it arrives, and answered once ``release`` is set."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from tools.appserver import free_port

    class Answer(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            self.rfile.read(length)
            if self.path.startswith("/slow"):
                slow.append(self.path)
                release.wait(TIMEOUT)
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    servers = [ThreadingHTTPServer(("127.0.0.1", free_port()), Answer) for _ in range(n)]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        yield [f"127.0.0.1:{s.server_address[1]}" for s in servers]
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


def test_the_proxy_limits_each_address_over_all_replicas():
    """nginx's shared zones: one address's uploads and queue joins at most --rate (bursts of --burst) and
    --connections open at once, whichever replica each request reaches; refused with HTTP 429 and a sentence."""
    slow, release = [], threading.Event()
    with _backends(2, slow, release) as replicas, nginx_proxy(replicas, options=("--rate", "1r/s", "--burst", "3",
                                                                  "--connections", "3")) as url:
        routes: dict[str, str] = {}  # replica -> a route cookie that reaches it (the page is not limited)
        for i in range(64):
            got = httpx.get(url + "/config", headers={"cookie": f"{COOKIE}=r{i}"}, timeout=TIMEOUT)
            assert got.status_code == 200
            routes.setdefault(got.headers["x-vitviz-upstream"], f"{COOKIE}=r{i}")
        assert len(routes) == 2, routes
        cookies = list(routes.values())
        answers = [httpx.post(url + "/gradio_api/queue/join", json={}, headers={"cookie": cookies[i % 2]},
                              timeout=TIMEOUT) for i in range(12)]  # one visitor's joins, alternately on each replica
        statuses = [a.status_code for a in answers]
        assert statuses[:4] == [200] * 4 and statuses.count(429) >= 6, statuses
        assert {a.headers["x-vitviz-upstream"] for a in answers[:4]} == set(routes)
        assert "Too many requests from your address" in answers[-1].json()["detail"]
        with ThreadPoolExecutor(3) as pool:  # three connections held open: a fourth is refused
            held = [pool.submit(httpx.get, url + f"/slow?{i}", timeout=TIMEOUT) for i in range(3)]
            deadline = time.monotonic() + TIMEOUT
            while len(slow) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            fourth = httpx.get(url + "/config", timeout=TIMEOUT)
            release.set()
            assert [h.result().status_code for h in held] == [200] * 3
        assert fourth.status_code == 429 and "Too many requests" in fourth.json()["detail"]
