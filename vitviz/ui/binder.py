"""The one binder between a tab's components and its contract: controls in by field name, views out by field name.

A tab names each component after the field it holds (``ui.image = gr.Image(...)``), and each
handler states its contract in its signature:

- its **inputs** are the components named by its parameters; a parameter typed with a
  dataclass (the tab's controls) stands for every field of it, in field order, and the
  handler receives that dataclass;
- its **outputs** are the fields of the dataclass its return annotation names (the tab's
  views), and it returns an instance of it (``gr.skip()`` in a field leaves that component alone).

So nothing is wired by tuple position::

    @dataclass
    class Query:                       # the outputs
        overlay: np.ndarray
        info: str

    @cost(model_cost(1))
    def query(image: str | None, model: str, layer: float) -> Query: ...

    ui = Binder()
    ui.image, ui.model, ui.layer = gr.Image(...), gr.Dropdown(...), gr.Slider(...)
    ui.overlay, ui.info = gr.Image(...), gr.Markdown()
    ui.layer.change(**ui.bind(query))       # any Gradio listener, .then or gr.on
    ui.endpoint(query, api_name="attention_query")

A handler's concurrency group is its :func:`~vitviz.models.costs.cost`, declared with it: every event
wired here is registered with that group's ``concurrency_id`` and ``concurrency_limit``
(:func:`listener`), each call runs as its resolved class (:func:`~vitviz.models.costs.running`), and a public endpoint's handler is named after its endpoint (the
MCP tool's name, ``python app.py --mcp``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

from ..models import costs
from .serve import inputs as inputs_checks
from .serve import limits

#: How the page's own (private) events run: the last of a burst, with a small progress mark.
QUICK: dict[str, Any] = dict(api_visibility="private", trigger_mode="always_last", show_progress="minimal")
#: Prefix of the API names of private events (a private ``swin_attention`` registered before the public one
#: pushed it to ``/swin_attention_1``).
PRIVATE_PREFIX = limits.PRIVATE_PREFIX
#: Parameter types Gradio fills itself (never a component).
_INJECTED = (gr.SelectData, gr.Request, gr.EventData)


def _is_contract(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def field_names(contract: type) -> tuple[str, ...]:
    """The field names of a contract dataclass, in order."""
    return tuple(f.name for f in dataclasses.fields(contract))


def as_outputs(value: Any) -> Any:
    """A contract instance as Gradio's outputs (a tuple in field order; one field alone as itself); anything
    else unchanged."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        values = tuple(getattr(value, name) for name in field_names(type(value)))
        return values[0] if len(values) == 1 else values
    return value


class Binder:
    """A tab's components by field name, and its handlers bound to them.

    Set a component as an attribute (``ui.model = gr.Dropdown(...)``); read it back the same way.
    A field may have two names (``ui.alias(model_name="model")``) when a public endpoint's
    parameter names differ from the tab's.

    Attributes:
        image, examples: the tab's image box and example photos, when it shares the app's image
            (:mod:`vitviz.ui.shared_image`).
        url: ``(fields, components, read)``: the fields the page's URL sets, their components, and
            ``read(state) -> {field: value}`` (:mod:`vitviz.views.urlstate`), or None.
    """

    def __init__(self) -> None:
        object.__setattr__(self, "parts", {})
        object.__setattr__(self, "url", None)

    def __setattr__(self, name: str, component: Any) -> None:
        if name == "url":
            object.__setattr__(self, name, component)
        else:
            self.parts[name] = component

    def __getattr__(self, name: str) -> Any:
        try:
            return self.parts[name]
        except KeyError:
            if name in ("image", "examples"):
                return None
            raise AttributeError(f"the tab has no component named {name!r}") from None

    def alias(self, **names: str) -> None:
        """Give fields a second name: ``alias(model_name="model")``."""
        for new, old in names.items():
            self.parts[new] = self.parts[old]

    def follow_url(self, fields: Sequence[str], read: Callable[[Any], dict[str, Any]]) -> None:
        """The page's URL sets these fields (``read(state)`` gives their values; an absent one is left alone)."""
        self.url = (tuple(fields), self.components(fields), read)

    def components(self, names: Sequence[str]) -> list[Any]:
        """The components of ``names``."""
        return [getattr(self, n) for n in names]

    def bind(self, fn: Callable[..., Any], outputs: Sequence[str] | str | None = None, quick: bool = True,
             inputs: Sequence[str] | None = None, **kwargs: Any) -> dict:
        """Keyword arguments of any Gradio listener (``.change``, ``.then``, ``gr.on``) that runs ``fn``: its
        inputs from its parameters (or ``inputs``, field names, for a library function whose parameters are
        named otherwise), its outputs from its return type (or ``outputs``, field names). A private event, :data:`QUICK` unless ``quick=False`` (Gradio's defaults); ``kwargs`` override."""
        options = {**(QUICK if quick else {"api_visibility": "private"}), **self.wiring(fn, outputs, inputs), **kwargs}
        if options.get("api_visibility") == "public" and isinstance(options.get("api_name"), str):
            _name(options["fn"], options["api_name"])
            limits.name_endpoint(options["api_name"], fn)
        elif "api_name" not in kwargs:  # a private event never takes a public endpoint's name
            options["api_name"] = limits.private_name(fn)
        return options

    def wiring(self, fn: Callable[..., Any], outputs: Sequence[str] | str | None = None,
               inputs: Sequence[str] | None = None) -> dict:
        """``fn`` (wrapped: contracts in and out, run as its cost class), ``inputs``, ``outputs`` and the concurrency
        group (:func:`listener`) of a listener that runs ``fn``."""
        target = inspect.unwrap(fn)
        params, hints = inspect.signature(target).parameters.values(), typing.get_type_hints(target)
        returned = hints.get("return")
        if _is_contract(returned):
            names = field_names(returned)
        else:
            names = (outputs,) if isinstance(outputs, str) else tuple(outputs or ())
        inputs_checks.mark_dynamic(self.components(names))  # a slider whose range this handler changes
        fields: list[str] = []  # the input components, one per field of a contract or plain parameter
        shape: list[tuple[str, Any]] = []  # per parameter: (kind, contract or default)
        flat: list[inspect.Parameter] = []
        annotations: dict[str, Any] = {}
        for p in params:
            hint = hints.get(p.name)
            if isinstance(hint, type) and issubclass(hint, _INJECTED) or isinstance(p.default, gr.Progress):
                shape.append(("injected", p.default))
                flat.append(p)
            elif _is_contract(hint):
                shape.append(("contract", hint))
                types = typing.get_type_hints(hint)
                for name in field_names(hint):
                    fields.append(name)
                    flat.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD))
                    annotations[name] = types.get(name, Any)
                continue
            else:
                shape.append(("field", None))
                fields.append(p.name)
                flat.append(p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD))
            if hint is not None:
                annotations[p.name] = hint

        @functools.wraps(fn)
        def handler(*args: Any) -> Any:
            values, given, at = [], [], 0  # given: one value per input component (what a cost reads)
            for kind, extra in shape:
                if kind == "contract":
                    n = len(dataclasses.fields(extra))
                    values.append(extra(*args[at: at + n]))
                    given += args[at: at + n]
                    at += n
                    continue
                if kind == "injected" and at >= len(args) and extra is not inspect.Parameter.empty:
                    values.append(extra)  # a trailing gr.Progress() left to its default (a direct call)
                else:
                    values.append(args[at])
                    if kind == "field":
                        given.append(args[at])
                at += 1
            with costs.running(fn, given):
                return as_outputs(fn(*values))

        handler.__signature__ = inspect.Signature(flat)  # type: ignore[attr-defined]
        handler.__annotations__ = annotations
        if inputs is not None and len(inputs) != len(fields):
            raise TypeError(f"{fn.__name__} takes {len(fields)} inputs, not {len(inputs)} ({list(inputs)})")
        return {"fn": handler, "inputs": self.components(fields if inputs is None else inputs),
                "outputs": self.components(names), **listener(fn)}

    def endpoint(self, fn: Callable[..., Any], api_name: str, outputs: Sequence[str] | str | None = None,
                 inputs: Sequence[str] | None = None, **kwargs: Any) -> Any:
        """A named API endpoint ``/API_NAME`` on the tab's components, with no trigger in the page (``gr.on``
        with an empty trigger list: no invisible button). Its parameters and returns are those of the
        components, as in the page (an image goes up as a file), which ``gr.api``'s typing would change.
        Call it inside the tab's Blocks context."""
        wired = self.wiring(fn, outputs, inputs)
        _name(wired["fn"], api_name)
        limits.name_endpoint(api_name, fn)
        return gr.on([], **{**wired, "api_name": api_name, **kwargs})


def listener(fn: Any) -> dict[str, Any]:
    """Gradio listener keywords that put ``fn``'s event in the group of its registered class
    (:func:`vitviz.models.costs.registered`)."""
    c = costs.registered(fn)
    return {"concurrency_id": costs.GROUPS[c], "concurrency_limit": costs.limits()[c]}


def _name(handler: Callable[..., Any], api_name: str) -> None:
    """Name a public endpoint's handler (a wrapper made for it) after its endpoint: Gradio's MCP server names
    each tool after its function (``python app.py --mcp``)."""
    handler.__name__ = handler.__qualname__ = api_name
