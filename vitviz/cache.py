"""The one cache of vitviz: a bounded, thread-safe LRU that computes each key once.

Every cache of the library and the app is an :class:`LRU`: loaded models, captured
attention, the per-image slider stops, the app's pixel memo and view memo. Capacities
may be given as a callable (a setting), read when the cache is used, never at import.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most ``capacity`` entries; reading or writing one makes it the most recent.

    Args:
        capacity: entries kept (at least 1), or a callable returning it (read on every
            write, so a setting can change it); the least recently used go first.

    Attributes:
        computed: how many values :meth:`get_or_compute` has computed (misses).
    """

    def __init__(self, capacity: int | Callable[[], int]) -> None:
        self._capacity = capacity
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[K, threading.Lock] = {}
        self.computed = 0

    @property
    def capacity(self) -> int:
        """The current capacity (at least 1)."""
        cap = self._capacity() if callable(self._capacity) else self._capacity
        return max(1, int(cap))

    def _trim(self) -> None:
        cap = self.capacity
        while len(self._data) > cap:
            self._data.popitem(last=False)

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value of ``key`` (now the most recent), or ``default``."""
        with self._lock:
            if key not in self._data:
                return default
            self._data.move_to_end(key)
            return self._data[key]

    def put(self, key: K, value: V) -> None:
        """Store ``value`` under ``key``, evicting the least recent entries beyond capacity."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            self._trim()

    def setdefault(self, key: K, factory: Callable[[], V]) -> V:
        """The value of ``key``; if absent, ``factory()`` is stored and returned (atomically)."""
        with self._lock:
            if key not in self._data:
                self._data[key] = factory()
                self._trim()
            self._data.move_to_end(key)
            return self._data[key]

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        """The value of ``key``, computing it with ``compute()`` on a miss.

        Concurrent calls for one key compute it once (one lock per key); calls for
        different keys run in parallel. A ``compute`` that raises stores nothing.
        """
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._data:
                    self._data.move_to_end(key)
                    return self._data[key]
            try:
                value = compute()
            finally:
                with self._lock:
                    self._key_locks.pop(key, None)
            with self._lock:
                self.computed += 1
                self._data[key] = value
                self._data.move_to_end(key)
                self._trim()
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
                del self._data[k]
            return len(drop)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._data.clear()
