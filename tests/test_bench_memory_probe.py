"""``bench/memory_probe.py``: a process started with its environment answers what its memory is made of, and
a process that is not the served app (``app.py``) is left alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import memory_probe  # noqa: E402 - bench/ is not a package


def _started(script: Path, folder: Path) -> subprocess.Popen:
    script.write_text("import time\nblock = bytearray(32 << 20)\ntime.sleep(60)\n")
    env = dict(os.environ, **memory_probe.environment(folder))
    return subprocess.Popen([sys.executable, str(script)], env=env)


def test_the_app_answers_with_its_memory(tmp_path):
    proc = _started(tmp_path / "app.py", tmp_path / "probe")
    try:
        answer = memory_probe.request(tmp_path / "probe", "1", trim=True, timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert "error" not in answer, answer
    assert answer["rss_mb"] > 0 and answer["rss_after_malloc_trim_mb"] > 0
    assert answer["malloc"]["mapped_alone_mb"] >= 32  # the 32 MiB block, mapped on its own by glibc
    assert answer["pymalloc"]["objects_mb"] > 0 and answer["gc_objects"] > 0
    assert answer["gradio"] == {}  # no Gradio in this process: no tables


def test_another_process_is_left_alone(tmp_path):
    proc = _started(tmp_path / "worker.py", tmp_path / "probe")
    try:
        answer = memory_probe.request(tmp_path / "probe", "1", timeout=3)
    finally:
        proc.kill()
        proc.wait()
    assert answer == {"error": "no answer"}
