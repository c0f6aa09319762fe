"""Fair queueing for a shared server: per-client caps, concurrency groups, stable endpoint names.

Gradio's queue (6.31) checks one global ``max_size`` across every client and endpoint, and gives every
event function its own concurrency group: one visitor could fill the whole queue, and up to 40
computations could run at once on two cores. This module:

* caps what one client may have **queued or running**: per browser session (``VITVIZ_SESSION_QUEUE``),
  per client address (``VITVIZ_CLIENT_QUEUE``) and, for the expensive group, per address
  (``VITVIZ_CLIENT_HEAVY``). A request over a cap is refused with HTTP 503 and a sentence, after a
  one-second pause so a flooding script cannot spin. The session id is chosen by the client, so the
  address cap is the one that holds; behind a reverse proxy (a Space) the address is the last
  ``VITVIZ_TRUSTED_PROXIES`` hop of ``X-Forwarded-For``. Loopback addresses have only the session cap;
* refuses an unknown ``fn_index`` with HTTP 400 (it was a 500);
* puts every queued request, when it is queued, in the concurrency group of its handler's
  declared cost class (:mod:`.costs`, computed from the checked inputs): ``view`` (fast views,
  ``VITVIZ_CONCURRENCY`` at once) or ``heavy`` (sweeps, probes, explanations, curves,
  measurements, exports, a model not yet in memory: ``VITVIZ_HEAVY_CONCURRENCY``) or ``live``
  (a live-camera stream: it holds its slot for as long as it runs, so streams get their own
  ``VITVIZ_LIVE_STREAMS`` slots and never take a view's; one stream per browser session, and on a
  public host one per client address, :data:`LIVE_BUSY_MESSAGE`); an undeclared handler is heavy.
  A stream's frames give way to every other request (:func:`others_busy`);
* answers at once a request whose declared model input names a model known, without the network, not
  to be had here (offline or not allowed to download, and not on disk): in its own group (:data:`INSTANT`,
  no limit) vitviz's own check fails it in a millisecond with its sentence. Only that input's value,
  checked against the picker's choices, is read (a stray value elsewhere in the payload is not);
* renames private events so they never take a public endpoint's name (a private
  ``swin_attention`` chained before the public one pushed it to ``/swin_attention_5``).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ... import settings
from .clients import BAD_SESSION, MAX_SESSION_ID, client_address, exempt
from .costs import Cost, checked_inputs, fixed, model_positions, resolve
from .ledger import Ledger, LedgerFull

#: Concurrency group of fast views (:attr:`Cost.VIEW`).
VIEW = "vitviz-view"
#: Concurrency group of expensive work (:attr:`Cost.HEAVY`).
HEAVY = "vitviz-heavy"
#: Concurrency group of live-camera streams (:attr:`Cost.LIVE`).
LIVE = "vitviz-live"
#: The concurrency group of each cost class.
GROUPS = {Cost.VIEW: VIEW, Cost.HEAVY: HEAVY, Cost.LIVE: LIVE}

#: Concurrency group of requests answered at once (a model known to be unavailable here).
INSTANT = "vitviz-instant"

#: Prefix of the API names of private events.
PRIVATE_PREFIX = "_private_"

FULL_MESSAGE = ("This shared server is busy with many visitors' requests: wait for your earlier requests "
                "to finish, then try again.")
BUSY_MESSAGE = ("Too many requests from you at once: wait for your earlier requests to finish "
                "(this server is shared with other visitors).")
LIVE_BUSY_MESSAGE = ("A live camera is already running for you: stop it (or close the other tab) before "
                     "starting another (this server is shared with other visitors).")
#: Seconds a refused request waits before its answer (slows a flooding client down).
REFUSAL_PAUSE_S = 1.0


@dataclass(frozen=True)
class ClientLimits:
    """Caps on queued + running events.

    Attributes:
        per_session: per browser session (Gradio session hash).
        per_address: per client address.
        heavy_per_address: per client address, in the :data:`HEAVY` group.
        trusted_proxies: ``X-Forwarded-For`` hops to trust (0: the socket peer).
    """

    per_session: int
    per_address: int
    heavy_per_address: int
    trusted_proxies: int

    @classmethod
    def from_settings(cls) -> ClientLimits:
        """The caps configured by ``VITVIZ_SESSION_QUEUE``, ``VITVIZ_CLIENT_QUEUE``, ... ."""
        return cls(settings.get("VITVIZ_SESSION_QUEUE"), settings.get("VITVIZ_CLIENT_QUEUE"),
                   settings.get("VITVIZ_CLIENT_HEAVY"), settings.trusted_proxies())


def unavailable(choice: Any) -> bool:
    """True when ``choice`` (a model picker value) names a model whose trained weights are known, without
    asking the network, not to be had here: not on disk, and offline or not allowed to download. Its
    request then fails at once in vitviz's own check (:func:`vitviz.models.loading.load_choice`)."""
    from ...models.registry import get_spec, parse_choice
    from ...models.sources import availability

    if not isinstance(choice, str) or len(choice) > 80:
        return False
    try:
        name, random_init = parse_choice(choice)
        spec = get_spec(name)
    except (ValueError, KeyError):
        return False
    if random_init:
        return False
    if settings.offline() or not settings.download_allowed(spec.name, spec.download_mb):
        return not availability(spec)[0]  # no network is asked in these two cases
    return False


def queue_group(fn: Any, data: Any) -> str:
    """The concurrency group of one request to the event ``fn`` (a Gradio ``BlockFunction``), decided when
    it is queued from the handler's declared cost on its checked inputs (:mod:`.costs`).

    A request whose declared model inputs (:func:`.costs.model_cost`) name a model that cannot be had
    here, the others being in memory already, goes to :data:`INSTANT`: vitviz's own check answers it at
    once. Values at other positions, or that are not one of the model picker's choices, are never read.
    """
    from ...models.loading import is_loaded

    values = checked_inputs(fn.inputs, data)
    positions = [p for p in model_positions(fn.fn) if p < len(values)]
    missing = [p for p in positions if unavailable(values[p])]
    if missing and all(p in missing or (isinstance(values[p], str) and is_loaded(values[p])) for p in positions):
        return INSTANT
    return GROUPS[resolve(fn.fn, fn.inputs, data)]


def _move(queue: Any, event: Any, group: str) -> None:
    """Move a queued ``event`` to the concurrency group ``group``, created with its limit (the app's
    ``vitviz_group_limits``; none for :data:`INSTANT`). Created without one, the view group ran 30 calls at
    once when its first request came through here (under a flood from five addresses: no event is a fixed view)."""
    from gradio.queueing import EventQueue

    source = queue.event_queue_per_concurrency_id.get(event.concurrency_id)
    if source is None or event not in source.queue:
        return
    source.queue.remove(event)
    target = queue.event_queue_per_concurrency_id.get(group)
    if target is None:
        limit = (getattr(queue.blocks, "vitviz_group_limits", None) or {}).get(group)
        target = queue.event_queue_per_concurrency_id[group] = EventQueue(group, limit)
    event.concurrency_id = group
    target.queue.append(event)


def _fair_key(event: Any) -> str:
    """Whose turn an event is: its client address, or its session for the machine's own (loopback) user."""
    address = getattr(event, "vitviz_address", None) or ""
    return f"session:{event.session_hash}" if not address or exempt(address) else address


#: Half-life, in seconds, of what a client's past requests count for in :func:`usage`.
USAGE_HALF_LIFE_S = 10.0
#: Below this decayed count a client's past requests are forgotten (:data:`_USAGE` may then drop it).
USAGE_FORGOTTEN = 0.01


def _usage_at(entry: tuple[float, float], now: float) -> float:
    value, then = entry
    return value * 0.5 ** (max(0.0, now - then) / USAGE_HALF_LIFE_S)


#: Fair key -> (decayed count of its queued requests, when it was last updated): per-client state, not cache
#: (:class:`~.ledger.Ledger`: a count still above :data:`USAGE_FORGOTTEN` is never evicted).
_USAGE: Ledger[str, tuple[float, float]] = Ledger(lambda entry, now: _usage_at(entry, now) >= USAGE_FORGOTTEN)


def note_use(key: str, now: float | None = None) -> None:
    """Count one queued request of the client ``key`` (:func:`_fair_key`) in its :func:`usage` (not counted when
    every client the ledger holds is still counted: the order then falls back to turns and holdings)."""
    now = time.monotonic() if now is None else now
    try:
        _USAGE.update(key, lambda old: (((_usage_at(old, now) if old else 0.0) + 1.0, now), None), now)
    except LedgerFull:
        pass


def usage(key: str, now: float | None = None) -> float:
    """How many requests the client ``key`` queued lately: each counts 1, halved every :data:`USAGE_HALF_LIFE_S`."""
    now = time.monotonic() if now is None else now
    entry = _USAGE.get(key)
    return _usage_at(entry, now) if entry else 0.0


def fair_insert(waiting: list, event: Any, running: Sequence[Any] = (), held: dict[str, int] | None = None) -> None:
    """Move ``event`` (just appended to its group's ``waiting`` list) to its fair place: round-robin by
    client (:func:`_fair_key`), counting what each client has running. A client's k-th event (running or
    waiting) goes before every other client's (k+1)-th, so a flood from one client never puts another
    client's first request behind it, nor behind the flood's next one while the flood's first ones run.
    Between two clients' k-th events, the one holding fewer requests (``held``) goes first, then the one
    that queued fewer lately (:func:`usage`): a visitor's one call before a script's many.

    Args:
        waiting: the group's waiting events, ``event`` last.
        event: the event just queued.
        running: every running event of the queue (any group).
        held: requests queued or running per client, in every group (:func:`held`); none if not given.
    """
    at = next((i for i, e in enumerate(waiting) if e is event), None)
    if at is None:
        return
    del waiting[at]
    held = held or {}
    seen: dict[str, int] = {}
    for other in running:
        k = _fair_key(other)
        seen[k] = seen.get(k, 0) + 1
    key, now = _fair_key(event), time.monotonic()
    mine = (seen.get(key, 0) + sum(1 for e in waiting if _fair_key(e) == key), held.get(key, 0), usage(key, now))
    for i, other in enumerate(waiting):
        k = _fair_key(other)
        seen[k] = seen.get(k, 0) + 1
        if (seen[k] - 1, held.get(k, 0), usage(k, now)) > mine:
            waiting.insert(i, event)
            return
    waiting.append(event)


def held(queue: Any) -> dict[str, int]:
    """Requests queued or running per client (:func:`_fair_key`), in every group of Gradio's queue."""
    return dict(Counter(_fair_key(e) for e in _events(queue)))


def _over_capacity(queue: Any, address_count: int, max_queue: int | None) -> bool:
    """True when a new request must wait outside: ``max_queue`` events wait already (``VITVIZ_MAX_QUEUE``, all
    clients together: the limit its documentation names), or at least half of that wait and this client holds
    its fair share of the room (``max_queue`` divided by the clients waiting, itself included), so the other half
    stays open to the clients holding less (a flood fills only half before its own requests are refused)."""
    if max_queue is None:
        return False
    waiting = [e for q in queue.event_queue_per_concurrency_id.values() for e in q.queue]
    if len(waiting) >= max_queue:
        return True
    if len(waiting) < max_queue // 2:
        return False
    clients = len({_fair_key(e) for e in waiting}) + 1
    return address_count >= max(1, max_queue // clients)


def _count(queue: Any, session: str | None, address: str) -> tuple[int, int, int]:
    """``(same session, same address, same address in the heavy group)`` over queued and running events."""
    same_session = same_address = heavy = 0
    for event in _events(queue):
        if session is not None and event.session_hash == session:
            same_session += 1
        if getattr(event, "vitviz_address", None) == address:
            same_address += 1
            heavy += event.concurrency_id == HEAVY
    return same_session, same_address, heavy


def _running(queue: Any) -> list:
    """Every running event of Gradio's queue."""
    return [e for job in list(queue.active_jobs) if job for e in job]


def _events(queue: Any) -> list:
    """Every queued and running event of Gradio's queue."""
    waiting = [e for q in list(queue.event_queue_per_concurrency_id.values()) for e in list(q.queue)]
    return waiting + _running(queue)


def live_taken(queue: Any, session: str | None, address: str, per_address: bool) -> bool:
    """True when this session (or, with ``per_address``, this client address) already has a live stream
    queued or running."""
    for event in _events(queue):
        if event.concurrency_id != LIVE:
            continue
        if (session is not None and event.session_hash == session) or (
                per_address and getattr(event, "vitviz_address", None) == address):
            return True
    return False


#: Seconds a live stream keeps giving way after another session's request was last seen: a visitor's
#: calls come one after another (an upload, a join, downloading the answer's panels, the next upload), and
#: the gaps are theirs too. One second was shorter than a ``gradio_client`` caller's gaps on busy cores
#: (``bench/live.py``: the stream computed in them, and that visitor's calls took 3.9-4.2x their
#: time alone); three cover them at the load measured there.
GIVE_WAY_S = 3.0
#: Session (or address) -> when its last request other than a stream was seen (only the last GIVE_WAY_S).
_SEEN: dict[str, float] = {}
_SEEN_LOCK = threading.Lock()


def note_request(who: str, now: float | None = None) -> None:
    """Remember that ``who`` (a session hash, or a client address for an upload) sent a request that is no
    live frame (the queue's push, the door's uploads)."""
    now = time.monotonic() if now is None else now
    with _SEEN_LOCK:
        _SEEN[who] = now
        for k in [k for k, t in _SEEN.items() if now - t >= GIVE_WAY_S]:
            del _SEEN[k]


def others_busy(request: Any) -> bool:
    """True while a request of another session than the stream's own runs or waits in the app's queue, or
    was seen less than :data:`GIVE_WAY_S` ago: the stream's next frame then gives way (the stream holds its
    slot, but its frames never take CPU from other visitors). The stream's own page (its still view, its
    sweep) does not stop it.

    Args:
        request: the ``gr.Request`` of the streaming handler (its app's queue is read; never raises).
    """
    mine = {getattr(request, "session_hash", None), _peer(request)}
    now = time.monotonic()
    with _SEEN_LOCK:
        if any(now - t < GIVE_WAY_S for k, t in _SEEN.items() if k not in mine):
            return True
    try:
        queue = request.request.app.get_blocks()._queue
        events = _events(queue)
    except Exception:  # noqa: BLE001 - without a queue to read, nothing waits
        return False
    others = {e.session_hash for e in events if e.concurrency_id != LIVE and e.session_hash not in mine}
    for who in others:
        note_request(who, now)  # seen again: the stream keeps giving way until GIVE_WAY_S after it ends
    return bool(others)


def _peer(request: Any) -> str | None:
    """The stream's client address, or None for a loopback one (every local client shares it)."""
    try:
        address = client_address(request.request, settings.trusted_proxies())
    except Exception:  # noqa: BLE001 - no address: only the session is the stream's own
        return None
    return None if exempt(address) else address


_INSTALLED = False
#: Held while a queue join is counted and appended (never while a refused join pauses).
JOIN_LOCK = asyncio.Lock()


def install() -> None:
    """Wrap ``gradio.queueing.Queue.push`` with the caps (idempotent; apps without caps are untouched)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from gradio import queueing

    original = queueing.Queue.push

    async def push(self: Any, body: Any, request: Any, username: str | None) -> tuple:
        limits: ClientLimits | None = getattr(self.blocks, "vitviz_limits", None)
        if limits is None:
            return await original(self, body, request, username)
        fn, data = self.blocks.fns.get(body.fn_index) if body.fn_index is not None else None, getattr(body, "data", None)
        session = getattr(body, "session_hash", None)
        if isinstance(session, str) and len(session) > MAX_SESSION_ID:
            await asyncio.sleep(REFUSAL_PAUSE_S)
            return False, BAD_SESSION, "error"
        if fn is None or not isinstance(data, list) or len(data) != len(fn.inputs):
            await asyncio.sleep(REFUSAL_PAUSE_S)  # a malformed join: a script repeating it waits instead of spinning
            count = len(data) if isinstance(data, list) else "no list of"
            return False, ("There is no endpoint with this function index." if fn is None else
                           f"This endpoint takes {len(fn.inputs)} input values; the request has {count}."), "error"
        address = client_address(request, limits.trusted_proxies)
        group = queue_group(fn, getattr(body, "data", None))
        heavy = group == HEAVY
        refusal = BUSY_MESSAGE
        async with JOIN_LOCK:  # the count and the append happen together; nothing here waits for a refusal
            same_session, same_address, same_heavy = _count(self, body.session_hash, address)
            capped = not exempt(address)
            if group == LIVE and live_taken(self, body.session_hash, address, capped and settings.public()):
                refusal = LIVE_BUSY_MESSAGE
            else:
                if not capped:
                    same_address = same_session  # the machine's own sessions share one address: each is a client
                if _over_capacity(self, same_address, getattr(self.blocks, "vitviz_max_queue", None)):
                    refusal = FULL_MESSAGE
                elif (same_session < limits.per_session
                        and not (capped and same_address >= limits.per_address)
                        and not (capped and heavy and same_heavy >= limits.heavy_per_address)):
                    if group != LIVE:
                        note_request(str(body.session_hash))
                    ok, event_id, state = await original(self, body, request, username)
                    event = self.event_ids_to_events.get(event_id) if ok and isinstance(event_id, str) else None
                    if event is not None:
                        event.vitviz_address = address
                        if group != event.concurrency_id:
                            _move(self, event, group)  # no await since the push: not yet picked up
                        target = self.event_queue_per_concurrency_id.get(event.concurrency_id)
                        if target is not None:
                            fair_insert(target.queue, event, _running(self), held(self))
                        note_use(_fair_key(event))
                    return ok, event_id, state
        # The pause comes after the lock is released: a refused client waits, and nobody waits behind it (12
        # refused live-stream joins from one address, paused inside the lock, held a visitor's join 11 s).
        await asyncio.sleep(REFUSAL_PAUSE_S)
        return False, refusal, "queue_full"

    push.__wrapped__ = original  # type: ignore[attr-defined] - Gradio's own, for tests/ui/test_serve_contacts.py
    queueing.Queue.push = push
    _INSTALLED = True


def _base_name(name: str) -> str:
    return re.sub(r"_\d+$", "", name)


def apply(demo: Any) -> None:
    """Sort the built app's events into groups, rename private events, attach the caps.

    Call after every event is registered and after ``demo.queue(...)``.
    """
    install()
    limit = {Cost.VIEW: settings.get("VITVIZ_CONCURRENCY"), Cost.HEAVY: settings.get("VITVIZ_HEAVY_CONCURRENCY"),
             Cost.LIVE: settings.live_limits()[0]}
    public_names: set[str] = set()
    for fn in demo.fns.values():
        if fn.queue is not False and fn.fn is not None:
            c = fixed(fn.fn)  # a computed cost is HEAVY here and resolved again when a request is queued
            fn.concurrency_id, fn.concurrency_limit = GROUPS[c], limit[c]
        if fn.api_visibility == "public" and isinstance(fn.api_name, str):
            public_names.add(fn.api_name)
    taken = set(public_names)
    for i, fn in sorted(demo.fns.items()):
        if fn.api_visibility != "public" and isinstance(fn.api_name, str) and not fn.api_name.startswith(
                PRIVATE_PREFIX):
            fn.api_name = f"{PRIVATE_PREFIX}{i}_{fn.api_name}"
            taken.add(fn.api_name)
    # A public endpoint pushed to "name_N" by a private event registered first gets "name" back.
    for fn in demo.fns.values():
        if fn.api_visibility == "public" and isinstance(fn.api_name, str):
            base = _base_name(fn.api_name)
            if base != fn.api_name and base not in taken:
                taken.discard(fn.api_name)
                fn.api_name = base
                taken.add(base)
    demo.vitviz_limits = ClientLimits.from_settings()
    demo.vitviz_group_limits = {GROUPS[c]: n for c, n in limit.items()}  # for groups created by _move
    queue = getattr(demo, "_queue", None)
    if queue is not None and getattr(queue, "max_size", None) is not None:
        # Gradio refuses every newcomer once max_size events wait (ten well-behaved requests got "Queue is
        # full" behind five flooding addresses); the push above shares the room fairly instead.
        demo.vitviz_max_queue = queue.max_size
        queue.max_size = None
    demo.config = demo.get_config_file()  # the page learns the final names
