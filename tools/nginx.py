"""Debian's nginx in front of app replicas, for tests and benchmarks (deploy/render.py's configuration)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tools.appserver import ROOT, free_port, stop

#: The nginx executable, or None where it is not installed.
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)


@contextmanager
def proxy(replicas: list[str], timeout: float = 30.0, options: tuple[str, ...] = ()) -> Iterator[str]:
    """nginx on a free loopback port in front of ``replicas`` (``host:port``), with the replica of each
    answer in ``X-Vitviz-Upstream`` and ``options`` of deploy/render.py (``--rate 2r/s``); yields its URL and
    stops it after."""
    assert NGINX is not None, "nginx is not installed"
    # nginx started as root runs its workers as nobody, who must reach the prefix (a test's tmp is private)
    prefix = Path(tempfile.mkdtemp(prefix="vitviz-nginx-", dir="/tmp"))
    prefix.chmod(0o755)
    try:
        port = free_port()
        conf = subprocess.run([sys.executable, str(ROOT / "deploy" / "render.py"), "--replicas", *replicas,
                               "--listen", f"127.0.0.1:{port}", "--standalone", str(prefix), "--expose-upstream", *options],
                              check=True, capture_output=True, text=True).stdout
        (prefix / "nginx.conf").write_text(conf)
        proc = subprocess.Popen([NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.time() + timeout
            while True:
                try:
                    with urllib.request.urlopen(url + "/", timeout=5) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if proc.poll() is not None:
                    raise RuntimeError(f"nginx exited: {proc.stderr.read().decode()}")
                if time.time() > deadline:
                    raise RuntimeError(f"nginx did not answer in {timeout:.0f} s")
                time.sleep(0.2)
            yield url
        finally:
            stop(proc)
    finally:
        shutil.rmtree(prefix, ignore_errors=True)
