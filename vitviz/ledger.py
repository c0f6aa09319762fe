"""Per-client security state: rate buckets (:class:`RateLimiter`), disk budgets (:class:`DiskBudget`), recent
use. Bounded, and never cache.

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
from collections import deque
from collections.abc import Callable
from typing import TypeVar

from . import settings
from .cache import Guarded

K = TypeVar("K")
V = TypeVar("V")
R = TypeVar("R")

#: Clients a ledger keeps by default: enough for every address of a busy public host within the longest
#: window (an upload stays on disk for ``VITVIZ_CACHE_SECONDS``), about 300 bytes each.
DEFAULT_CAPACITY = 20_000
#: The refusals of a :class:`DiskBudget`.
OVER_BUDGET = ("You have uploaded as much as this shared server keeps for one visitor for now: "
               "wait a while or reuse a photo you uploaded.")
DISK_FULL = "The server's upload space is full for now: wait a few minutes (this server is shared)."


class LedgerFull(Exception):
    """Every entry of a ledger is in force: a new client cannot be counted, so its request is refused."""


class Ledger(Guarded[K, V]):
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

    def clear(self) -> None:
        """Forget every entry (tests)."""
        with self._lock:
            self._data.clear()


class RateLimiter:
    """Token buckets per client address: ``per_minute`` requests a minute, bursts of ``max(10, per_minute / 8)``;
    bounded, thread-safe. The buckets are a :class:`Ledger`, not a cache: a bucket not yet full again
    is never evicted, and a new address that finds every bucket in use is refused."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        # address -> (tokens, time, when full again)
        self._buckets: Ledger[str, tuple[float, float, float]] = Ledger(
            lambda bucket, now: now < bucket[2], capacity)

    def allow(self, address: str, per_minute: int, now: float | None = None, burst: float | None = None,
              take_tokens: float = 1.0) -> bool:
        """Take one token (``take_tokens``; a negative number gives them back) from ``address``'s bucket (``burst``
        tokens at most: default an eighth of a minute's, at least 10); False when it is empty."""
        now = time.monotonic() if now is None else now
        burst = max(10.0, per_minute / 8) if burst is None else float(burst)
        rate = max(per_minute, 1e-9) / 60.0

        def take(bucket: tuple[float, float, float] | None) -> tuple[tuple[float, float, float], bool]:
            tokens, last, _ = bucket or (burst, now, now)
            tokens = min(burst, tokens + (now - last) * rate)
            ok = tokens >= take_tokens
            left = min(burst, tokens - take_tokens) if ok else tokens
            return (left, now, now + (burst - left) / rate), ok

        try:
            return self._buckets.update(address, take, now)
        except LedgerFull:
            return False


class DiskBudget:
    """Bytes and files each address (and all together) left on disk within a sliding window; thread-safe.

    Each address's uploads are kept in a :class:`Ledger` (never in a cache: a budget in force is
    never evicted). An upload is charged when it starts (its declared length) and settled when its file is
    read whole (:meth:`settle`): Gradio stores a file at a path named by its content and name, so sending
    the same file again (``gradio_client`` uploads it for every call) takes no more disk, and its charge is
    given back. ``VITVIZ_CLIENT_FILES`` thus counts distinct files, not requests.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        # address -> deque of [time, bytes, digest of content and name (None until settled)]
        self._per_address: Ledger[str, deque] = Ledger(self._in_force, capacity)
        self._all: deque = deque()
        self._lock = threading.Lock()

    @staticmethod
    def _in_force(entries: deque, now: float) -> bool:
        """True while any of an address's uploads is within the window (still on disk)."""
        return bool(entries) and entries[-1][0] >= now - settings.get("VITVIZ_CACHE_SECONDS")

    @staticmethod
    def _trim(entries: deque, since: float) -> None:
        while entries and entries[0][0] < since:
            entries.popleft()

    def refusal(self, address: str, nbytes: int, now: float | None = None) -> str | None:
        """The sentence refusing ``nbytes`` more from ``address``, or None when they fit (then counted)."""
        return self.charge(address, nbytes, now)[0]

    def charge(self, address: str, nbytes: int, now: float | None = None) -> tuple[str | None, list | None]:
        """``(refusal, None)`` when ``nbytes`` more from ``address`` do not fit, else ``(None, entry)``: the
        charge, to :meth:`settle` once the file's content is known. A new address when every address counted
        has uploads in force (:class:`~.LedgerFull`) is refused with :data:`DISK_FULL`."""
        now = time.monotonic() if now is None else now
        since = now - settings.get("VITVIZ_CACHE_SECONDS")

        def change(mine: deque | None) -> tuple[deque, tuple[str | None, list | None]]:
            mine = deque() if mine is None else mine
            self._trim(mine, since)
            self._trim(self._all, since)
            if (sum(e[1] for e in mine) + nbytes > settings.get("VITVIZ_CLIENT_UPLOAD")
                    or len(mine) + 1 > settings.get("VITVIZ_CLIENT_FILES")):
                return mine, (OVER_BUDGET, None)
            if sum(e[1] for e in self._all) + nbytes > settings.get("VITVIZ_UPLOAD_DISK"):
                return mine, (DISK_FULL, None)
            entry = [now, nbytes, None]
            mine.append(entry)
            self._all.append(entry)
            return mine, (None, entry)

        with self._lock:
            try:
                return self._per_address.update(address, change, now)
            except LedgerFull:
                return DISK_FULL, None

    def settle(self, address: str, entry: list, digest: str) -> bool:
        """Name the file of a charge ``entry`` by ``digest`` (its content and name). When ``address`` left the
        same file within the window, the charge is given back (the file takes no more disk); returns True then."""
        with self._lock:
            mine = self._per_address.get(address)
            if mine is None or not any(e is entry for e in mine):
                return False
            if any(e is not entry and e[2] == digest for e in mine):
                del mine[next(i for i, e in enumerate(mine) if e is entry)]
                at = next((i for i, e in enumerate(self._all) if e is entry), None)
                if at is not None:
                    del self._all[at]
                return True
            entry[2] = digest
            return False
