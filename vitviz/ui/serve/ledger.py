"""Per-client security state: rate buckets, upload budgets, recent use. Bounded, and never cache.

A cache may drop anything to make room: what it drops is computed again. A rate bucket or an
upload budget dropped while it is in force is a limit lifted: when these lived in the view
caches' LRUs, filling the cache with views evicted an address's upload budget, and an
over-budget 100 MB upload was then accepted. A :class:`Ledger` therefore:

* is outside the cache's byte budget (``VITVIZ_CACHE_BUDGET``) and bounded by its own number of
  entries (each is a few hundred bytes);
* makes room by evicting entries that are **idle** -- no longer in force, so indistinguishable
  from a fresh one (a bucket full again, a budget whose uploads have all left the disk) -- the
  least recently touched first;
* never evicts an entry in force: when every entry is, a new client is not admitted
  (:meth:`Ledger.update` raises :class:`LedgerFull`) and the caller refuses its request, as it
  would an over-limit one. A flood from more distinct addresses than the capacity meets refusals
  for its newcomers; the clients already counted keep their limits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")
R = TypeVar("R")

#: Clients a ledger keeps by default: enough for every address of a busy public host within the longest
#: window (an upload stays on disk for ``VITVIZ_CACHE_SECONDS``), about 300 bytes each.
DEFAULT_CAPACITY = 20_000


class LedgerFull(Exception):
    """Every entry of a ledger is in force: a new client cannot be counted, so its request is refused."""


class Ledger(Generic[K, V]):
    """At most ``capacity`` entries of per-client state; an entry in force is never evicted.

    Args:
        in_force: ``in_force(value, now)``: True while ``value`` still limits its client (a bucket not full,
            a budget with uploads within its window). An entry not in force is *idle*: dropping it loses
            nothing, since a new client starts from the same state.
        capacity: entries kept (at least 1), or a callable returning it (read when room is needed).
    """

    def __init__(self, in_force: Callable[[V, float], bool], capacity: int | Callable[[], int] = DEFAULT_CAPACITY
                 ) -> None:
        self._in_force = in_force
        self._capacity = capacity
        self._data: dict[K, V] = {}  # least recently touched first (insertion order, re-inserted when touched)
        self._lock = threading.Lock()

    @property
    def capacity(self) -> int:
        """The current capacity (at least 1)."""
        cap = self._capacity() if callable(self._capacity) else self._capacity
        return max(1, int(cap))

    def _make_room(self, now: float) -> None:
        """Evict idle entries, least recently touched first, until one more fits (caller holds the lock).

        Raises:
            LedgerFull: when every entry is in force.
        """
        cap = self.capacity
        if len(self._data) < cap:
            return
        for key in list(self._data):
            if not self._in_force(self._data[key], now):
                del self._data[key]
                if len(self._data) < cap:
                    return
        raise LedgerFull(f"all {cap} entries are in force")

    def update(self, key: K, change: Callable[[V | None], tuple[V, R]], now: float | None = None) -> R:
        """Atomically replace the entry of ``key`` by ``change(old)[0]`` (``old`` is None for a new client) and
        return ``change(old)[1]``; the entry becomes the most recently touched.

        Raises:
            LedgerFull: ``key`` is new and every entry is in force (nothing is stored; ``change`` is not called).
        """
        now = time.monotonic() if now is None else now
        with self._lock:
            old = self._data.get(key)
            if old is None:
                self._make_room(now)
            new, result = change(old)
            self._data.pop(key, None)
            self._data[key] = new  # now the most recently touched
            return result

    def get(self, key: K) -> V | None:
        """The entry of ``key`` (its recency unchanged), or None."""
        with self._lock:
            return self._data.get(key)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def clear(self) -> None:
        """Forget every entry (tests)."""
        with self._lock:
            self._data.clear()
