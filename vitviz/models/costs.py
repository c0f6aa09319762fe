"""Cost classes of model work: which calls are cheap views, which are heavy, which feed a live stream.

A served app runs each queued event in the concurrency group of its handler's cost class (:data:`GROUPS`,
at most :func:`limits` at once; ``vitviz.ui.binder.Binder`` gives them to Gradio when it registers the event):
:attr:`Cost.VIEW` (fast views, ``VITVIZ_CONCURRENCY`` at once), :attr:`Cost.HEAVY` (sweeps, probes,
explanations, curves, measurements, exports: ``VITVIZ_HEAVY_CONCURRENCY`` at once) or :attr:`Cost.LIVE` (a
live-camera stream, which holds its slot while it runs: ``VITVIZ_LIVE_STREAMS`` at once). The class is

* declared on the handler with :func:`cost`, fixed or computed from the call's input values
  (a model not yet in memory, a photo at its own shape past a size);
* registered as the declaration's **base** class (a computed one's ``base``, VIEW unless told), since a
  group is fixed when the event is registered; a call whose computed class is heavier runs as that class
  inside its slot: its model calls go to the heavy worker process at low OS priority
  (``vitviz.ui.serve.model_workers``, :mod:`.workers`) or, in one process, on a heavy call's share of the
  cores (:mod:`.threads`);
* :attr:`Cost.HEAVY` for a handler that declares nothing (fail-safe).

The class of the call running in a thread is :func:`current` (set by :func:`running` around the handler).
A call that is heavy only while its model is not yet in memory (:func:`model_cost`, :func:`loaded_cost`) does
the work of its base class: :func:`current_work`, by which a host whose worker processes each load their
own copy of a model sends the call (the worker that serves the model's views then loads it, once).

Example::

    @cost(Cost.HEAVY)
    def layer_probes(image, model): ...

    @cost(model_cost(1))          # HEAVY while the model at input 1 is not in memory
    def update_view(image, model, ratio): ...
"""

from __future__ import annotations

import enum
import functools
import inspect
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: Attribute of a handler that holds its declared cost.
ATTRIBUTE = "__vitviz_cost__"


class Cost(str, enum.Enum):
    """The cost class of a queued event."""

    VIEW = "view"
    HEAVY = "heavy"
    LIVE = "live"


#: Concurrency group (Gradio's ``concurrency_id``) of each cost class.
GROUPS = {Cost.VIEW: "vitviz-view", Cost.HEAVY: "vitviz-heavy", Cost.LIVE: "vitviz-live"}

Declared = Cost | Callable[[list[Any]], Cost]


def cost(c: Declared) -> Callable[[F], F]:
    """Decorator on an event handler: its cost class, fixed or computed from the call's input values
    (one per input component; e.g. a model not yet in memory -> HEAVY). A computed one may carry a
    ``base`` attribute: the class its event is registered with (VIEW if it has none). A handler of a fixed
    class runs as that class (:func:`current`) however it is wired; a computed one is resolved where it is
    wired (:class:`vitviz.ui.binder.Binder`, :func:`running`)."""
    if not isinstance(c, Cost) and not callable(c):
        raise TypeError(f"cost() takes a Cost or a function of the inputs, not {c!r}")

    def mark(fn: F) -> F:
        if not isinstance(c, Cost):
            setattr(fn, ATTRIBUTE, c)
            return fn
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def steps(*args: Any, **kwargs: Any) -> Any:
                produced = fn(*args, **kwargs)
                while True:  # each step may run in another thread: the class is set around each
                    with as_class(c):
                        try:
                            value = next(produced)
                        except StopIteration:
                            return
                    yield value

            wrapped: Any = steps
        else:

            @functools.wraps(fn)
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                with as_class(c):
                    return fn(*args, **kwargs)

        setattr(wrapped, ATTRIBUTE, c)
        return wrapped  # type: ignore[return-value]

    return mark


def declared(fn: Any) -> Declared | None:
    """The cost declared on ``fn`` (looking through ``functools.wraps`` wrappers), or None."""
    for _ in range(16):
        if fn is None:
            return None
        found = getattr(fn, ATTRIBUTE, None)
        if found is not None:
            return found
        fn = getattr(fn, "__wrapped__", None)
    return None


def registered(fn: Any) -> Cost:
    """The class ``fn``'s event is registered with: the fixed declaration, a computed one's ``base`` (VIEW
    by default), HEAVY when nothing is declared."""
    found = declared(fn)
    if found is None:
        return Cost.HEAVY
    return found if isinstance(found, Cost) else getattr(found, "base", Cost.VIEW)


def limits() -> dict[Cost, int]:
    """Calls of each class the app runs at once (``VITVIZ_CONCURRENCY``, ``..._HEAVY_CONCURRENCY``, ``..._LIVE_STREAMS``)."""
    from .. import settings

    return {Cost.VIEW: settings.get("VITVIZ_CONCURRENCY"), Cost.HEAVY: settings.get("VITVIZ_HEAVY_CONCURRENCY"),
            Cost.LIVE: settings.live_limits()[0]}


def resolve(fn: Any, values: Sequence[Any]) -> Cost:
    """The cost class of one call of ``fn`` with ``values`` (one per input component). A computed declaration
    that fails or returns something else counts as HEAVY."""
    found = declared(fn)
    if isinstance(found, Cost):
        return found
    if found is None:
        return Cost.HEAVY
    try:
        result = found(list(values))
    except Exception:  # noqa: BLE001 - a broken declaration must not make a call cheap
        return Cost.HEAVY
    return result if isinstance(result, Cost) else Cost.HEAVY


def work(fn: Any, values: Sequence[Any], resolved: Cost | None = None) -> Cost:
    """The class of the work one call of ``fn`` with ``values`` does, the loading of its models left out: a
    declaration heavier only while a model is not in memory (:func:`model_cost`, :func:`loaded_cost`) gives
    its ``base``; any other, :func:`resolve`'s class (``resolved``, when the caller has it already)."""
    found = declared(fn)
    if found is not None and not isinstance(found, Cost) and getattr(found, "loads_only", False):
        return getattr(found, "base", Cost.VIEW)
    return resolved if resolved is not None else resolve(fn, values)


_LOCAL = threading.local()  # .cost: the class of the call this thread runs; .work: the class of its work


@contextmanager
def as_class(c: Cost, work_class: Cost | None = None) -> Iterator[Cost]:
    """The block runs as a call of class ``c`` in this thread (:func:`current`), whose work is of class
    ``work_class`` (default ``c``: :func:`current_work`)."""
    previous = getattr(_LOCAL, "cost", None), getattr(_LOCAL, "work", None)
    _LOCAL.cost, _LOCAL.work = c, work_class or c
    try:
        yield c
    finally:
        _LOCAL.cost, _LOCAL.work = previous


def running(fn: Any, values: Sequence[Any]) -> Any:
    """The block runs as one call of ``fn`` with ``values`` (:func:`resolve`, :func:`work`): a context manager."""
    resolved = resolve(fn, values)
    return as_class(resolved, work(fn, values, resolved))


def current_work() -> Cost:
    """The class of the work of the call running in this thread: :func:`current`, except for a call heavy only
    because its model was not in memory, whose work is its base class (:func:`work`)."""
    return getattr(_LOCAL, "work", None) or current()


def current() -> Cost:
    """The class of the call running in this thread: set by :func:`running` (or a fixed :func:`cost`); LIVE on a
    live frame's thread (:mod:`.frames`); VIEW outside any call (start-up, tests, the library)."""
    found = getattr(_LOCAL, "cost", None)
    if found is not None:
        return found
    return Cost.LIVE if threading.current_thread().name.startswith("vitviz-live") else Cost.VIEW


def model_cost(*positions: int, base: Cost = Cost.VIEW) -> Callable[[list[Any]], Cost]:
    """A computed cost: HEAVY while a model picked at one of the input ``positions`` is not in memory
    (loading it is the cost), ``base`` otherwise."""

    def computed(values: list[Any]) -> Cost:
        from .loading import is_loaded

        for p in positions:
            choice = values[p] if p < len(values) else None
            if not isinstance(choice, str) or not is_loaded(choice):
                return Cost.HEAVY
        return base

    computed.base = base  # type: ignore[attr-defined]
    computed.loads_only = True  # type: ignore[attr-defined]
    return computed


def loaded_cost(*names: str, base: Cost = Cost.VIEW) -> Callable[[list[Any]], Cost]:
    """A computed cost for a handler that always uses the same models, whatever its inputs: HEAVY while
    one of ``names`` (picker values) is not in memory, ``base`` once all are."""

    def computed(values: list[Any]) -> Cost:  # noqa: ARG001 - the inputs do not change the models used
        from .loading import is_loaded

        return base if all(is_loaded(n) for n in names) else Cost.HEAVY

    computed.base = base  # type: ignore[attr-defined]
    computed.loads_only = True  # type: ignore[attr-defined]
    return computed

