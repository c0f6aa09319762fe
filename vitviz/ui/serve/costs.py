"""Cost classes of event handlers, declared with the handler and given to Gradio when its event is registered.

Each queued event runs in the concurrency group of its handler's declared cost class, named with
Gradio's own listener keywords (``concurrency_id``, ``concurrency_limit``: :func:`listener`, which
:class:`vitviz.ui.binder.Binder` adds to every event it wires): :attr:`Cost.VIEW` (fast views,
``VITVIZ_CONCURRENCY`` at once), :attr:`Cost.HEAVY` (sweeps, probes, explanations, curves,
measurements, exports: ``VITVIZ_HEAVY_CONCURRENCY`` at once) or :attr:`Cost.LIVE` (a live-camera
stream, which holds its slot while it runs: ``VITVIZ_LIVE_STREAMS`` at once). The class is

* declared on the handler with :func:`cost`, fixed or computed from the call's input values
  (a model not yet in memory, a photo at its own shape past a size);
* registered as the declaration's **base** class (a computed one's ``base``, VIEW unless told), since a
  group is fixed when the event is registered; a call whose computed class is heavier runs as that class
  inside its slot: its model calls go to the heavy worker process at low OS priority
  (:mod:`.model_workers`) or, in one process, on a heavy call's share of the cores (:mod:`.threads`);
* :attr:`Cost.HEAVY` for a handler that declares nothing (fail-safe).

The class of the call running in a thread is :func:`current` (set by :func:`running` around the handler).

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
    from ... import settings

    return {Cost.VIEW: settings.get("VITVIZ_CONCURRENCY"), Cost.HEAVY: settings.get("VITVIZ_HEAVY_CONCURRENCY"),
            Cost.LIVE: settings.live_limits()[0]}


def listener(fn: Any) -> dict[str, Any]:
    """Gradio listener keywords that put ``fn``'s event in the group of its registered class (:func:`registered`)."""
    c = registered(fn)
    return {"concurrency_id": GROUPS[c], "concurrency_limit": limits()[c]}


#: Prefix of the API names of private events: ``_private_<class>_<handler>`` (:func:`private_name`).
PRIVATE_PREFIX = "_private_"
_PUBLIC: dict[str, Cost] = {}  # public endpoint name -> registered class (:func:`name_endpoint`)
_SERVED: dict[int | str, Cost] = {}  # the served app's events: function index and public name -> class


def private_name(fn: Any) -> str:
    """The API name of a private event running ``fn``: its registered class in it, so the door knows the class of
    a join from the app's configuration (Gradio's ``_1``, ``_2`` for a repeated name keep the prefix)."""
    return f"{PRIVATE_PREFIX}{registered(fn).value}_{getattr(fn, '__name__', 'event')}"


def name_endpoint(api_name: str, fn: Any) -> None:
    """Remember the registered class of the public endpoint ``api_name``, which runs ``fn``."""
    _PUBLIC[api_name] = registered(fn)


def serve_events(config: dict[str, Any]) -> None:
    """Learn the served app's events (the app's configuration, ``demo.config``: each dependency's ``id``, the
    function index its queue joins name, and ``api_name``), for :func:`of_join`."""
    table: dict[int | str, Cost] = {}
    for dep in config.get("dependencies", []):
        api_name = dep.get("api_name")
        found = None
        if isinstance(api_name, str) and api_name.startswith(PRIVATE_PREFIX):
            found = next((c for c in Cost if api_name[len(PRIVATE_PREFIX):].startswith(c.value + "_")), None)
        elif isinstance(api_name, str):
            found = _PUBLIC.get(api_name)
        if found is not None:
            table[dep["id"]] = found
            table[api_name] = found
    _SERVED.clear()
    _SERVED.update(table)


def of_join(fn_index: Any, api_name: str | None = None) -> Cost | None:
    """The registered class of a queue join of the served app (:func:`serve_events`): by its function index, or
    by its API name (``/call/API``); None for an event the app's handlers did not declare."""
    key = fn_index if isinstance(fn_index, int) and not isinstance(fn_index, bool) else api_name
    return _SERVED.get(key) if isinstance(key, (int, str)) else None


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


_LOCAL = threading.local()  # .cost: the class of the call this thread runs


@contextmanager
def as_class(c: Cost) -> Iterator[Cost]:
    """The block runs as a call of class ``c`` in this thread (:func:`current`)."""
    previous = getattr(_LOCAL, "cost", None)
    _LOCAL.cost = c
    try:
        yield c
    finally:
        _LOCAL.cost = previous


def running(fn: Any, values: Sequence[Any]) -> Any:
    """The block runs as one call of ``fn`` with ``values`` (:func:`resolve`): a context manager."""
    return as_class(resolve(fn, values))


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
        from ...models.loading import is_loaded

        for p in positions:
            choice = values[p] if p < len(values) else None
            if not isinstance(choice, str) or not is_loaded(choice):
                return Cost.HEAVY
        return base

    computed.base = base  # type: ignore[attr-defined]
    return computed


def loaded_cost(*names: str, base: Cost = Cost.VIEW) -> Callable[[list[Any]], Cost]:
    """A computed cost for a handler that always uses the same models, whatever its inputs: HEAVY while
    one of ``names`` (picker values) is not in memory, ``base`` once all are."""

    def computed(values: list[Any]) -> Cost:  # noqa: ARG001 - the inputs do not change the models used
        from ...models.loading import is_loaded

        return base if all(is_loaded(n) for n in names) else Cost.HEAVY

    computed.base = base  # type: ignore[attr-defined]
    return computed


def native_cost(model_at: int, native_at: int, side_at: int) -> Callable[[list[Any]], Cost]:
    """A computed cost for a view that may take a photo at its own shape: HEAVY while the model at input
    ``model_at`` is not in memory (as :func:`model_cost`), or when the switch at ``native_at`` is on and the
    side at ``side_at`` may pass :data:`vitviz.views.native.HEAVY_PATCH_TOKENS` patch tokens (its square
    photo's grid, closed form: :func:`vitviz.compute.grid_cost.most_patch_tokens`); VIEW otherwise."""
    loaded = model_cost(model_at)

    def computed(values: list[Any]) -> Cost:
        from ...views.native import heavy

        if loaded(values) is Cost.HEAVY:
            return Cost.HEAVY
        on = values[native_at] if native_at < len(values) else None
        side = values[side_at] if side_at < len(values) else None
        return Cost.HEAVY if on is not False and (on is None or heavy(side)) else Cost.VIEW

    computed.base = Cost.VIEW  # type: ignore[attr-defined]
    return computed
