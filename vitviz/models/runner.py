"""Where model calls run: the one seam a host uses to run every model forward pass elsewhere.

Each library function that runs a model's forward (or backward) pass and returns NumPy arrays
or CPU tensors is marked :func:`runs_model`. By default a marked function is simply called. A
host that lends its accelerator one call at a time -- Hugging Face ZeroGPU, where CUDA exists
only inside functions decorated with ``@spaces.GPU`` -- installs a decorator with :func:`install`
(``vitviz.ui.serve.zerogpu`` does, when the ``spaces`` package is importable). Every marked call
then runs as :func:`execute` wrapped by that decorator, once: a marked function called from
inside another one runs directly. What is done with the results -- panels, figures, PCA --
stays outside, on the CPU.

A marked function takes the loaded model and plain data (arrays, numbers, strings), moves its
inputs to the model's device itself, and returns results on the CPU; :func:`execute` moves any
tensor left on a device to the CPU (a ZeroGPU worker sends its results back pickled).

A long computation of the library calls :func:`pause_point` between its steps (a layer's probes, ...):
nothing by default; a host may install what it does there with :func:`install_pause`.

A host may also send marked calls to other processes: :func:`install_dispatch` takes a
``submit(fn, args, kwargs, cost) -> result`` (:class:`vitviz.models.workers.Workers` is one; a cluster's
actors can be another) and the function that tells a call's cost class (``view``, ``heavy``, ``live``);
code that knows its class can also say it with :func:`cost`. ``submit`` runs a call it cannot send
through :func:`run_here`. Nothing is dispatched by default: the library and its tests run every call in
their own process.

A function that runs marked calls and then works on their results -- draws a view's pictures, assembles
panels -- is marked :func:`runs_with_model`: a dispatch receives it whole, so that work happens in the worker
beside the model and only its small result crosses back (the host's own CPU, shared with every other
visitor, does none of it); without a dispatch it is called directly, and its marked calls go through the
installed runner as usual, so the work on their results stays out of a runner's lease of an accelerator.

The installed decorator, dispatch and pause are the module's mutable state, each set by one explicit call
under a lock (``install(None)``, ``install_dispatch(None)``, ``install_pause(None)`` remove them).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_LOCK = threading.Lock()
_runner: Callable[..., Any] | None = None
_pause: Callable[[], None] | None = None
_submit: Callable[[Callable[..., Any], tuple, dict, str], Any] | None = None
_cost_of: Callable[[], str] | None = None
_cost: contextvars.ContextVar[str | None] = contextvars.ContextVar("vitviz_model_cost", default=None)
_local = threading.local()


def install(decorator: Callable[[Callable[..., Any]], Callable[..., Any]] | None) -> None:
    """Run every :func:`runs_model` call as ``decorator(execute)`` (None: call them directly again).

    Args:
        decorator: e.g. ``spaces.GPU(duration=60)``; applied once, to :func:`execute`.
    """
    global _runner
    with _LOCK:
        _runner = None if decorator is None else decorator(execute)


def install_dispatch(submit: Callable[[Callable[..., Any], tuple, dict, str], Any] | None,
                     cost_of: Callable[[], str] | None = None) -> None:
    """Send every :func:`runs_model` call to ``submit(fn, args, kwargs, cost)`` (None: run them here again).

    Args:
        submit: runs the marked call ``fn`` (picklable by name) elsewhere and returns its result, or runs
            it here with :func:`run_here`.
        cost_of: the cost class of a call made now, when no :func:`cost` block says it (default ``view``).
    """
    global _submit, _cost_of
    with _LOCK:
        _submit, _cost_of = submit, cost_of


@contextlib.contextmanager
def cost(c: str) -> Iterator[None]:
    """Marked calls made inside this block are of cost class ``c`` (``view``, ``heavy``, ``live``)."""
    token = _cost.set(c)
    try:
        yield
    finally:
        _cost.reset(token)


def current_cost() -> str:
    """The cost class of a marked call made now: a :func:`cost` block's, else the installed ``cost_of``'s,
    else ``view``."""
    said = _cost.get()
    if said is not None:
        return said
    cost_of = _cost_of
    return cost_of() if cost_of is not None else "view"


def dispatching() -> bool:
    """True while marked calls are sent to a ``submit`` (:func:`install_dispatch`)."""
    return _submit is not None


def _weights_here(args: tuple, kwargs: dict) -> None:
    """A call run in this process reads its models' weights: a model held without them
    (:class:`~vitviz.models.loaded.DeferredModel`) loads them now, so that its ``architecture`` is its module."""
    for value in (*args, *kwargs.values()):
        if getattr(value, "loaded", True) is False:
            value.module  # noqa: B018 - the read loads it


def run_here(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """Run the marked call ``fn`` in this process: through the installed runner, or :func:`execute`."""
    _weights_here(args, kwargs)
    runner = _runner
    return runner(fn, args, kwargs) if runner is not None else execute(fn, args, kwargs)


def install_pause(pause: Callable[[], None] | None) -> None:
    """Call ``pause()`` at every :func:`pause_point` (None: nothing again)."""
    global _pause
    with _LOCK:
        _pause = pause


def pause_point() -> None:
    """A point between two steps of a long computation where a host may let other work run first
    (:func:`install_pause`); returns at once when nothing is installed."""
    pause = _pause
    if pause is not None:
        pause()


def installed() -> bool:
    """True while a runner is installed (:func:`install`)."""
    return _runner is not None


def inside() -> bool:
    """True in a thread that is running a marked call through the installed runner."""
    return getattr(_local, "depth", 0) > 0


def to_cpu(value: Any) -> Any:
    """``value`` with every tensor on a device moved to the CPU: tensors, tuples, lists, dicts and
    dataclass fields, looked through; anything else as is."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu() if value.device.type != "cpu" else value
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(to_cpu(v) for v in value)
    if isinstance(value, list):
        return [to_cpu(v) for v in value]
    if isinstance(value, dict):
        return {k: to_cpu(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        moved = {f.name: to_cpu(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        if any(moved[k] is not getattr(value, k) for k in moved):
            return dataclasses.replace(value, **moved)
    return value


def execute(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """Run one marked call: ``fn(*args, **kwargs)`` with its results on the CPU. This is the function
    the installed decorator wraps (on ZeroGPU it runs in the GPU worker); ``fn`` is the marked, module-level
    function, so a worker receives it by name."""
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        return to_cpu(fn(*args, **kwargs))
    finally:
        _local.depth -= 1


def runs_with_model(fn: F) -> F:
    """Mark a function that runs marked calls and works on their results: sent whole to the installed dispatch
    (:func:`install_dispatch`) like a marked call, with the cost class of a call made now; else, or from inside a
    marked call, called directly (never through the installed runner: only its marked calls go there).

    Its arguments are what a marked call's are (a loaded model, plain data), so a dispatch can name them."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        submit = _submit
        if submit is None or inside():
            _weights_here(args, kwargs)
            return fn(*args, **kwargs)
        return submit(call, args, kwargs, current_cost())

    return call  # type: ignore[return-value]


def runs_model(fn: F) -> F:
    """Mark a function that runs a model's forward or backward pass: it is sent to the installed dispatch
    (:func:`install_dispatch`), else runs through the installed runner (:func:`install`), or directly when
    neither is installed or when called from inside a marked call."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if inside():
            _weights_here(args, kwargs)
            return fn(*args, **kwargs)
        submit = _submit
        if submit is not None:
            return submit(call, args, kwargs, current_cost())
        _weights_here(args, kwargs)
        runner = _runner
        if runner is None:
            return fn(*args, **kwargs)
        return runner(call, args, kwargs)

    return call  # type: ignore[return-value]


@runs_model
def on_module(model: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(model.module, *args)`` where the model's weights are: ``model`` a loaded model, ``fn`` a module-level
    function of its torch module (a table it holds, one patch's embedding, a demonstration's forward passes).

    With model workers the app's process holds a model without its weights
    (:class:`~vitviz.models.loaded.DeferredModel`); reading ``model.module`` there would load them, so code that
    needs a model's numbers asks through this call, which runs in a worker (or here, without a dispatch)."""
    return fn(model.module, *args)


def _nothing(module: Any) -> None:
    return None


def resident(model: Any) -> None:
    """Have ``model``'s weights in memory where its calls run (a worker, or here) and compute nothing: what a
    host's warm-up asks, so that a first view does not wait for the load (:func:`on_module`)."""
    on_module(model, _nothing)
