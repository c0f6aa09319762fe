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


def test_nbytes_counts_buffers_and_contents_not_models():
    import numpy as np
    import torch
    from dataclasses import dataclass

    from vitviz.cache import nbytes

    @dataclass(frozen=True)
    class Result:
        pixels: np.ndarray
        note: str

    a = np.zeros((100, 100, 3), np.float32)
    assert nbytes(a) == a.nbytes and nbytes(torch.zeros(10, 10)) == 400
    r = Result(a, "x" * 1000)
    assert a.nbytes + 1000 <= nbytes(r) < a.nbytes + 1200
    assert nbytes((r, r)) < 2 * a.nbytes  # one buffer held twice counts once
    assert nbytes(torch.nn.Linear(1000, 1000)) == 0  # the model cache's, counted by number


def test_one_budget_across_caches_drops_the_least_recent_anywhere(monkeypatch):
    import numpy as np

    from vitviz import cache

    monkeypatch.setenv("VITVIZ_CACHE_BUDGET", "3mb")
    mb = np.zeros(1 << 20, np.uint8)
    a: LRU[int, np.ndarray] = LRU(100, name="a")
    b: LRU[int, np.ndarray] = LRU(100, name="b")
    unbudgeted: LRU[int, np.ndarray] = LRU(100, budgeted=False)
    for other in list(cache._BUDGETED):
        if other not in (a, b):
            other.clear()  # other tests' caches: only these two count here
    a.put(1, mb.copy())
    b.put(1, mb.copy())
    a.put(2, mb.copy())
    assert a.get(1) is not None  # a:1 is now more recent than b:1
    b.put(2, mb.copy())  # 4 MB > 3 MB: the least recent of all, b:1, goes
    assert 1 not in b and 1 in a and 2 in a and 2 in b
    assert cache.usage()["total"] <= 3 << 20 and cache.usage()["a"] == a.bytes
    unbudgeted.put(1, np.zeros(8 << 20, np.uint8))  # outside the budget: kept, and nothing else dropped
    assert 1 in unbudgeted and len(a) == 2 and len(b) == 1
    a.put(3, np.zeros(4 << 20, np.uint8))  # larger than the whole budget: not kept
    assert 3 not in a and a.bytes + b.bytes <= 3 << 20
    a.clear()
    assert a.bytes == 0


def test_one_key_is_computed_once_while_its_value_is_still_being_stored():
    """The per-key lock was removed when ``compute`` returned, before the value was measured and stored: a
    caller arriving in between computed the key a second time."""
    import threading

    from vitviz import cache

    measuring, stored = threading.Event(), threading.Event()

    class Slow:
        """A value whose measurement (cache.nbytes) waits: the moment between computing and storing."""

        @property
        def nbytes(self) -> int:
            measuring.set()
            stored.wait(30)
            return 8

    lru: cache.LRU[str, object] = cache.LRU(4, name="test once")
    computed: list[str] = []

    def compute(who: str):  # noqa: ANN202
        computed.append(who)
        return Slow()

    first = threading.Thread(target=lambda: lru.get_or_compute("k", lambda: compute("first")))
    first.start()
    assert measuring.wait(30)
    second = threading.Thread(target=lambda: lru.get_or_compute("k", lambda: compute("second")))
    second.start()
    for _ in range(3000):  # until the second caller waits for the first, or has computed (the defect)
        if cache.waiting_on_others() or len(computed) > 1:
            break
        threading.Event().wait(0.01)
    stored.set()
    first.join(30)
    second.join(30)
    assert computed == ["first"]
