"""deploy/: two app replicas behind nginx (deploy/render.py's configuration) with sticky sessions.

Ten visitors go through the proxy: each one's requests reach one replica, and every answer equals a single
replica's. Then one replica stops: new visitors are served by the other, and a visitor of the stopped one
gets a clear error (its uploaded file was on the stopped replica), not a hang.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

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
        proxy = stack.enter_context(nginx_proxy(list(replicas)))
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
