"""Helpers shared by the tabs: turning library errors into messages for people."""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import gradio as gr

from ..errors import ImageError, ModelUnavailable
from ..models.registry import ASSETS

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("vitviz.ui")

EXAMPLES_DIR = ASSETS / "examples"


def example_images() -> list[str]:
    """Paths of the bundled example photos, sorted."""
    return sorted(str(p) for p in Path(EXAMPLES_DIR).glob("*.jpg")) + sorted(
        str(p) for p in Path(EXAMPLES_DIR).glob("*.png")
    )


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


def as_seed(value: Any) -> int:
    """A seed from a UI number: a non-negative integer or ``ValueError``."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"the seed must be a whole number, got {value!r}") from None
    if not math.isfinite(f) or f != int(f) or f < 0 or f >= 2**63:
        raise ValueError(f"the seed must be a whole number between 0 and 2^63-1, got {value!r}")
    return int(f)


def require_image(image: Any) -> Any:
    """Raise a friendly error when no image was given."""
    if image is None or (isinstance(image, str) and not image):
        raise gr.Error("Drop an image first (or pick one of the examples).")
    return image


class LatestCall:
    """Drops results that a newer call from the same browser session has superseded.

    A view can be requested by several controls whose events run concurrently (change
    the seed, then move the slider at once): the older call may finish last and would
    overwrite the newer panels with stale ones. Each call takes a ticket on entry;
    before returning, a call whose ticket is no longer its session's newest returns
    ``gr.skip()`` for every output instead. The newest call always shows its result.
    Calls without a session (the HTTP API) are never dropped. Thread-safe; remembers
    at most ``capacity`` sessions.
    """

    def __init__(self, capacity: int = 4096) -> None:
        from collections import OrderedDict
        from threading import Lock

        self.capacity = capacity
        self._newest: OrderedDict[str, int] = OrderedDict()
        self._counter = 0
        self._lock = Lock()

    def begin(self, session: str | None) -> int:
        """A ticket for a call from ``session``, newer than every earlier one."""
        with self._lock:
            self._counter += 1
            if session:
                self._newest[session] = self._counter
                self._newest.move_to_end(session)
                while len(self._newest) > self.capacity:
                    self._newest.popitem(last=False)
            return self._counter

    def superseded(self, session: str | None, ticket: int) -> bool:
        """True when a newer call from ``session`` began after ``ticket``'s."""
        if not session:
            return False
        with self._lock:
            return self._newest.get(session, ticket) > ticket


def session_of(request: gr.Request | None) -> str | None:
    """The browser session of a request (``None`` for API calls without one)."""
    return getattr(request, "session_hash", None) if request is not None else None
