"""Intra-op threads of each model call, by its cost class: expensive work leaves a core to the views.

Every model call (:func:`vitviz.models.runner.runs_model`) used ``VITVIZ_THREADS`` intra-op threads
(the CPU count), whoever made it. On a 2-core host a visitor's view computed beside another visitor's
layer probes or sweep then ran four threads on two cores, and torch's threads waiting for a busy core
cost more than they gave: on this VM under load a ViT-S forward took 1.2 s on 2 threads and 0.25-0.4 s
on 1 (bench/README.md, the hostile-mix load test). Installed by :func:`vitviz.ui.serve.install_process` through the
runner seam (not when ZeroGPU's runner is installed: the model then runs on a GPU), each marked call
runs on :func:`share` threads:

* a heavy call (:attr:`.costs.Cost.HEAVY`) (probes, sweeps, explanations, curves: seconds to minutes,
  so its threads cannot wait for the next visitor to come): every core while no other model call runs,
  else ``cores - 1`` (at least 1), so one core stays for the views. It is decided again at every module's
  forward (:func:`rebalance`, a global forward pre-hook), so a view that starts meanwhile finds its core
  within one layer. (A fixed ``cores - 1`` would leave a core idle when nothing else runs: Explain's
  curves of a new photo took 5.2 s in the page on one of two idle cores against 3.2 s on two.)
* a live frame (:attr:`.costs.Cost.LIVE`: a stream's frames come one after another, each 30-60 ms,
  and the next one's decoding, the answer's encoding and the page share the cores with it): one thread.
  mae-tiny's frame took 28 ms on one thread and 64 ms on two at load 7.7 on this 2-core VM, 57 and 531 ms
  at load 12 (``OMP_WAIT_POLICY=PASSIVE``; ``bench/live.py``);
* a view (tens of milliseconds each): every core when no other model call is running, else its
  share of them (``cores // calls``, at least 1).

The class is that of the handler's call running in the thread (:func:`.costs.current`); a call outside an
event (start-up, tests) is a view. torch keeps the intra-op thread
count per thread (OpenMP's per-thread setting and MKL's local one), so one call's setting never changes
another's; it is restored after the call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from typing import Any

from . import runner
from .costs import Cost, current

_RUNNING: dict[int, Cost] = {}  # thread id -> class of the model call it runs
_LOCK = threading.Lock()
_HEAVY_CALL = threading.local()  # .cores: VITVIZ_THREADS while this thread runs a heavy model call, else 0


def share(kind: Cost, others: Collection[Cost], cores: int) -> int:
    """Intra-op threads of a model call of class ``kind`` while calls of ``others`` run in other threads.

    Args:
        kind: the call's cost class.
        others: the classes of the model calls running in other threads.
        cores: the threads one call may use at most (``VITVIZ_THREADS``).
    """
    cores = max(1, int(cores))
    if kind is Cost.HEAVY:
        return max(1, cores - 1) if others else cores
    if kind is Cost.LIVE:
        return 1
    return max(1, cores // (1 + len(others)))


def shared(execute: Callable[[Callable[..., Any], tuple, dict], Any]) -> Callable[[Callable[..., Any], tuple, dict], Any]:
    """The runner decorator (:func:`vitviz.models.runner.install`): ``execute`` on :func:`share` threads."""

    def run(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        import torch

        from .. import settings

        me, kind = threading.get_ident(), current()
        with _LOCK:
            _RUNNING[me] = kind
            others = [k for t, k in _RUNNING.items() if t != me]
        previous, cores = torch.get_num_threads(), settings.threads()
        torch.set_num_threads(share(kind, others, cores))
        _HEAVY_CALL.cores = cores if kind is Cost.HEAVY else 0
        try:
            return execute(fn, args, kwargs)
        finally:
            _HEAVY_CALL.cores = 0
            torch.set_num_threads(previous)
            with _LOCK:
                _RUNNING.pop(me, None)

    return run


def rebalance() -> None:
    """A heavy call's threads decided again (:func:`share`), at the start of every module's forward: every core
    while it runs alone, one fewer while another model call runs. Returns at once in any other thread."""
    cores = getattr(_HEAVY_CALL, "cores", 0)
    if not cores:
        return
    import torch

    me = threading.get_ident()
    with _LOCK:
        want = share(Cost.HEAVY, [k for t, k in _RUNNING.items() if t != me], cores)
    if torch.get_num_threads() != want:
        torch.set_num_threads(want)


def _rebalance_hook(module: Any, args: Any) -> None:
    rebalance()


_HOOKED = False


def install() -> None:
    """Run every model call on its share of the cores (replaces any runner: call it where ZeroGPU's is not
    installed, as :func:`vitviz.ui.serve.install_process` does)."""
    global _HOOKED
    runner.install(shared)
    with _LOCK:
        if not _HOOKED:
            import torch

            torch.nn.modules.module.register_module_forward_pre_hook(_rebalance_hook)
            _HOOKED = True
