"""Can the weight hosts be reached, and which models failed to load a moment ago?

Two small, bounded, lock-protected memories that keep an offline or public machine
responsive:

* :func:`reachable` answers whether a download host (``huggingface.co``,
  ``dl.fbaipublicfiles.com``) answers HTTPS at all. The check runs in a daemon thread
  and is waited for at most ``VITVIZ_PROBE_SECONDS`` (name resolution included, which
  a socket timeout does not bound); its answer is remembered for ``VITVIZ_PROBE_TTL``
  seconds. With ``HF_HUB_OFFLINE=1`` nothing is probed: every host is unreachable.
  Without this, an offline machine waited 23-51 s on the hub client's retries per
  request.
* :data:`FAILURES` remembers a model whose weights could not be had (offline, host
  unreachable, download refused or failed) for ``VITVIZ_FAILURE_TTL`` seconds, so asking
  again is answered in microseconds with the same message, naming that model.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .. import settings
from ..errors import ModelUnavailable

#: host -> (answered at, reachable, why not)
_ANSWERS: dict[str, tuple[float, bool, str]] = {}
#: host -> the probe thread still running
_RUNNING: dict[str, threading.Thread] = {}
_LOCK = threading.Lock()
#: Bumped by :func:`forget_hosts`: answers of older probes are dropped.
_GENERATION = [0]


def _probe(host: str, timeout: float) -> tuple[bool, str]:
    """One HTTPS HEAD request to ``host`` (proxies from the environment are honoured)."""
    import httpx

    try:
        httpx.head(f"https://{host}/", timeout=timeout, follow_redirects=False)
        return True, ""
    except Exception as exc:  # noqa: BLE001 - any failure means "cannot download from there now"
        return False, type(exc).__name__


#: The probe function (tests replace it to count calls or simulate a network).
PROBE: Callable[[str, float], tuple[bool, str]] = _probe


def _start(host: str) -> None:
    """Start a probe of ``host`` unless one is running or a fresh answer is known (lock held)."""
    answer = _ANSWERS.get(host)
    if answer is not None and time.monotonic() - answer[0] < settings.get("VITVIZ_PROBE_TTL"):
        return
    if host in _RUNNING:
        return
    timeout = settings.get("VITVIZ_PROBE_SECONDS")
    generation = _GENERATION[0]

    def run() -> None:
        try:
            ok, why = PROBE(host, timeout)
        except Exception as exc:  # noqa: BLE001
            ok, why = False, type(exc).__name__
        with _LOCK:
            if generation == _GENERATION[0]:
                _ANSWERS[host] = (time.monotonic(), ok, why)
                _RUNNING.pop(host, None)

    thread = threading.Thread(target=run, name=f"vitviz-probe-{host}", daemon=True)
    _RUNNING[host] = thread
    thread.start()


def reachable(hosts: Iterable[str]) -> dict[str, tuple[bool, str]]:
    """``{host: (reachable, why not)}``, probing the hosts not checked recently, all at once.

    Waits at most ``VITVIZ_PROBE_SECONDS`` in total; a host still silent by then counts
    as unreachable (``"no answer within N s"``) until its probe answers. Offline
    (``HF_HUB_OFFLINE=1``): every host is unreachable and nothing is probed.
    """
    hosts = list(dict.fromkeys(hosts))
    if settings.offline():
        return {h: (False, "offline (HF_HUB_OFFLINE=1)") for h in hosts}
    with _LOCK:
        for h in hosts:
            _start(h)
        waiting = [_RUNNING[h] for h in hosts if h in _RUNNING]
    deadline = time.monotonic() + settings.get("VITVIZ_PROBE_SECONDS")
    for thread in waiting:
        thread.join(max(0.0, deadline - time.monotonic()))
    out = {}
    with _LOCK:
        for h in hosts:
            answer = _ANSWERS.get(h)
            if answer is None:  # still silent: unreachable for now, without waiting again next time
                answer = (time.monotonic(), False, f"no answer within {settings.get('VITVIZ_PROBE_SECONDS'):g} s")
                _ANSWERS[h] = answer
            out[h] = (answer[1], answer[2])
    return out


def forget_hosts() -> None:
    """Drop every remembered reachability answer (the next question probes again)."""
    with _LOCK:
        _ANSWERS.clear()
        _RUNNING.clear()
        _GENERATION[0] += 1


@dataclass(frozen=True)
class _Failure:
    at: float
    message: str


class FailureMemo:
    """Models that could not be loaded recently: ``key -> message``; bounded, thread-safe."""

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._items: dict[tuple, _Failure] = {}
        self._lock = threading.Lock()

    def check(self, key: tuple) -> None:
        """Raise the remembered :class:`ModelUnavailable` for ``key`` if it is still fresh."""
        ttl = settings.get("VITVIZ_FAILURE_TTL")
        with self._lock:
            failure = self._items.get(key)
            if failure is None:
                return
            if time.monotonic() - failure.at >= ttl:
                del self._items[key]
                return
        raise ModelUnavailable(failure.message)

    def remember(self, key: tuple, exc: ModelUnavailable) -> ModelUnavailable:
        """Keep ``exc``'s message for ``key``; returns ``exc`` (``raise memo.remember(k, e)``)."""
        if settings.get("VITVIZ_FAILURE_TTL") > 0:
            with self._lock:
                self._items[key] = _Failure(time.monotonic(), str(exc))
                while len(self._items) > self.capacity:
                    self._items.pop(next(iter(self._items)))
        return exc

    def clear(self) -> None:
        """Forget every failure."""
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


#: Recent load failures (see :func:`vitviz.models.loading.load_model`).
FAILURES = FailureMemo()
