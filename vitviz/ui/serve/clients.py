"""Who a client is: its address (the socket peer, or a trusted proxy's hop), whether it is the machine's own
user (exempt from per-address caps), and how long a session id it may name."""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import parse_qs

from starlette.types import Scope

#: Prefix of the address of a client that a proxy's ``X-Forwarded-For`` hop names as loopback (never exempt).
FORWARDED_LOOPBACK = "forwarded:"
#: Longest session id a queue join may name: Gradio's page sends 11 characters; ids are client-chosen and were
#: accepted up to ~64 KB, each kept as a key of the session table.
MAX_SESSION_ID = 128
BAD_SESSION = f"A session id is at most {MAX_SESSION_ID} characters."


def client_address(request: Any, trusted_proxies: int) -> str:
    """The client's address: the socket peer, or the ``trusted_proxies``-th ``X-Forwarded-For`` hop from the right.

    A client can put anything at the left of ``X-Forwarded-For``; only the hops added
    by trusted proxies (at the right) are believed. Malformed values fall back to the peer.
    A loopback (or unspecified) hop is returned as ``forwarded:HOP``, which :func:`exempt` never exempts:
    only the socket peer may be the machine's own user.
    """
    peer = str(getattr(getattr(request, "client", None), "host", None) or "unknown")
    if trusted_proxies <= 0 or request is None:
        return peer
    hops = [h.strip() for h in str(request.headers.get("x-forwarded-for", "")).split(",") if h.strip()]
    if len(hops) < trusted_proxies:
        return peer
    try:
        hop = ipaddress.ip_address(hops[-trusted_proxies])
    except ValueError:
        return peer
    if hop.is_loopback or hop.is_unspecified:
        # Only the socket peer may be the machine's own user (exempt): a forwarded loopback hop lifted every
        # per-address cap (10 of 10 heavy joins against a cap of 3). Such callers share one capped address.
        return f"{FORWARDED_LOOPBACK}{hop}"
    return str(hop)


def exempt(address: str) -> bool:
    """True for a loopback address: the machine's own user (and tests) are not capped per address.

    Behind a reverse proxy on the same machine every visitor would look like loopback:
    set ``VITVIZ_TRUSTED_PROXIES`` so the proxy's ``X-Forwarded-For`` names them.
    """
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def long_session(scope: Scope) -> bool:
    """True when the query names a ``session_hash`` longer than :data:`MAX_SESSION_ID` (the queue's
    event stream, ``/queue/data?session_hash=...``; a queue join's body is checked by the queue's push (:mod:`.limits`))."""
    query = scope.get("query_string", b"")
    if b"session_hash" not in query:
        return False
    values = parse_qs(query.decode("latin-1")).get("session_hash", [])
    return any(len(v) > MAX_SESSION_ID for v in values)
