"""Which waiting call starts when a slot frees: a client flooding the queue never takes a group's last slot.

Gradio's queue starts the first waiting event of a concurrency group with a free slot
(``Queue.get_events``); the fair order (:func:`.limits.fair_insert`) puts a visitor's call first. But
on a public host five flooding addresses (each holding eight to sixteen cheap calls,
resubmitted as soon as answered) kept both view slots busy: the visitor's call waited for one of
theirs to end, then ran beside the other.

So a client **flooding** -- holding :data:`FLOOD_HELD` or more requests queued or running, in any
group (:func:`.limits.held`) -- takes at most ``limit - 1`` slots of a group with a limit above one: the
last slot stays for the calls of clients that are not flooding, which start at once. Nothing is
refused and nothing else is reordered: between clients that do not flood (and in a group of one slot)
Gradio's own choice holds. Installed by :func:`vitviz.ui.serve.install_process`; an app without
vitviz's caps is untouched.
"""

from __future__ import annotations

import itertools
from typing import Any

from .limits import _fair_key, held

#: Requests a client holds (queued or running, every group) from which it floods. A page's own action
#: holds fewer (a new photo starts the tab's view and its parts, one to three at once); five flooding
#: addresses of the hostile-mix load test held 8 to 16 each, up to ``VITVIZ_CLIENT_QUEUE``.
FLOOD_HELD = 4
#: Which group is looked at first, in turn.
_TURN = itertools.count()


def flooding(counts: dict[str, int]) -> set[str]:
    """The clients (:func:`.limits._fair_key`) of ``counts`` (:func:`.limits.held`) holding :data:`FLOOD_HELD`
    or more requests."""
    return {k for k, n in counts.items() if n >= FLOOD_HELD}


def pick(queue: Any) -> tuple[list, bool, str] | None:
    """The next event to start, as ``Queue.get_events`` returns it (``([event], batch, group)``), or None.

    In each group with a free slot (the groups taken in turn, as Gradio's own shuffle does), the first waiting
    event, except that a flooding client's event does not take the last free slot of a group with a limit
    above one.

    Args:
        queue: Gradio's ``Queue`` (its groups ``event_queue_per_concurrency_id``: ``EventQueue`` with
            ``queue``, ``concurrency_limit`` and ``current_concurrency``).
    """
    flood: set[str] | None = None
    groups = list(queue.event_queue_per_concurrency_id.items())
    start = next(_TURN) % len(groups) if groups else 0
    for group, events in groups[start:] + groups[:start]:
        limit, busy = events.concurrency_limit, events.current_concurrency
        if not events.queue or (limit is not None and busy >= limit):
            continue
        last = limit is not None and limit > 1 and busy == limit - 1
        if last and flood is None:
            flood = flooding(held(queue))
        for event in list(events.queue):
            if last and _fair_key(event) in flood:
                continue
            batch = bool(getattr(event.fn, "batch", False))
            chosen = [event] + ([e for e in events.queue if e is not event and e.fn == event.fn]
                                [:max(0, event.fn.max_batch_size - 1)] if batch else [])
            for e in chosen:
                events.queue.remove(e)
            return chosen, batch, group
    return None


_INSTALLED = False


def install() -> None:
    """Replace ``gradio.queueing.Queue.get_events`` by :func:`pick` for apps with vitviz's caps (idempotent)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from gradio import queueing

    original = queueing.Queue.get_events

    def get_events(self: Any) -> Any:
        if getattr(self.blocks, "vitviz_limits", None) is None:
            return original(self)
        return pick(self)

    get_events.__wrapped__ = original  # type: ignore[attr-defined] - Gradio's own (tests/ui/test_serve_contacts.py)
    queueing.Queue.get_events = get_events
    _INSTALLED = True
