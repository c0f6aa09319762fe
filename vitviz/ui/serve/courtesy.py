"""Long work and a flood's calls give way to other visitors' views, a layer at a time.

On a public host five flooding addresses kept one view slot and the expensive slot busy:
a visitor's call started at once (:mod:`.turns`) but ran beside one of the flood's views and one of its
layer-probe fits, about 1.5 cores of work on a 2-core machine, and took 2.7 times its time alone. Caps and
turns decide *which* calls run; this module decides who gets the cores *while* they run.

A call **yields** when it is in the :data:`.limits.HEAVY` group (probes, sweeps, explanations: seconds of
work, where a pause of a tenth of a second is not felt) or when its client is flooding
(:func:`.turns.flooding`). At every **pause point** -- the start of each ``torch.nn.Module``'s forward (a
global forward pre-hook: every layer of every model) and the library's own loops
(:func:`vitviz.models.runner.pause_point`) -- a yielding call sleeps while a **priority** call runs: a
call of the view group from another client that is not flooding. Sleeping releases the interpreter's lock
and the cores, so the visitor's view runs as if alone (and on every core: :mod:`.threads`).

Nothing waits for ever: a yielding call waits at most :data:`GRACE_S` plus :data:`WAIT_PER_RUN` seconds for
every second it has run, so it keeps at least a quarter of the time however busy the views are, and a lock
it holds that a view needs is released after a bounded pause. A pause point outside a queued event (start-up,
tests, a ZeroGPU worker) costs a few microseconds and never waits. Installed by
:func:`vitviz.ui.serve.install_process` with the caps; reads the event of the running thread
(``gradio.context.LocalContext``) and the queue's running events.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

#: Seconds a yielding call may wait before it has run at all.
GRACE_S = 1.0
#: Seconds of waiting a yielding call earns for each second it runs.
WAIT_PER_RUN = 3.0
#: Seconds between two looks of a waiting call.
POLL_S = 0.004
#: Seconds a call's "yields or not" is kept before it is decided again (a client starts or stops flooding).
RECHECK_S = 0.05


@dataclass
class _Call:
    """The pause state of the event a thread runs."""

    event_id: str
    start: float
    waited: float = 0.0
    yields: bool = False
    checked: float = -1.0
    key: str = ""


_local = threading.local()


def _current() -> tuple[Any, Any] | None:
    """``(queue, event)`` of the queued event whose handler runs in this thread, or None."""
    try:
        from gradio.context import LocalContext

        blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
        if blocks is None or not event_id or getattr(blocks, "vitviz_limits", None) is None:
            return None
        queue = blocks._queue
        event = queue.event_ids_to_events.get(event_id)
    except Exception:  # noqa: BLE001 - no event context: nothing to give way for
        return None
    return None if event is None else (queue, event)


def _state(queue: Any, event: Any, now: float) -> _Call:
    """This thread's :class:`_Call` for ``event``, with ``yields`` decided at most every :data:`RECHECK_S`."""
    from .limits import HEAVY, _fair_key, held
    from .turns import flooding

    call = getattr(_local, "call", None)
    if call is None or call.event_id != event._id:
        call = _local.call = _Call(event._id, now, key=_fair_key(event))
    if now - call.checked >= RECHECK_S:
        call.yields = event.concurrency_id == HEAVY or call.key in flooding(held(queue))
        call.checked = now
    return call


def priority_running(queue: Any, key: str) -> bool:
    """True while a view-group call of a client other than ``key`` (a :func:`.limits._fair_key`), and not
    flooding, runs in ``queue``."""
    from .limits import VIEW, _fair_key, _running, held
    from .turns import flooding

    views = [e for e in _running(queue) if e.concurrency_id == VIEW and _fair_key(e) != key]
    if not views:
        return False
    flood = flooding(held(queue))
    return any(_fair_key(e) not in flood for e in views)


def yielding() -> bool:
    """True when the call running in this thread yields (heavy, or its client floods)."""
    found = _current()
    if found is None:
        return False
    return _state(*found, time.monotonic()).yields


@contextmanager
def background(queue: Any) -> Iterator[None]:
    """Work of this thread in the block (the app's warm-up) is background work for ``queue``'s events: at every
    pause point it sleeps while any event runs, so a niced thread never holds the interpreter's lock a visitor's
    call needs. It does not sleep while a thread waits for another (:func:`vitviz.cache.waiting_on_others`: a
    value this work computes, or a lock it holds, such as the attention capture's) nor longer than
    :data:`BACKGROUND_MAX_S` at one pause point."""
    _local.background = (queue,)  # a tuple: set even where there is no queue (no app to give way to)
    try:
        yield
    finally:
        _local.background = None


def in_background() -> bool:
    """True in a thread doing :func:`background` work."""
    return getattr(_local, "background", None) is not None


#: Longest sleep of background work at one pause point, in seconds.
BACKGROUND_MAX_S = 5.0
#: Seconds between two looks of sleeping background work: each look takes the interpreter's lock from a
#: visitor's call, at the lowest CPU priority (a thread that holds the lock while the kernel runs others).
BACKGROUND_POLL_S = 0.05


def _background_wait(queue: Any) -> None:
    from ...cache import waiting_on_others
    from .limits import _running

    start = time.monotonic()
    while _running(queue) and not waiting_on_others() and time.monotonic() - start < BACKGROUND_MAX_S:
        time.sleep(BACKGROUND_POLL_S)


def give_way() -> None:
    """A pause point: a yielding call sleeps while a priority call runs, within its allowance (module doc);
    background work (:func:`background`) sleeps while any call runs."""
    found = _current()
    if found is None:
        marked = getattr(_local, "background", None)
        if marked is not None and marked[0] is not None:
            _background_wait(marked[0])
        return
    queue, event = found
    start = time.monotonic()
    call = _state(queue, event, start)
    if not call.yields:
        return
    ran = start - call.start - call.waited  # seconds this call has computed so far
    allowance = GRACE_S + WAIT_PER_RUN * ran - call.waited
    now = start
    while now - start < allowance and priority_running(queue, call.key):
        time.sleep(POLL_S)
        now = time.monotonic()
    call.waited += now - start


def _forward_pre_hook(module: Any, args: Any) -> None:
    give_way()


_INSTALLED = False
_LOCK = threading.Lock()


def install() -> None:
    """Make every module's forward and every library pause point a pause point (idempotent)."""
    global _INSTALLED
    with _LOCK:
        if _INSTALLED:
            return
        import torch

        from ...models import runner

        torch.nn.modules.module.register_module_forward_pre_hook(_forward_pre_hook)
        runner.install_pause(give_way)
        _INSTALLED = True
