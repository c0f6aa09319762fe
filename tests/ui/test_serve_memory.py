"""The served app hands memory malloc keeps after it was freed back to the system (``vitviz.ui.serve.memory``)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from vitviz.ui.serve import memory

ROOT = Path(__file__).resolve().parents[2]

#: A process that leaves 200 MB free inside malloc's arenas, pinned there by small blocks that stay (as cache
#: entries among a request's temporaries), and prints its resident MB before and after a trim.
_FRAGMENTED = """
import random
from vitviz.ui.serve import memory

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

big = bytearray(8 << 20)
del big  # freed: glibc now serves blocks up to 8 MB from its arenas
random.seed(0)
kept, freed = [], []
for i in range(1000):
    freed.append(bytearray(200_000))
    freed[-1][::4096] = b"x" * len(freed[-1][::4096])  # every page resident
    kept.append(bytearray(1000))  # stays, between the large blocks
del freed
before = rss()
memory.trimmer()()
print(before, rss())
"""


@pytest.mark.skipif(memory.trimmer() is None, reason="no malloc_trim in this C library")
def test_a_trim_hands_the_free_space_between_kept_blocks_back():
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    env["PYTHONPATH"] = str(ROOT)  # glibc's own defaults, whatever this process was started with
    out = subprocess.run([sys.executable, "-c", _FRAGMENTED], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    before, after = map(float, out.stdout.split()[-2:])
    assert before - after > 150, (before, after)  # of the 200 MB freed


def test_the_trim_runs_every_period_from_one_thread(monkeypatch):
    monkeypatch.setattr(memory, "_STARTED", [])
    calls = threading.Semaphore(0)

    def trim() -> bool:
        calls.release()
        return True

    thread = memory.start(every=0.01, trim=trim)
    try:
        assert thread is not None and thread.daemon and thread.name == "vitviz-malloc-trim"
        assert memory.start(every=0.01, trim=trim) is thread  # once per process
        assert all(calls.acquire(timeout=5) for _ in range(3))
    finally:
        memory.stop()
    assert not thread.is_alive()


def test_the_served_process_trims():
    from vitviz.ui import serve

    serve.install_process()
    assert memory.trimmer() is None or any(t.name == "vitviz-malloc-trim" and t.is_alive()
                                           for t in threading.enumerate())
