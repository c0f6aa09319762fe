"""``docker stop`` sends SIGTERM to ``python app.py``, the container's PID 1: the app ends promptly (a PID 1
ignores a SIGTERM it does not handle, and Docker kills it 10 s later)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from tools.appserver import ROOT, free_port

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _as_pid1() -> list[str]:
    """A command prefix that runs the app as PID 1 of a new PID namespace, as in a container ([] where this
    machine cannot: unshare missing or not root)."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        return []
    probe = subprocess.run([unshare, "--pid", "--fork", "sh", "-c", "echo $$"], capture_output=True, text=True)
    return [unshare, "--pid", "--fork", "--kill-child"] if probe.stdout.strip() == "1" else []


def _caught(pid: int) -> int:
    """The signals process ``pid`` handles, as a mask (bit n-1: signal n)."""
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith("SigCgt:")).split()[1], 16)


def test_sigterm_ends_the_app_within_seconds(tmp_path):
    port = free_port()
    prefix = _as_pid1()
    env = dict(os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", HF_HUB_OFFLINE="1",
               GRADIO_ANALYTICS_ENABLED="False", VITVIZ_WARMUP="0", VITVIZ_PACKAGE_WEIGHTS="0")
    log = (tmp_path / "app.log").open("w")
    outer = subprocess.Popen([*prefix, sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log,
                             stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 300
        while True:
            assert outer.poll() is None, (tmp_path / "app.log").read_text()
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except OSError:
                assert time.time() < deadline, "the app did not start"
                time.sleep(0.5)
        if prefix:  # the app is unshare's child, PID 1 of its namespace
            app = int(subprocess.run(["pgrep", "-P", str(outer.pid)], capture_output=True, text=True,
                                     check=True).stdout.split()[0])
        else:
            app = outer.pid
        assert _caught(app) & (1 << (signal.SIGTERM - 1)), "app.py leaves SIGTERM to its default action"
        os.kill(app, signal.SIGTERM)
        outer.wait(timeout=8)  # docker stop's grace is 10 s
        assert outer.returncode == 0
        assert "closing server" in (tmp_path / "app.log").read_text()
    finally:
        if outer.poll() is None:
            outer.kill()
            outer.wait()
        log.close()
