"""The one LRU: bounded, most recent kept, each key computed once under concurrency."""

from __future__ import annotations

import threading
import time

import pytest

from vitviz.cache import LRU


def test_lru_keeps_the_most_recent():
    c: LRU[str, int] = LRU(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1  # a is now the most recent
    c.put("c", 3)
    assert "b" not in c and c.get("a") == 1 and c.get("c") == 3 and len(c) == 2
    assert c.get("zz", -1) == -1
    c.clear()
    assert len(c) == 0


def test_capacity_can_be_a_setting_read_at_use(monkeypatch):
    size = {"n": 3}
    c: LRU[int, int] = LRU(lambda: size["n"])
    for i in range(5):
        c.put(i, i)
    assert len(c) == 3
    size["n"] = 1
    c.put(9, 9)
    assert len(c) == 1 and c.capacity == 1
    assert LRU(0).capacity == 1


def test_get_or_compute_computes_each_key_once_under_threads():
    c: LRU[str, object] = LRU(4)
    calls = []
    barrier = threading.Barrier(8)

    def compute() -> object:
        calls.append(1)
        time.sleep(0.05)
        return object()

    results = []

    def worker() -> None:
        barrier.wait()
        results.append(c.get_or_compute("k", compute))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and c.computed == 1 and all(r is results[0] for r in results)


def test_a_failed_compute_stores_nothing():
    c: LRU[str, int] = LRU(2)
    with pytest.raises(ZeroDivisionError):
        c.get_or_compute("k", lambda: 1 // 0)
    assert "k" not in c and c.get_or_compute("k", lambda: 7) == 7


def test_setdefault_is_atomic_and_bounded():
    c: LRU[str, dict] = LRU(1)
    d = c.setdefault("a", dict)
    d["x"] = 1
    assert c.setdefault("a", dict) == {"x": 1}
    c.setdefault("b", dict)
    assert "a" not in c
