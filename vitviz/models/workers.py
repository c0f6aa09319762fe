"""Model work in worker processes, by cost class: a pool for views, one heavy worker, one live worker, one
worker for a crowding visitor's views.

:class:`Workers` is what :func:`vitviz.models.runner.install_dispatch` takes: its :meth:`Workers.submit`
``(fn, args, kwargs, cost) -> result`` runs one marked call (:func:`~vitviz.models.runner.runs_model`) in a
worker process chosen by the call's cost class:

* ``view`` -- a pool of ``VITVIZ_VIEW_WORKERS`` processes (ordinary views: tens of milliseconds each);
* ``heavy`` -- one process at the lowest OS priority (``os.nice(19)``): sweeps, probes, explanations,
  curves. Another process's view then gets the cores first, which no scheduling of threads inside one
  interpreter can give. A call on a large model (:func:`~vitviz.models.loading.is_large`) runs here
  whatever its class, so MAE-Large and MAE-Huge are loaded in this worker only;
* ``live`` -- one process for the live camera's frames, on one thread;
* ``crowded`` -- one process at the lowest OS priority for the views of a visitor who has other calls in
  flight (the host says which: ``vitviz.ui.serve.admission``): a flood of one address's views then takes
  the cores only when nobody else's view wants them, and never stands in the view pool's line.

What crosses the boundary is plain: a loaded model (or one of its modules) goes as a :class:`ModelRef` --
registry name, random-weights flag, kernel mode, device, and which weights (its weight file: a worker that
finds other weights under that name refuses, rather than answering from them) --
and arrays, numbers and strings go as they are; the result comes back pickled, on the CPU. A worker keeps
the models it loaded in its own :data:`vitviz.models.loading.CACHE`, bounded by ``VITVIZ_MAX_MODELS``
like the host process's. A dict argument the call fills in place (Explain's ``known`` softmax rows) is
sent back and merged into the caller's dict, so the call means the same in both places.

A call whose model is not in the host's cache of loaded models (a module built by hand, a checkpoint
opened by path), or with an argument that cannot be pickled, cannot be sent to a worker: it runs in this process, through the installed runner
(:func:`vitviz.models.runner.run_here`).

A worker that dies (killed, out of memory) fails the calls it was running with :class:`WorkerCrashed`, a
message that says so; the next call starts a fresh worker. Processes start with ``spawn`` (no copy of the
host's threads or open files, no helper socket on disk) at a class's first call; :meth:`Workers.close`
ends them all, and a worker whose host process is gone (ended by a signal, without exit handlers) ends
itself within a second. Nothing here starts at import.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import pickle
import sys
import threading
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from .. import settings

#: The cost classes a call may name; any other value is treated as ``view``.
COSTS = ("view", "heavy", "live", "crowded")

#: OS priority the heavy worker runs at (``os.nice``; 19 is the lowest).
HEAVY_NICE = 19


class WorkerCrashed(RuntimeError):
    """A worker process stopped while it ran a model call (killed, or out of memory)."""


@dataclass(frozen=True)
class ModelRef:
    """A loaded model named so another process can load the same one.

    Attributes:
        name: registry name (or a ``VITVIZ_MODELS`` name).
        random_init: random weights (the architecture only).
        kernels: kernel mode (``onednn``, ``eager``, ``int8``).
        device: ``cpu``, ``cuda:0``, ...
        weights: which weights (:attr:`~vitviz.models.loaded.LoadedModel.weights`): what a worker checks
            its own load against.
        part: ``None`` for the :class:`~vitviz.models.loading.LoadedModel` itself; else the dotted name
            of a module inside it (``""``: its whole torch module; ``blocks.3``: one block).
        large: a large model (runs in the heavy worker only).
    """

    name: str
    random_init: bool
    kernels: str
    device: str
    weights: str
    part: str | None = None
    large: bool = False


class _Unnamed(Exception):
    """An argument holds a model no :class:`ModelRef` can name."""


def _loaded_models() -> list[Any]:
    """The host's loaded models (:data:`vitviz.models.loading.CACHE`), least recent first."""
    from .loading import CACHE

    found: list[Any] = []
    CACHE.evict(lambda key, model: found.append(model) and False)  # visits every entry, drops none
    return found


def reference(value: Any) -> Any:
    """``value`` with a loaded model or torch module replaced by its :class:`ModelRef`; anything else as is.

    Raises:
        _Unnamed: a model or module that is not (part of) a model of the host's cache.
    """
    import torch

    from .loaded import DeferredModel
    from .loading import LoadedModel, is_large

    def ref(model: Any, part: str | None) -> ModelRef:
        if model.name not in _names():  # a checkpoint opened by its path
            raise _Unnamed(model.name)
        return ModelRef(model.name, bool(model.random_init), model.kernels, str(model.device), model.weights, part,
                        is_large(model.spec))

    if isinstance(value, LoadedModel):
        if not any(m is value for m in _loaded_models()):
            raise _Unnamed(value.name)
        return ref(value, None)
    if isinstance(value, torch.nn.Module):
        for model in reversed(_loaded_models()):
            if isinstance(model, DeferredModel) and not model.loaded:
                continue  # its module was never read here, so ``value`` is no part of it
            if model.module is value:
                return ref(model, "")
            for name, sub in model.module.named_modules():
                if sub is value:
                    return ref(model, name)
        raise _Unnamed(type(value).__name__)
    return value


def _names() -> set[str]:
    from .registry import model_names

    return set(model_names())


def resolve(value: Any) -> Any:
    """In a worker: the model a :class:`ModelRef` names (loaded once, then kept), or ``value`` as is.

    Raises:
        vitviz.ModelUnavailable: the weights cannot be had, or differ from those the host loaded.
    """
    if not isinstance(value, ModelRef):
        return value
    from ..errors import ModelUnavailable
    from .loading import load_model

    model = load_model(value.name, device=value.device, random_init=value.random_init, kernels=value.kernels)
    if model.weights != value.weights:
        raise ModelUnavailable(f"{value.name}: the model worker loaded other weights ({model.weights or 'random'}) "
                               f"than the app ({value.weights or 'random'}); restart the app")
    if value.part is None:
        return model
    return model.module.get_submodule(value.part) if value.part else model.module


def prepare(fn: Callable[..., Any], args: tuple, kwargs: dict, cost: str) -> tuple[bytes, str] | None:
    """What a worker receives for the marked call ``fn(*args, **kwargs)`` -- its payload for :func:`_work`
    (models as :class:`ModelRef`) -- and the cost class it runs in (a large model's call: ``heavy``); None
    when it must run in this process (a model no :class:`ModelRef` names, an argument that cannot be pickled)."""
    try:
        sent_args = tuple(reference(a) for a in args)
        sent_kwargs = {k: reference(v) for k, v in kwargs.items()}
    except _Unnamed:
        return None
    cost = cost if cost in COSTS else "view"
    if any(isinstance(v, ModelRef) and v.large for v in (*sent_args, *sent_kwargs.values())):
        cost = "heavy"
    try:
        return pickle.dumps((fn, sent_args, sent_kwargs), protocol=pickle.HIGHEST_PROTOCOL), cost
    except (pickle.PicklingError, TypeError, AttributeError):  # an argument only this process can hold
        return None


def finish(reply: bytes, args: tuple, kwargs: dict) -> Any:
    """The result of a call from a worker's ``reply`` (:func:`_work`), with the dicts it filled merged into
    the caller's ``args`` and ``kwargs``."""
    result, filled = pickle.loads(reply)
    for at, contents in filled.items():
        target = args[at] if isinstance(at, int) else kwargs[at]
        target.update(contents)
    return result


def crashed(cost: str, fn: Callable[..., Any]) -> WorkerCrashed:
    """The error of a call whose ``cost`` worker stopped while running ``fn``."""
    name = getattr(fn, "__qualname__", repr(fn))
    return WorkerCrashed(f"the {cost} model worker stopped while running {name} (killed or out of memory); "
                         f"try again: a fresh worker starts for the next request")


def shape(cost: str, views: int, threads: int, heavy_nice: int) -> tuple[int, int, int]:
    """``(workers, nice, threads)`` of a cost class: ``views`` view workers; one heavy and one crowded worker at
    ``heavy_nice``; one live worker on one thread."""
    if cost in ("heavy", "crowded"):
        return 1, heavy_nice, threads
    if cost == "live":
        return 1, 0, 1
    return max(1, views), 0, threads


def _start(nice: int, threads: int, parent: int, modules: tuple[str, ...] = ()) -> None:
    """A worker's start: its OS priority, its intra-op threads, a watch that ends it when ``parent`` (the
    host process) is gone -- a host ended by a signal runs no exit handlers, and its workers would stay -- and
    the imports of ``modules`` (the host's library modules, :func:`host_modules`): a function's first call in a
    fresh worker would otherwise wait for the imports of the views it draws with (about 1.3 s of a first
    Attention view on a 2-core machine)."""
    import importlib

    import torch

    if nice and hasattr(os, "nice"):
        os.nice(nice)
    torch.set_num_threads(max(1, threads))
    threading.Thread(target=_watch, args=(parent,), name="vitviz-parent-watch", daemon=True).start()
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - only a head start: a call that needs the module raises its error then
            pass


def _watch(parent: int, every: float = 1.0) -> None:
    """End this worker within ``every`` seconds of its parent's end (it is then re-parented)."""
    import time

    while os.getppid() == parent:
        time.sleep(every)
    os._exit(0)


def _work(payload: bytes) -> bytes:
    """In a worker: one marked call ``pickle((fn, args, kwargs))`` with its models resolved. Returns
    ``pickle((result, filled))``: ``filled`` maps the position (int) or keyword (str) of each dict argument
    the call grew to its new contents.

    Both ways go through plain :mod:`pickle` (tensors and arrays by value, read-only flags kept), never
    torch's shared-memory reductions, which pass file descriptors through a helper socket on disk."""
    from . import runner

    fn, args, kwargs = pickle.loads(payload)
    args = tuple(resolve(a) for a in args)
    kwargs = {k: resolve(v) for k, v in kwargs.items()}
    sizes = {**{i: len(a) for i, a in enumerate(args) if isinstance(a, dict)},
             **{k: len(v) for k, v in kwargs.items() if isinstance(v, dict)}}
    result = runner.execute(fn, args, kwargs)
    filled = {}
    for at, size in sizes.items():
        d = args[at] if isinstance(at, int) else kwargs[at]
        if len(d) != size:
            filled[at] = d
    return pickle.dumps((result, filled), protocol=pickle.HIGHEST_PROTOCOL)


def host_modules() -> tuple[str, ...]:
    """The library's modules this process has imported (``vitviz.*``, not its Gradio front end ``vitviz.ui``): what
    a worker imports at its start (:class:`Workers`)."""
    return tuple(sorted(n for n in list(sys.modules) if n.startswith("vitviz.") and not n.startswith("vitviz.ui")))


def _ping() -> int:
    return os.getpid()


class Workers:
    """Worker processes by cost class (see the module docstring); a process starts at its class's first call.

    Args:
        views: processes of the view pool (default ``VITVIZ_VIEW_WORKERS``).
        threads: intra-op threads of a view or heavy worker (default ``VITVIZ_THREADS``; the live worker
            runs on one).
        heavy_nice: OS priority added to the heavy worker (:data:`HEAVY_NICE`; 0: none).
        modules: modules each worker imports when it starts (:func:`host_modules`).
    """

    def __init__(self, views: int | None = None, threads: int | None = None, heavy_nice: int = HEAVY_NICE,
                 modules: tuple[str, ...] = ()) -> None:
        self.views = views if views is not None else settings.get("VITVIZ_VIEW_WORKERS")
        self.threads = threads if threads is not None else settings.threads()
        self.heavy_nice = heavy_nice
        self.modules = tuple(modules)
        self._lock = threading.Lock()
        self._pools: dict[str, concurrent.futures.ProcessPoolExecutor] = {}
        self._closed = False

    def _shape(self, cost: str) -> tuple[int, int, int]:
        """``(processes, nice, threads)`` of a class."""
        return shape(cost, self.views, self.threads, self.heavy_nice)

    def pool(self, cost: str) -> concurrent.futures.ProcessPoolExecutor:
        """The executor of a class (started now if it is not running)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the model workers were closed")
            found = self._pools.get(cost)
            if found is None:
                n, nice, threads = self._shape(cost)
                found = concurrent.futures.ProcessPoolExecutor(
                    max_workers=n, mp_context=multiprocessing.get_context("spawn"), initializer=_start,
                    initargs=(nice, threads, os.getpid(), self.modules))
                self._pools[cost] = found
            return found

    def start(self, costs: tuple[str, ...] = COSTS) -> None:
        """Start the processes of ``costs`` now (each imports torch: seconds), rather than at their first call.

        Every class's processes are asked at once and then waited for, so their imports overlap rather than
        running one class after another."""
        pings = [self.pool(cost).submit(_ping) for cost in costs for _ in range(self._shape(cost)[0])]
        for f in pings:
            f.result()

    def pids(self, cost: str) -> list[int]:
        """The process ids of a class's running workers (none when it has not started)."""
        with self._lock:
            pool = self._pools.get(cost)
            processes = getattr(pool, "_processes", None) or {}
            return sorted(p.pid for p in processes.values() if p.pid is not None)

    def submit(self, fn: Callable[..., Any], args: tuple, kwargs: dict, cost: str = "view") -> Any:
        """Run the marked call ``fn(*args, **kwargs)`` in a worker of class ``cost``; returns its result.

        A call whose model no :class:`ModelRef` can name runs here (:func:`vitviz.models.runner.run_here`).
        Exceptions of the call are raised here as they were raised there.

        Raises:
            WorkerCrashed: the worker stopped while running the call (the next call starts a fresh one).
        """
        from . import runner

        prepared = prepare(fn, args, kwargs, cost)
        if prepared is None:
            return runner.run_here(fn, args, kwargs)
        payload, cost = prepared
        pool = self.pool(cost)
        try:
            reply = pool.submit(_work, payload).result()
        except BrokenProcessPool:
            with self._lock:
                if self._pools.get(cost) is pool:
                    del self._pools[cost]
            pool.shutdown(wait=False, cancel_futures=True)
            raise crashed(cost, fn) from None
        return finish(reply, args, kwargs)

    def close(self) -> None:
        """End every worker process (waits for them; calls still queued are cancelled). Idempotent."""
        with self._lock:
            self._closed = True
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)
