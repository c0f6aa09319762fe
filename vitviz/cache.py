"""A small thread-safe LRU mapping, for the bounded caches of the library and the UI."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most ``capacity`` entries; reading or writing one makes it the most recent.

    Args:
        capacity: entries kept (at least 1); the least recently used goes first.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

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
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)

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
