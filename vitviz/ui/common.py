"""Helpers shared by the tabs: turning library errors into messages for people, and
keeping the outputs of deterministic views for the next visitor."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import gradio as gr

from ..assets import example_images
from ..cache import LRU
from ..errors import ImageError, ModelUnavailable
from ..views.common import as_seed, require_image

__all__ = ["as_seed", "example_images", "memo_view", "require_image", "user_errors"]

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("vitviz.ui")


def user_errors(fn: F) -> F:
    """Map library errors to ``gr.Error`` so the user reads a sentence, not a traceback.

    Unexpected exceptions are logged and reported generically; the server stays up.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except ImageError as exc:
            raise gr.Error(f"Image problem: {exc}") from None
        except ModelUnavailable as exc:
            raise gr.Error(f"Model unavailable: {exc}") from None
        except ValueError as exc:
            raise gr.Error(str(exc)) from None
        except Exception:  # noqa: BLE001 - keep the server up, log for the operator
            log.exception("unexpected error in %s", fn.__name__)
            raise gr.Error("Something went wrong while computing this view; please try another input.") from None

    return wrapper  # type: ignore[return-value]


def _arg_key(value: Any) -> Any:
    """A hashable stand-in for one view argument; ``_UNCACHEABLE`` when there is none."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        path = Path(value)
        try:
            if path.is_file():  # an image file: its identity is its path, size and modification time
                st = path.stat()
                return ("file", str(path.resolve()), st.st_size, st.st_mtime_ns)
        except (OSError, ValueError):
            pass
        return value
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
    (the Patches tab's sin-cos panel stayed empty on page load for that reason).
    """
    if isinstance(out, dict):
        return dict(out)
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
        cache: LRU[tuple, Any] = LRU(maxsize)

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
