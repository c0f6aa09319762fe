"""Cost classes of event handlers, declared with the handler and read by the queue when a request is queued.

A queued event runs in the concurrency group of its cost class: :attr:`Cost.VIEW` (fast
views, ``VITVIZ_CONCURRENCY`` at once) or :attr:`Cost.HEAVY` (sweeps, probes,
explanations, curves, measurements, exports, a model not yet in memory:
``VITVIZ_HEAVY_CONCURRENCY`` at once, and capped per client address) or :attr:`Cost.LIVE`
(a live-camera stream, which holds its slot while it runs: ``VITVIZ_LIVE_STREAMS`` at once,
one per session, :mod:`.limits`). The class is

* declared on the handler with :func:`cost`, fixed or computed from the request's
  **checked inputs** (:func:`checked_inputs`: the value of each input component, kept
  only when it is a value that component accepts -- one of a dropdown's choices, a finite
  number within a slider's range -- and ``None`` otherwise; extra values are never seen);
* never taken from the Python name of the function nor from any other value of the
  payload;
* :attr:`Cost.HEAVY` for a queued handler that declares nothing (fail-safe).

Example::

    @cost(Cost.HEAVY)
    def layer_probes(image, model): ...

    @cost(model_cost(1))          # HEAVY while the model at input 1 is not in memory
    def update_view(image, model, ratio): ...
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: Attribute of a handler that holds its declared cost.
ATTRIBUTE = "__vitviz_cost__"


class Cost(str, enum.Enum):
    """The cost class of a queued event."""

    VIEW = "view"
    HEAVY = "heavy"
    LIVE = "live"


Declared = Cost | Callable[[list[Any]], Cost]


def cost(c: Declared) -> Callable[[F], F]:
    """Decorator on an event handler: its cost class, fixed or computed from the handler's
    checked inputs (e.g. a model not yet in memory -> HEAVY).

    Args:
        c: a :class:`Cost`, or a function of the checked input values (one per input
            component, ``None`` where the value was not one the component accepts) that
            returns a :class:`Cost`.
    """
    if not isinstance(c, Cost) and not callable(c):
        raise TypeError(f"cost() takes a Cost or a function of the inputs, not {c!r}")

    def mark(fn: F) -> F:
        setattr(fn, ATTRIBUTE, c)
        return fn

    return mark


def declared(fn: Any) -> Declared | None:
    """The cost declared on ``fn`` (looking through ``functools.wraps`` wrappers), or None."""
    seen = 0
    while fn is not None and seen < 16:
        found = getattr(fn, ATTRIBUTE, None)
        if found is not None:
            return found
        fn = getattr(fn, "__wrapped__", None)
        seen += 1
    return None


def fixed(fn: Any) -> Cost:
    """The class an event is sorted into when the app is built: the declared fixed class, HEAVY for a
    computed one (until the request's inputs say otherwise) or for none."""
    found = declared(fn)
    return found if isinstance(found, Cost) else Cost.HEAVY


def checked_value(block: Any, value: Any) -> Any:
    """``value`` if it is one ``block`` (a Gradio input component) accepts as is, else None.

    Only plain values are kept: a choice of a dropdown or radio, a finite number within a
    slider's range (any finite number for a number box), a boolean for a checkbox. Files,
    images and free text are never inspected (None).
    """
    kind = type(block).__name__
    if kind in ("Dropdown", "Radio"):
        choices = {c[1] if isinstance(c, (tuple, list)) else c for c in (getattr(block, "choices", None) or ())}
        return value if isinstance(value, str) and value in choices else None
    if kind in ("Slider", "Number"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return None
        lo, hi = getattr(block, "minimum", None), getattr(block, "maximum", None)
        if kind == "Slider" and ((lo is not None and value < lo) or (hi is not None and value > hi)):
            return None
        return value
    if kind == "Checkbox":
        return value if isinstance(value, bool) else None
    return None


def checked_inputs(inputs: Sequence[Any], data: Any) -> list[Any]:
    """One checked value per input component (:func:`checked_value`); missing values are None."""
    values = list(data) if isinstance(data, (list, tuple)) else []
    return [checked_value(block, values[i] if i < len(values) else None) for i, block in enumerate(inputs)]


def resolve(fn: Any, inputs: Sequence[Any], data: Any) -> Cost:
    """The cost class of one request: ``fn``'s declaration applied to its checked inputs.

    A computed declaration that fails or returns something else counts as HEAVY.
    """
    found = declared(fn)
    if isinstance(found, Cost):
        return found
    if found is None:
        return Cost.HEAVY
    try:
        result = found(checked_inputs(inputs, data))
    except Exception:  # noqa: BLE001 - a broken declaration must not make a request cheap
        return Cost.HEAVY
    return result if isinstance(result, Cost) else Cost.HEAVY


def model_cost(*positions: int, base: Cost = Cost.VIEW) -> Callable[[list[Any]], Cost]:
    """A computed cost: HEAVY while a model picked at one of the input ``positions`` is not in memory
    (loading it is the cost), ``base`` otherwise. A position whose value is not a valid choice counts
    as not in memory."""

    def computed(values: list[Any]) -> Cost:
        from ...models.loading import is_loaded

        for p in positions:
            choice = values[p] if p < len(values) else None
            if not isinstance(choice, str) or not is_loaded(choice):
                return Cost.HEAVY
        return base

    computed.positions = positions  # type: ignore[attr-defined]
    return computed


def loaded_cost(*names: str, base: Cost = Cost.VIEW) -> Callable[[list[Any]], Cost]:
    """A computed cost for a handler that always uses the same models, whatever its inputs: HEAVY while
    one of ``names`` (picker values) is not in memory, ``base`` once all are."""

    def computed(values: list[Any]) -> Cost:  # noqa: ARG001 - the inputs do not change the models used
        from ...models.loading import is_loaded

        return base if all(is_loaded(n) for n in names) else Cost.HEAVY

    return computed


def model_positions(fn: Any) -> tuple[int, ...]:
    """Input positions at which ``fn``'s declaration (a :func:`model_cost`) reads a model choice; () if none."""
    found = declared(fn)
    return tuple(getattr(found, "positions", ())) if callable(found) and not isinstance(found, Cost) else ()


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

    computed.positions = (model_at,)  # type: ignore[attr-defined]
    return computed
