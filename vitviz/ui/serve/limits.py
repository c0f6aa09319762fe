"""What one client may hold in Gradio's queue, counted at the door from the queue's HTTP protocol.

Gradio's queue has one room for everyone (``demo.queue(max_size=VITVIZ_MAX_QUEUE)``: past it every join is
refused, its documented meaning) and a group per cost class (:mod:`vitviz.models.costs`). What one client holds is
counted here, outside Gradio, from what its clients send and receive (the protocol of ``gradio_client`` and
the page's client):

* a **join** -- ``POST .../queue/join`` (its JSON body names the ``session_hash``) or ``POST .../call/API``
  -- is admitted when its session holds fewer than ``VITVIZ_SESSION_QUEUE`` events and its address fewer
  than ``VITVIZ_CLIENT_QUEUE`` (the session id is the client's choice, so the address cap is the one that
  holds; a loopback peer is the machine's own user: only its sessions are capped), and a join of an expensive
  event (registered in the heavy group: :func:`of_join`) when its address holds fewer than
  ``VITVIZ_CLIENT_HEAVY`` of them (:data:`HEAVY_BUSY_MESSAGE`: one address never holds every heavy slot). Its answer's
  ``event_id`` then counts until the session's event stream (``GET .../queue/data``) says
  ``process_completed`` for it, or ``.../call/API/EVENT_ID``'s stream ends, or :data:`HOLD_S` pass;
* a camera stream's join (its first frame rides in it) is refused while its session -- on a public host, its
  address -- holds one (:data:`LIVE_BUSY_MESSAGE`);
* a refused join is answered as Gradio answers a full queue (HTTP 503, ``{"detail": sentence}``), after
  :data:`REFUSAL_PAUSE_S` (so a script cannot spin), and the pause holds no lock;
* a **live stream** gives way: :func:`others_busy` (its frames pause while another session has a join in
  flight, or had one less than :data:`GIVE_WAY_S` ago).
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ... import settings
from .clients import client_address, exempt
from ...models.costs import GROUPS, Cost, registered

#: Concurrency groups (Gradio's ``concurrency_id``) of the cost classes.
VIEW, HEAVY, LIVE = GROUPS[Cost.VIEW], GROUPS[Cost.HEAVY], GROUPS[Cost.LIVE]
#: Prefix of the API names of private events: ``_private_<class>_<handler>`` (:func:`private_name`).
PRIVATE_PREFIX = "_private_"
_PUBLIC: dict[str, Cost] = {}  # public endpoint name -> registered class (:func:`name_endpoint`)
_SERVED: dict[int | str, Cost] = {}  # the served app's events: function index and public name -> class

BUSY_MESSAGE = ("Too many requests from you at once: wait for your earlier requests to finish "
                "(this server is shared with other visitors).")
HEAVY_BUSY_MESSAGE = ("Too many expensive requests (sweeps, probes, explanations, exports) from you at once: wait "
                      "for your earlier ones to finish (this server is shared with other visitors).")
LIVE_BUSY_MESSAGE = ("A live camera is already running for you: stop it (or close the other tab) before "
                     "starting another (this server is shared with other visitors).")
#: Seconds a refused request waits before its answer (slows a flooding client down).
REFUSAL_PAUSE_S = 1.0
#: Seconds an admitted join counts at most (a client that never reads its event stream is not told its end).
HOLD_S = 900.0
#: Seconds a live stream keeps giving way after another session's join was last seen: a visitor's calls
#: come one after another (an upload, a join, the answer's panels, the next upload) and the gaps are theirs
#: too (``bench/live.py``: with one second a ``gradio_client`` caller's calls took 3.9-4.2x their time alone).
GIVE_WAY_S = 3.0

#: Gradio's server message that ends an event, and its event's id (JSON with or without spaces), found in the
#: first :data:`HEAD_BYTES` of a message of a session's event stream (both come first: the output follows).
COMPLETED = re.compile(rb'"msg":\s*"process_completed"')
EVENT_ID = re.compile(rb'"event_id":\s*"([0-9a-zA-Z_-]{1,64})"')
HEAD_BYTES = 512


def private_name(fn: Any) -> str:
    """The API name of a private event running ``fn``: its registered class in it, so the door knows the class of
    a join from the app's configuration (Gradio's ``_1``, ``_2`` for a repeated name keep the prefix)."""
    return f"{PRIVATE_PREFIX}{registered(fn).value}_{getattr(fn, '__name__', 'event')}"


def name_endpoint(api_name: str, fn: Any) -> None:
    """Remember the registered class of the public endpoint ``api_name``, which runs ``fn``."""
    _PUBLIC[api_name] = registered(fn)


def serve_events(config: dict[str, Any]) -> None:
    """Learn the served app's events (the app's configuration, ``demo.config``: each dependency's ``id``, the
    function index its queue joins name, and ``api_name``), for :func:`of_join`."""
    table: dict[int | str, Cost] = {}
    for dep in config.get("dependencies", []):
        api_name = dep.get("api_name")
        found = None
        if isinstance(api_name, str) and api_name.startswith(PRIVATE_PREFIX):
            found = next((c for c in Cost if api_name[len(PRIVATE_PREFIX):].startswith(c.value + "_")), None)
        elif isinstance(api_name, str):
            found = _PUBLIC.get(api_name)
        if found is not None:
            table[dep["id"]] = found
            table[api_name] = found
    _SERVED.clear()
    _SERVED.update(table)


def of_join(fn_index: Any, api_name: str | None = None) -> Cost | None:
    """The registered class of a queue join of the served app (:func:`serve_events`): by its function index, or
    by its API name (``/call/API``); None for an event the app's handlers did not declare."""
    key = fn_index if isinstance(fn_index, int) and not isinstance(fn_index, bool) else api_name
    return _SERVED.get(key) if isinstance(key, (int, str)) else None


@dataclass
class _Held:
    session: str
    address: str
    since: float
    live: bool = False
    heavy: bool = False


@dataclass
class Joins:
    """The joins each client holds (admitted, not yet completed); thread-safe, bounded by the caps it applies."""

    held: dict[str, _Held] = field(default_factory=dict)  # event id (or a ticket until answered) -> holder
    streaming: dict[str, float] = field(default_factory=dict)  # session -> when its stream last asked to give way
    seen: dict[str, float] = field(default_factory=dict)  # session or address -> when last seen (GIVE_WAY_S)
    early: dict[str, float] = field(default_factory=dict)  # event id completed before its join's answer was read
    lock: threading.Lock = field(default_factory=threading.Lock)
    _tickets: int = 0

    def admit(self, session: str, address: str, live: bool = False, now: float | None = None,
              heavy: bool = False) -> tuple[str | None, str]:
        """``(ticket, "")`` for one more join of ``session`` from ``address``, or ``(None, sentence)`` when a cap
        is reached. A ``live`` join (a camera stream's: its first frame rides in it) is refused while the session
        -- on a public host, the address -- holds one; a ``heavy`` one (an expensive event's) while the address
        holds ``VITVIZ_CLIENT_HEAVY``."""
        now = time.monotonic() if now is None else now
        capped = not exempt(address)
        with self.lock:
            self.held = {k: h for k, h in self.held.items() if now - h.since <= HOLD_S}
            mine = [h for h in self.held.values() if h.session == session or (capped and h.address == address)]
            if live and any(h.live and (h.session == session or settings.public()) for h in mine):
                return None, LIVE_BUSY_MESSAGE
            if sum(h.session == session for h in mine) >= settings.get("VITVIZ_SESSION_QUEUE") or (
                    capped and sum(h.address == address for h in mine) >= settings.get("VITVIZ_CLIENT_QUEUE")):
                return None, BUSY_MESSAGE
            if heavy and capped and sum(h.heavy and h.address == address for h in mine) >= settings.get(
                    "VITVIZ_CLIENT_HEAVY"):
                return None, HEAVY_BUSY_MESSAGE
            self._tickets += 1
            ticket = f"ticket:{self._tickets}"
            self.held[ticket] = _Held(session, address, now, live, heavy)
            if not live:
                self._note(session, now)
            return ticket, ""

    def answered(self, ticket: str, event_id: str | None) -> None:
        """The join of ``ticket`` was answered: it holds ``event_id`` now, or nothing (refused by Gradio)."""
        with self.lock:
            held = self.held.pop(ticket, None)
            if held is not None and event_id and self.early.pop(event_id, None) is None:
                self.held[event_id] = held

    def completed(self, event_id: str, now: float | None = None) -> None:
        """The event ``event_id`` ended (its session still counts as seen for :data:`GIVE_WAY_S`)."""
        now = time.monotonic() if now is None else now
        with self.lock:
            held = self.held.pop(event_id, None)
            if held is not None:
                self._note(held.session, now)
            elif any(k.startswith("ticket:") for k in self.held):  # its join's answer may not be read yet
                self.early = {k: t for k, t in self.early.items() if now - t <= GIVE_WAY_S}
                self.early[event_id] = now

    def note(self, who: str, now: float | None = None) -> None:
        """Remember that ``who`` (a session, or an address that uploads) sent a request."""
        with self.lock:
            self._note(who, time.monotonic() if now is None else now)

    def _note(self, who: str, now: float) -> None:
        self.seen[who] = now
        self.seen = {k: t for k, t in self.seen.items() if now - t < GIVE_WAY_S}

    def others_busy(self, mine: set[str], now: float | None = None) -> bool:
        """True while a session (or address) other than ``mine``, and not itself streaming, holds a join (not a
        camera stream's) or was seen less than :data:`GIVE_WAY_S` ago. Marks ``mine``'s sessions as streaming."""
        now = time.monotonic() if now is None else now
        with self.lock:
            for who in mine:
                self.streaming[who] = now
            self.streaming = {k: t for k, t in self.streaming.items() if now - t < GIVE_WAY_S}
            if any(k not in mine and k not in self.streaming and now - t < GIVE_WAY_S for k, t in self.seen.items()):
                return True
            return any(not h.live and h.session not in mine and h.session not in self.streaming
                       and h.address not in mine for h in self.held.values())


#: The app's joins (one server per process).
JOINS = Joins()


def others_busy(request: Any) -> bool:
    """True while another visitor's request waits, runs or was seen less than :data:`GIVE_WAY_S` ago: a live
    stream's next frame then gives way (the stream holds its slot, but its frames never take CPU from other
    visitors). The stream's own session and address do not stop it, nor does another stream.

    Args:
        request: the ``gr.Request`` of the streaming handler (never raises).
    """
    mine = {str(getattr(request, "session_hash", None))}
    try:
        address = client_address(request.request, settings.trusted_proxies())
        if not exempt(address):
            mine.add(address)
    except Exception:  # noqa: BLE001 - no address: only the session is the stream's own
        pass
    return JOINS.others_busy(mine)


class CompletedEvents:
    """Reads a session's event stream (``GET .../queue/data``) as it is sent, and ends each completed event's hold;
    called with each message, as the ASGI ``send`` it wraps."""

    def __init__(self, joins: Joins | None = None, send: Any = None) -> None:
        self.joins = JOINS if joins is None else joins
        self.send = send
        self.head = b""  # the first bytes of the message being sent

    async def __call__(self, message: dict) -> None:
        if message.get("type") == "http.response.body":
            self.feed(message.get("body", b""))
        await self.send(message)

    def feed(self, chunk: bytes) -> None:
        """One piece of the stream's body (a message may be split between pieces; messages end in a blank line)."""
        *ended, rest = chunk.split(b"\n\n")
        if ended:
            ended[0] = self.head + ended[0]
            for message in ended:
                head = message[:HEAD_BYTES]
                found = EVENT_ID.search(head)
                if found is not None and COMPLETED.search(head):
                    self.joins.completed(found.group(1).decode())
            self.head = b""
        self.head = (self.head + rest)[:HEAD_BYTES]
