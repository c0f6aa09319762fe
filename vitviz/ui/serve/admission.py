"""Fair admission: a cost class's queue joins enter Gradio's queue only as fast as the class runs them; the
others wait at the door and are let in least-recently-served address first.

Gradio's queue runs a concurrency group's events first come, first served. A visitor whose join arrives behind
dozens from a few flooding addresses waits for all of them (``bench/rows.py``'s rows 2 and 11: 12-14x its time
alone). So the door (:mod:`.http`) lets a join of a gated class (:data:`GATED`) into Gradio only while fewer
than the class's concurrency limit plus :data:`SLACK` of its events are *in flight* (let in and not finished);
the other joins wait here, and each free place goes to the waiting join whose address was let in longest ago
(a round over the addresses: a visitor with one call waits for at most one call of each flooding address,
never for their backlog); and a *crowding* address's join (one whose address has other events in flight or
waiting) may not take the last :data:`RESERVED` places, so a visitor with one call starts at once. Gradio's
queue then holds at most :data:`SLACK` waiting events per class, so its order no longer matters.

In flight is counted from both sides: :meth:`Admission.enter` adds an event when its join is let in (the door names
it by its event id once Gradio answers: :meth:`Admission.named`), and each run of an event (Gradio's method that
runs one, wrapped by :func:`.errors.in_sentences`, a contact) marks it running, from its inputs' checks to its
outputs, and ends it (:meth:`Admission.running`). Gradio runs a generator handler's event with one such run per
yield (the next one continues the handler's iterator): the event counts once, from its first run to the run that
ends the generator (or fails, or is cancelled); between two runs it stays in flight, and a generator whose next run
never comes (its client left between yields) stops counting after :data:`BETWEEN_S`. An event that never runs
(Gradio refused the join, or the visitor closed the page and Gradio dropped it) is given back by the door when its
join fails (:meth:`Admission.give_back`), else stops counting after :data:`UNSTARTED_S`. A waiting join re-checks
every :data:`POLL_S`, and the door lets it in anyway after :data:`MAX_WAIT_S` (a counting error can slow a class,
never stop it). A join that waits is part of the queue: past ``VITVIZ_MAX_QUEUE`` joins waiting or let in and not
started, the next is refused unless its address has none waiting (so a full queue is no refusal for a visitor who
waits for nothing: :meth:`Admission.enter`). A run with no join behind it (a direct call, MCP) counts while it
runs.

A run also learns whether its address is *crowding*: it has other calls of a gated class let in or waiting at
the door (:attr:`Run.crowded`, of :meth:`Admission.running`; :data:`CROWDED` holds it for the run's handler).
With model work in worker processes, a crowding address's views run at the lowest OS priority (:mod:`.model_workers`;
why: :mod:`vitviz.models.workers`, ``bench/rows.py``'s rows 2 and 11).
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ... import settings
from ...models.costs import GROUPS, Cost, limits

#: The classes admitted here (a live stream holds its slot for minutes: its joins have their own caps).
GATED = (Cost.VIEW, Cost.HEAVY)
#: Events of a class let into Gradio's queue beyond its concurrency limit. 0: none waits there, so the join let in
#: next runs next (1 measured a longer wait under the flood rows: 0.12 s against 0.07 s at the median).
SLACK = 0
#: Places of a class (of its concurrency limit plus :data:`SLACK`) that a crowding address's join may not take:
#: kept for a visitor with nothing else in flight, who then starts at once beside a flood (a class with one place
#: keeps none).
RESERVED = 1
#: Seconds an event let in counts before it runs: longer means it was dropped without running.
UNSTARTED_S = {Cost.VIEW: 10.0, Cost.HEAVY: 60.0}
#: Seconds a generator's event counts between one of its runs and the next (Gradio starts the next at once; longer
#: means it was dropped between yields).
BETWEEN_S = 10.0
#: Seconds between a waiting join's checks (the time passes; a dropped event stops counting).
POLL_S = 1.0
#: Seconds a join waits at most before it is let in whatever the count says.
MAX_WAIT_S = 120.0
#: Addresses remembered for the round (the least recently let in are forgotten first).
MAX_ADDRESSES = 4096
#: The class of each concurrency group (Gradio's ``concurrency_id``).
CLASSES = {group: c for c, group in GROUPS.items()}
#: Whether runs are counted (:func:`.errors.in_sentences` wraps Gradio's method that runs an event: the app's
#: ``serve.install``). Until then the door lets every join in: a count with no end would stop each class.
RUNS_COUNTED = False
#: Whether the run in this context is of a crowding address (set for the run by :func:`.errors.in_sentences`;
#: Gradio's handler thread sees the run's context).
CROWDED: contextvars.ContextVar[bool] = contextvars.ContextVar("vitviz_crowded", default=False)
FULL_MESSAGE = "The server is busy with other visitors' requests: try again in a minute."


@dataclass
class _Waiter:
    address: str
    arrived: float
    future: asyncio.Future  # of the event loop the join waits in
    token: int | None = None  # set when let in


@dataclass
class _Between:
    """A generator's event between two of its runs: its token, since when, and whether its address crowds."""

    token: int
    since: float
    crowded: bool


@dataclass
class _Class:
    """One gated class: events let in and not running (token -> when), running (token), generators between two
    runs, joins waiting."""

    unstarted: dict[int, float] = field(default_factory=dict)
    named: dict[str, int] = field(default_factory=dict)  # event id -> its token, while unstarted
    running: set[int] = field(default_factory=set)
    between: dict[str, _Between] = field(default_factory=dict)  # event id -> its generator's run, between yields
    waiting: list[_Waiter] = field(default_factory=list)


@dataclass
class Run:
    """One run of an event, as :meth:`Admission.running` counts it.

    Attributes:
        crowded: whether the run's address is crowding (it has other events let in, running or waiting).
        goes_on: set by the block when the run is one yield of a generator whose next yield Gradio runs next: the
            event then stays in flight after the block, until the run that ends the generator.
    """

    crowded: bool = False
    goes_on: bool = False


class Refused(Exception):
    """The queue is full (``VITVIZ_MAX_QUEUE``): the join is refused with :data:`FULL_MESSAGE`."""


class Admission:
    """The door's admission of queue joins (the module's text); thread-safe (handlers run in threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.classes = {c: _Class() for c in GATED}
        self.last: dict[str, float] = {}  # address -> when its last join was let in (insertion-ordered)
        self.owners: dict[int, str] = {}  # token let in and not ended -> its address
        self._tokens = itertools.count(1)

    async def enter(self, c: Cost | None, address: str) -> int | None:
        """Wait until a join of class ``c`` from ``address`` may enter Gradio's queue; its token (for
        :meth:`give_back`), or None for a class not gated. Raises :class:`Refused` when the queue is full.
        Cancelled (the client left), it gives its place back."""
        if c not in self.classes or not RUNS_COUNTED:
            return None
        now = time.monotonic()
        with self.lock:
            self._expire(now)
            if self._queued() >= settings.get("VITVIZ_MAX_QUEUE") and any(
                    w.address == address for state in self.classes.values() for w in state.waiting):
                raise Refused(FULL_MESSAGE)  # a full queue takes one more join of an address with none waiting
            state = self.classes[c]
            waiter = _Waiter(address, now, asyncio.get_running_loop().create_future())
            state.waiting.append(waiter)
            self._release(c, now)  # room (and its turn): let in at once
            if waiter.token is not None:
                return waiter.token
        try:
            while True:
                try:
                    return await asyncio.wait_for(asyncio.shield(waiter.future), POLL_S)
                except (TimeoutError, asyncio.TimeoutError):
                    now = time.monotonic()
                    with self.lock:
                        self._expire(now)
                        self._release(c, now)
                        if waiter.token is None and now - waiter.arrived > MAX_WAIT_S:
                            state.waiting.remove(waiter)
                            return self._let_in(c, address, now)
                        if waiter.token is not None:
                            return waiter.token
        except BaseException:
            with self.lock:
                if waiter in state.waiting:
                    state.waiting.remove(waiter)
                elif waiter.token is not None:
                    state.unstarted.pop(waiter.token, None)
                    self.owners.pop(waiter.token, None)
                    self._release(c, time.monotonic())
            raise

    def give_back(self, c: Cost | None, token: int | None) -> None:
        """The join of ``token`` did not enter Gradio's queue (refused, failed): its place goes to the next."""
        if token is None or c not in self.classes:
            return
        with self.lock:
            state = self.classes[c]
            self.owners.pop(token, None)
            if state.unstarted.pop(token, None) is not None:
                state.named = {e: t for e, t in state.named.items() if t != token}
                self._release(c, time.monotonic())

    def named(self, c: Cost | None, token: int | None, event_id: str) -> None:
        """Gradio answered the join of ``token`` with ``event_id`` (its run is then found by that id)."""
        if token is None or c not in self.classes:
            return
        with self.lock:
            state = self.classes[c]
            if token in state.unstarted:
                state.named[event_id] = token

    @contextmanager
    def running(self, group: str | None, event_id: str | None = None, continued: bool = False) -> Iterator[Run]:
        """The block is one run of an event of concurrency group ``group``, and counts as running until it ends.
        The event is, first, a generator's event ``event_id`` between two runs (``continued``: the run goes on
        with the handler's iterator); else the event let in as ``event_id``; else (a first run) the oldest of
        its class not running; else one with no join behind it (a continued run never takes another event's
        place). A group not gated counts nothing. Yields the :class:`Run`; when the block sets its ``goes_on``
        and ends without an exception, the event (with an id) stays in flight for its next run."""
        run = Run()
        with self.lock:
            c, token = self._started(group, event_id, continued, run)
        try:
            yield run
        except BaseException:
            run.goes_on = False  # failed or cancelled: the generator ends here
            raise
        finally:
            if c is not None:
                with self.lock:
                    state = self.classes[c]
                    state.running.discard(token)
                    if run.goes_on and event_id is not None:
                        state.between[event_id] = _Between(token, time.monotonic(), run.crowded)
                    else:
                        self.owners.pop(token, None)
                        self._release(c, time.monotonic())

    def _started(self, group: str | None, event_id: str | None, continued: bool,
                 run: Run) -> tuple[Cost | None, int]:
        """The class and token of a run starting now (:meth:`running`; the lock held), marked running; sets
        ``run.crowded``."""
        if continued and event_id is not None:
            for c, state in self.classes.items():
                held = state.between.pop(event_id, None)
                if held is not None:
                    state.running.add(held.token)
                    run.crowded = held.crowded
                    return c, held.token
        found = next(((c, s.named.pop(event_id)) for c, s in self.classes.items()
                      if event_id is not None and event_id in s.named), None)
        c = found[0] if found else CLASSES.get(group or "")
        if c not in self.classes:
            return None, 0
        state = self.classes[c]
        if found and found[1] in state.unstarted:
            token = found[1]
        else:  # a first run takes the oldest let in; a continued one never takes another event's place
            token = None if continued else min(state.unstarted, key=state.unstarted.__getitem__, default=None)
        if token is None:
            token = next(self._tokens)
        else:
            del state.unstarted[token]
        state.running.add(token)
        run.crowded = self._crowding(self.owners.get(token), token)
        return c, token

    def waiting(self, c: Cost) -> int:
        """Joins of class ``c`` waiting at the door now."""
        with self.lock:
            return len(self.classes[c].waiting) if c in self.classes else 0

    def _crowding(self, address: str | None, token: int | None, waiter: _Waiter | None = None) -> bool:
        """Whether ``address`` has events other than ``token`` let in (running or not), or joins other than
        ``waiter`` waiting."""
        if address is None:
            return False
        return any(t != token and a == address for t, a in self.owners.items()) or any(
            w.address == address and w is not waiter for s in self.classes.values() for w in s.waiting)

    def _room(self, c: Cost, crowding: bool = False) -> int:
        """Events of class ``c`` that may be in flight when one more is let in; a crowding address's join finds
        :data:`RESERVED` places fewer (kept for visitors with nothing else in flight), never none."""
        room = limits()[c] + SLACK
        return max(1, room - RESERVED) if crowding else room

    def _in_flight(self, c: Cost) -> int:
        state = self.classes[c]
        return len(state.unstarted) + len(state.running) + len(state.between)

    def _queued(self) -> int:
        return sum(len(s.waiting) + len(s.unstarted) for s in self.classes.values())

    def _expire(self, now: float) -> None:
        for c, state in self.classes.items():
            for token in [t for t, since in state.unstarted.items() if now - since > UNSTARTED_S[c]]:
                del state.unstarted[token]
                self.owners.pop(token, None)
            for event_id in [e for e, held in state.between.items() if now - held.since > BETWEEN_S]:
                self.owners.pop(state.between.pop(event_id).token, None)
            if len(state.named) > len(state.unstarted):
                state.named = {e: t for e, t in state.named.items() if t in state.unstarted}

    def _let_in(self, c: Cost, address: str, now: float) -> int:
        token = next(self._tokens)
        self.classes[c].unstarted[token] = now
        self.owners[token] = address
        self.last.pop(address, None)
        self.last[address] = now
        while len(self.last) > MAX_ADDRESSES:
            del self.last[next(iter(self.last))]
        return token

    def _release(self, c: Cost, now: float) -> None:
        """Let waiting joins of class ``c`` in while there is room: the one whose address was let in longest
        ago first (never: first of all), then the earliest; a crowding address's join only into a place not
        :data:`RESERVED`."""
        state = self.classes[c]
        while state.waiting and self._in_flight(c) < self._room(c):
            turn = sorted(state.waiting, key=lambda w: (self.last.get(w.address, float("-inf")), w.arrived))
            waiter = next((w for w in turn if self._in_flight(c) < self._room(c, self._crowding(w.address, None, w))),
                          None)
            if waiter is None:
                return  # only crowding joins wait, and the places left are kept for visitors
            state.waiting.remove(waiter)
            waiter.token = self._let_in(c, waiter.address, now)
            waiter.future.get_loop().call_soon_threadsafe(_resolve, waiter.future, waiter.token)


def _resolve(future: asyncio.Future, token: int) -> None:
    if not future.done():
        future.set_result(token)


#: The app's admission (one server per process).
ADMISSION = Admission()
