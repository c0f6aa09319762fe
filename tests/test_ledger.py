"""Security state is not cache (vitviz.ledger): per-address rate buckets and upload budgets live in their own
bounded ledgers, where an entry still in force is never evicted -- filling the view cache once evicted an
address's upload budget, and an over-budget 100 MB upload was then accepted."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz import cache, ledger

MB = 1_000_000


def _fill_the_view_cache(monkeypatch) -> cache.LRU:  # noqa: ANN001
    """Store views until the process-wide cache budget has evicted its oldest entries many times over (the
    caller keeps the returned cache alive while it checks)."""
    monkeypatch.setenv("VITVIZ_CACHE_BUDGET", "1mb")
    views: cache.LRU[int, np.ndarray] = cache.LRU(1000, name="test views")
    for i in range(40):
        views.put(i, np.zeros(200_000, dtype=np.uint8))
    assert len(views) < 40  # the budget did evict
    return views


def test_filling_the_view_cache_never_evicts_an_upload_budget(monkeypatch):
    monkeypatch.setenv("VITVIZ_CLIENT_UPLOAD", "150mb")
    budget = ledger.DiskBudget()
    assert budget.refusal("203.0.113.7", 100 * MB) is None
    views = _fill_the_view_cache(monkeypatch)  # noqa: F841 - alive while the state is checked
    # the address still has 100 MB on disk: another 100 MB is over its 150 MB
    assert budget.refusal("203.0.113.7", 100 * MB) == ledger.OVER_BUDGET


def test_filling_the_view_cache_never_refills_a_rate_bucket(monkeypatch):
    limiter = ledger.RateLimiter()
    assert [limiter.allow("203.0.113.8", 60, now=0.0) for _ in range(11)] == [True] * 10 + [False]
    views = _fill_the_view_cache(monkeypatch)  # noqa: F841 - alive while the state is checked
    assert not limiter.allow("203.0.113.8", 60, now=0.1)  # still empty: 0.1 s refilled a tenth of a token


def test_a_ledger_evicts_the_oldest_idle_entry_and_never_one_in_force():
    book: ledger.Ledger[str, float] = ledger.Ledger(lambda until, now: now < until, capacity=3)
    put = lambda key, until, now: book.update(key, lambda old: (until, None), now)  # noqa: E731
    put("a", 5.0, 0.0)
    put("b", 100.0, 0.0)
    put("c", 6.0, 0.0)
    with pytest.raises(ledger.LedgerFull):  # every entry in force at t=1: the newcomer is not admitted
        put("d", 50.0, 1.0)
    assert "d" not in book and len(book) == 3
    put("d", 50.0, 5.5)  # "a" is idle (until 5.0) and the oldest idle: it goes, "c" (until 6.0) stays
    assert "a" not in book and all(k in book for k in "bcd")
    put("c", 200.0, 5.6)  # touched: now the most recent
    with pytest.raises(ledger.LedgerFull):
        put("e", 1.0, 10.0)  # b, c and d all in force at t=10


def test_a_full_ledger_refuses_newcomers_rather_than_lifting_a_limit(monkeypatch):
    limiter = ledger.RateLimiter(capacity=2)
    for address in ("198.51.100.1", "198.51.100.2"):
        assert limiter.allow(address, 60, now=0.0)  # each bucket below its burst: in force
    assert not limiter.allow("198.51.100.3", 60, now=0.5)  # no room without lifting a limit
    assert limiter.allow("198.51.100.3", 60, now=2.0)  # the first buckets are full again (idle): room
    monkeypatch.setenv("VITVIZ_CLIENT_UPLOAD", "150mb")
    budget = ledger.DiskBudget(capacity=1)
    assert budget.refusal("198.51.100.1", MB, now=0.0) is None
    assert budget.refusal("198.51.100.2", MB, now=1.0) == ledger.DISK_FULL
    assert budget.refusal("198.51.100.2", MB, now=1e6) is None  # the first upload left the disk long ago
