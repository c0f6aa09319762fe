"""The served app's model calls in worker processes (``VITVIZ_WORKERS=processes``) or on Ray actors
(``VITVIZ_WORKERS=ray``); by default on a public host (:func:`vitviz.settings.workers`), else off.

:func:`install` hands every marked model call (:func:`vitviz.models.runner.runs_model`) to a
:class:`vitviz.models.workers.Workers`: the call's cost class is that of the handler's call it runs for
(:func:`vitviz.models.costs.current_work`: heavy -> the heavy worker at the lowest OS priority, live or a live frame's thread
(:mod:`.frames`) -> the live worker, a view -> the view pool, a view of an address with other calls in flight ->
the crowded worker at the lowest OS priority: :mod:`.admission`). The workers start in the background when the app is built (each imports torch), and end when
the app's process exits (:func:`uninstall`, registered with :mod:`atexit`; a worker whose app was killed
ends itself). Not on ZeroGPU, whose runner runs the calls on its GPU.
"""

from __future__ import annotations

import atexit
import threading

from ... import settings
from ...models import runner
from ...models.workers import Workers, host_modules

_LOCK = threading.Lock()
_WORKERS: list[Workers] = []


def cost_of() -> str:
    """The worker class of a model call made in this thread: ``heavy``, ``live`` or ``view`` (the class of its
    handler's work: a view whose model is not in memory yet is loaded by the view worker that serves its next
    views, :func:`vitviz.models.costs.current_work`), and ``crowded`` for a view of an address with other calls
    in flight (:data:`.admission.CROWDED`: its worker runs at the lowest OS priority)."""
    from ...models.costs import Cost, current_work
    from .admission import CROWDED

    c = current_work()
    return "crowded" if c is Cost.VIEW and CROWDED.get() else c.value


def install(start: bool = True) -> Workers:
    """Send the app's model calls to worker processes (idempotent); ``start``: start them now, in the
    background. Returns the workers."""
    with _LOCK:
        if not _WORKERS:
            _WORKERS.append(_workers())
            atexit.register(uninstall)
        workers = _WORKERS[0]
    runner.install_dispatch(workers.submit, cost_of)
    if start and hasattr(workers, "connect"):
        workers.connect()  # Ray, from this (the main) thread: a local Ray ends with the thread that started it
    if start:
        threading.Thread(target=_start, args=(workers,), name="vitviz-workers-start", daemon=True).start()
    return workers


def _workers() -> Workers:
    """Ray actors where ``VITVIZ_WORKERS`` names ``ray`` (the cluster ``RAY_ADDRESS`` names, else a local one;
    :class:`vitviz.models.ray_workers.RayWorkers`, the same interface); worker processes otherwise, also when a
    caller installs them directly."""
    if settings.workers() == "ray":
        from ...models.ray_workers import RayWorkers

        return RayWorkers()  # type: ignore[return-value]
    return Workers(modules=host_modules())


def _start(workers: Workers) -> None:
    try:
        workers.start()
    except Exception:  # noqa: BLE001 - closed meanwhile, or a start that failed: the first call tries again
        pass


def uninstall() -> None:
    """Run model calls in this process again and end the workers (waits for them)."""
    with _LOCK:
        found, _WORKERS[:] = list(_WORKERS), []
    runner.install_dispatch(None)
    for workers in found:
        workers.close()
