"""The one cache of vitviz: a bounded, thread-safe LRU that computes each key once.

Every cache of the library and the app is an :class:`LRU`: loaded models, captured
attention, the per-image slider stops, the app's pixel memo and view memo. Capacities
may be given as a callable (a setting), read when the cache is used, never at import.

**One budget in bytes** for all of them (``VITVIZ_CACHE_BUDGET``, read when used): each
entry's size is measured when it is stored (:func:`nbytes`), and when the entries of
every budgeted LRU together exceed the budget, the least recently used entries of the
whole process go first, whichever cache holds them. Loaded models are outside the
budget (``budgeted=False``: counted by ``VITVIZ_MAX_MODELS``); :func:`usage` says what
each cache holds.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


def nbytes(value: Any) -> int:
    """About how many bytes ``value`` holds: arrays and tensors by their buffers, images by their
    pixels, text by its length, containers, dataclasses and objects by their contents (walked once,
    8 levels deep). A ``torch.nn.Module`` counts 0: models are held, and counted, by the model cache."""
    seen: set[int] = set()

    def walk(v: Any, depth: int) -> int:
        if v is None or isinstance(v, (bool, int, float, complex)):
            return 16
        if isinstance(v, (str, bytes, bytearray, memoryview)):
            return len(v)
        if id(v) in seen or depth > 8 or isinstance(v, type) or callable(v) and not hasattr(v, "__dict__"):
            return 0
        seen.add(id(v))
        size = getattr(v, "nbytes", None)  # numpy arrays, torch tensors
        if isinstance(size, int) and not isinstance(v, type):
            return size
        if hasattr(v, "state_dict") and hasattr(v, "parameters") or hasattr(v, "data_config") and hasattr(v, "spec"):
            return 0  # a model (a module, a loaded model): the model cache's
        if hasattr(v, "getbands") and hasattr(v, "size"):  # a PIL image
            return int(v.size[0]) * int(v.size[1]) * len(v.getbands())
        if hasattr(v, "to_plotly_json"):  # a Plotly figure: its data and layout
            return walk(v.to_plotly_json(), depth + 1)
        if isinstance(v, dict):
            return 64 + sum(walk(k, depth + 1) + walk(x, depth + 1) for k, x in v.items())
        if isinstance(v, (list, tuple, set, frozenset)):
            return 56 + sum(walk(x, depth + 1) for x in v)
        if dataclasses.is_dataclass(v):
            return 56 + sum(walk(getattr(v, f.name, None), depth + 1) for f in dataclasses.fields(v))
        inner = getattr(v, "__dict__", None)
        if isinstance(inner, dict):
            return 56 + sum(walk(x, depth + 1) for x in inner.values())
        return sys.getsizeof(v, 64)

    return walk(value, 0)


#: Every LRU that counts against the budget (weakly: a cache that is gone is forgotten).
_BUDGETED: weakref.WeakSet[LRU] = weakref.WeakSet()
_BUDGET_LOCK = threading.Lock()
_TICKS = itertools.count()  # process-wide recency: a higher tick was used more recently
_WAITING = [0]  # threads waiting now for another thread: its computation of a value (get_or_compute), or a lock
_WAITING_LOCK = threading.Lock()


def waiting_on_others() -> int:
    """How many threads wait now for another thread to finish something: a value it computes
    (:meth:`LRU.get_or_compute`) or a lock it holds (:func:`acquired`). Background work must not pause then:
    someone may need what it holds."""
    return _WAITING[0]


@contextmanager
def acquired(lock: Any) -> Iterator[None]:
    """``with lock:``, counting this thread in :func:`waiting_on_others` while another thread holds the lock."""
    if not lock.acquire(blocking=False):
        with _WAITING_LOCK:
            _WAITING[0] += 1
        try:
            lock.acquire()
        finally:
            with _WAITING_LOCK:
                _WAITING[0] -= 1
    try:
        yield
    finally:
        lock.release()


def budget_bytes() -> int:
    """The budget of every budgeted LRU together (``VITVIZ_CACHE_BUDGET``, read now)."""
    from . import settings

    return int(settings.get("VITVIZ_CACHE_BUDGET"))


def usage() -> dict[str, int]:
    """Bytes held by each budgeted LRU (by its name) and ``"total"``."""
    with _BUDGET_LOCK:
        caches = list(_BUDGETED)
    out: dict[str, int] = {}
    for c in caches:
        out[c.name] = out.get(c.name, 0) + c.bytes
    out["total"] = sum(c.bytes for c in caches)
    return out


def enforce_budget(budget: int | None = None) -> int:
    """Drop the least recently used entries of all budgeted LRUs until they fit ``budget`` bytes
    (default :func:`budget_bytes`); returns how many were dropped. Run after every store."""
    limit = budget_bytes() if budget is None else budget
    dropped = 0
    with _BUDGET_LOCK:
        caches = list(_BUDGETED)
        total = sum(c.bytes for c in caches)
        while total > limit:
            oldest = [(c._oldest_tick(), i) for i, c in enumerate(caches)]
            oldest = [(t, i) for t, i in oldest if t is not None]
            if not oldest:
                break
            _, i = min(oldest)
            total -= caches[i]._drop_oldest()
            dropped += 1
    return dropped


class Guarded(Generic[K, V]):
    """Entries in a dict (``_data``) behind a lock (``_lock``), their membership and count read under it: the
    base of :class:`LRU` and of :class:`vitviz.ledger.Ledger`."""

    _data: dict[K, V]
    _lock: threading.Lock

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


class LRU(Guarded[K, V]):
    """At most ``capacity`` entries; reading or writing one makes it the most recent.

    Args:
        capacity: entries kept (at least 1), or a callable returning it (read on every
            write, so a setting can change it); the least recently used go first.
        budgeted: whether the entries count against the process-wide byte budget
            (``VITVIZ_CACHE_BUDGET``); when all budgeted caches together exceed it, the least
            recently used entries of any of them go first.
        name: what :func:`usage` calls it.

    Attributes:
        computed: how many values :meth:`get_or_compute` has computed (misses).
        bytes: the measured size of the entries held (:func:`nbytes`, taken when each was stored).
    """

    def __init__(self, capacity: int | Callable[[], int], *, budgeted: bool = True, name: str = "") -> None:
        self._capacity = capacity
        self._data: OrderedDict[K, V] = OrderedDict()
        self._sizes: dict[K, int] = {}
        self._ticks: dict[K, int] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[K, threading.Lock] = {}
        self.computed = 0
        self.bytes = 0
        self.budgeted = budgeted
        self.name = name or self._caller()
        if budgeted:
            with _BUDGET_LOCK:
                _BUDGETED.add(self)

    @staticmethod
    def _caller() -> str:
        frame = sys._getframe(2)
        return f"{frame.f_globals.get('__name__', '?')}:{frame.f_lineno}"

    # --- recency and size bookkeeping (callers hold self._lock) ---------------------------------------------
    def _touch(self, key: K) -> None:
        self._data.move_to_end(key)
        self._ticks[key] = next(_TICKS)

    def _store(self, key: K, value: V, size: int) -> None:
        self.bytes += size - self._sizes.get(key, 0)
        self._data[key] = value
        self._sizes[key] = size
        self._touch(key)

    def _remove(self, key: K) -> None:
        del self._data[key]
        self.bytes -= self._sizes.pop(key, 0)
        self._ticks.pop(key, None)

    def _oldest_tick(self) -> int | None:
        with self._lock:
            if not self._data:
                return None
            return self._ticks.get(next(iter(self._data)), -1)

    def _drop_oldest(self) -> int:
        with self._lock:
            if not self._data:
                return 0
            key = next(iter(self._data))
            size = self._sizes.get(key, 0)
            self._remove(key)
            return size

    def _measure(self, value: V) -> int:
        return nbytes(value) if self.budgeted else 0

    def _after_store(self) -> None:
        if self.budgeted:
            enforce_budget()

    @property
    def capacity(self) -> int:
        """The current capacity (at least 1)."""
        cap = self._capacity() if callable(self._capacity) else self._capacity
        return max(1, int(cap))

    def _trim(self) -> None:
        cap = self.capacity
        while len(self._data) > cap:
            self._remove(next(iter(self._data)))

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value of ``key`` (now the most recent), or ``default``."""
        with self._lock:
            if key not in self._data:
                return default
            self._touch(key)
            return self._data[key]

    def peek(self, key: K, default: V | None = None) -> V | None:
        """The value of ``key``, or ``default``, leaving its recency as it was (for a look that uses nothing)."""
        with self._lock:
            return self._data.get(key, default)

    def put(self, key: K, value: V) -> None:
        """Store ``value`` under ``key``, evicting the least recent entries beyond capacity."""
        size = self._measure(value)
        with self._lock:
            self._store(key, value, size)
            self._trim()
        self._after_store()

    def setdefault(self, key: K, factory: Callable[[], V]) -> V:
        """The value of ``key``; if absent, ``factory()`` is stored and returned (atomically)."""
        with self._lock:
            if key not in self._data:
                value = factory()
                self._store(key, value, self._measure(value))
                self._trim()
            self._touch(key)
            found = self._data[key]
        self._after_store()
        return found

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        """The value of ``key``, computing it with ``compute()`` on a miss.

        Concurrent calls for one key compute it once (one lock per key); calls for
        different keys run in parallel. A ``compute`` that raises stores nothing.
        """
        with self._lock:
            if key in self._data:
                self._touch(key)
                return self._data[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with acquired(key_lock):  # another thread computing it: wait, counted (waiting_on_others)
            with self._lock:
                if key in self._data:
                    self._touch(key)
                    return self._data[key]
            try:
                value = compute()
                size = self._measure(value)
                with self._lock:
                    self.computed += 1
                    self._store(key, value, size)
                    self._trim()
            finally:  # only once the value is stored: a caller arriving meanwhile waits for it, never computes it
                with self._lock:
                    if self._key_locks.get(key) is key_lock:
                        del self._key_locks[key]
        self._after_store()
        return value

    def evict(self, predicate: Callable[[K, V], bool], keep: int = 0) -> int:
        """Drop the entries for which ``predicate(key, value)`` holds, but the ``keep`` most recent of them.

        Returns:
            How many entries were dropped.
        """
        with self._lock:
            matching = [k for k, v in self._data.items() if predicate(k, v)]  # least recent first
            drop = matching[: max(0, len(matching) - keep)]
            for k in drop:
                self._remove(k)
            return len(drop)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._data.clear()
            self._sizes.clear()
            self._ticks.clear()
            self.bytes = 0
