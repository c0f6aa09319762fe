"""Keeping the outputs of deterministic views for the next visitor: :func:`memo_view`.

Every visitor's page load computes the same default views; with a memo the first one pays and the rest read
the result. Arguments key it by value (an image file by its content's digest, a tab's controls by their
fields); anything else, and a call that raises, is computed every time.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..cache import LRU
from ..core.handle import file_digest
from ..errors import ImageError

F = TypeVar("F", bound=Callable[..., Any])


def _arg_key(value: Any) -> Any:
    """A hashable stand-in for one view argument; ``_UNCACHEABLE`` when there is none."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        path = Path(value)
        try:
            if path.is_file():  # an image file: its content is its identity (the decode memo's key too)
                return ("image", file_digest(path))
        except (OSError, ValueError):
            pass
        except ImageError:
            return _UNCACHEABLE  # too large or unreadable: the view itself says so
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a tab's controls: by their values
        keys = tuple(_arg_key(getattr(value, f.name)) for f in dataclasses.fields(value))
        return _UNCACHEABLE if any(k is _UNCACHEABLE for k in keys) else (type(value).__qualname__, keys)
    if isinstance(value, (list, tuple, dict)):
        try:
            return ("json", json.dumps(value, sort_keys=True))
        except (TypeError, ValueError):
            return _UNCACHEABLE
    return _UNCACHEABLE


_UNCACHEABLE = object()


def _fresh(out: Any) -> Any:
    """A cached result with new copies of its ``gr.update`` dicts.

    Gradio's ``postprocess_update_dict`` pops ``"value"`` out of every update it sends, so
    a cached update handed out twice would arrive the second time without its value
    (a panel stayed empty on page load for that reason).
    """
    if isinstance(out, dict):
        return dict(out)
    if dataclasses.is_dataclass(out) and not isinstance(out, type):  # a tab's views
        return dataclasses.replace(out, **{f.name: dict(v) for f in dataclasses.fields(out)
                                           if isinstance(v := getattr(out, f.name), dict)})
    if isinstance(out, (tuple, list)) and any(isinstance(o, dict) for o in out):
        return type(out)(dict(o) if isinstance(o, dict) else o for o in out)
    return out  # nothing Gradio mutates: the cached object itself


def memo_view(maxsize: int = 8) -> Callable[[F], F]:
    """Keep the outputs of a deterministic view function for its last ``maxsize`` argument sets.

    Every visitor's page load computes the same default views (same example image, same
    controls); with this, the first visitor pays and the rest read the result. Arguments
    key the cache by value; an image path by its file's path, size and modification
    time. Calls with any other kind of argument, and calls that raise, are not cached.
    Returned objects are shared between sessions, so the function must return fresh
    objects that nobody mutates afterwards (arrays, figures, frozen dataclasses); ``gr.update``
    dicts, which Gradio does mutate, are copied on every call.
    """
    def decorate(fn: F) -> F:
        cache: LRU[tuple, Any] = LRU(maxsize, name=f"memo_view:{fn.__module__}.{fn.__qualname__}")

        @functools.wraps(fn)
        def wrapper(*args: Any) -> Any:
            key = tuple(_arg_key(a) for a in args)
            if any(k is _UNCACHEABLE for k in key):
                return fn(*args)
            out = cache.get(key, _UNCACHEABLE)
            if out is _UNCACHEABLE:
                out = fn(*args)
                cache.put(key, out)
            return _fresh(out)

        wrapper.cache_clear = cache.clear  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
