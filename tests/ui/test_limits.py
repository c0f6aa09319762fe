"""Fair queueing (issue 16): per-client caps, unknown fn_index, stable endpoint names, session bound."""

from __future__ import annotations

import threading
import time
import tracemalloc
from types import SimpleNamespace

import httpx
import pytest

gr = pytest.importorskip("gradio")

from vitviz.ui.serve import limits, sessions  # noqa: E402
from vitviz.ui.serve.costs import Cost, cost  # noqa: E402


def _request(peer: str, xff: str | None = None) -> SimpleNamespace:
    headers = {"x-forwarded-for": xff} if xff is not None else {}
    return SimpleNamespace(client=SimpleNamespace(host=peer), headers=headers)


def test_client_address_trusts_only_the_proxy_hops():
    assert limits.client_address(_request("10.0.0.1", "1.2.3.4"), 0) == "10.0.0.1"
    # A client can forge the left part; the last hop is the one the proxy added.
    assert limits.client_address(_request("10.0.0.1", "6.6.6.6, 1.2.3.4"), 1) == "1.2.3.4"
    assert limits.client_address(_request("10.0.0.1", "6.6.6.6, 1.2.3.4"), 2) == "6.6.6.6"
    assert limits.client_address(_request("10.0.0.1", "not-an-ip"), 1) == "10.0.0.1"
    assert limits.client_address(_request("10.0.0.1"), 1) == "10.0.0.1"
    # The machine's own user (loopback) has only the per-session cap.
    assert limits.exempt("127.0.0.1") and limits.exempt("::1") and not limits.exempt("10.0.0.1")
    assert not limits.exempt("unknown")


@cost(Cost.VIEW)
def _slow(x: float) -> float:
    time.sleep(0.2)
    return x


@cost(Cost.VIEW)
def _fast(x: float) -> float:
    return x + 1


@cost(Cost.HEAVY)
def run_sweep(x: float) -> float:  # the heavy group by its declared cost
    time.sleep(0.2)
    return x


@pytest.fixture()
def scratch_app(monkeypatch, free_port_value):
    """A model-free app with vitviz's limits: caps 4 per session, 6 per address, 2 heavy."""
    monkeypatch.setenv("VITVIZ_SESSION_QUEUE", "4")
    monkeypatch.setenv("VITVIZ_CLIENT_QUEUE", "6")
    monkeypatch.setenv("VITVIZ_CLIENT_HEAVY", "2")
    monkeypatch.setenv("VITVIZ_TRUSTED_PROXIES", "1")
    with gr.Blocks() as demo:
        n, out = gr.Number(), gr.Number()
        button = gr.Button()
        button.click(_fast, n, out, api_visibility="private")  # takes the name "_fast" first
        button.click(_slow, n, out, api_name="slow")
        button.click(_fast, n, out, api_name="_fast")
        button.click(run_sweep, n, out, api_name="sweep")
    demo.queue(max_size=64, api_open=False)
    limits.apply(demo)
    demo.launch(server_name="127.0.0.1", server_port=free_port_value, prevent_thread_lock=True, quiet=True)
    try:
        yield demo, f"http://127.0.0.1:{free_port_value}/"
    finally:
        demo.close()


@pytest.fixture()
def free_port_value() -> int:
    from tools.appserver import free_port

    return free_port()


def test_a_flooding_client_cannot_starve_another(scratch_app):
    from gradio_client import Client

    demo, url = scratch_app
    refused, served, stop = [], [], threading.Event()

    def flood() -> None:
        client = Client(url, verbose=False, headers={"X-Forwarded-For": "10.9.9.9"})
        while not stop.is_set():
            try:
                client.predict(1, api_name="/sweep")
                served.append(1)
            except Exception as exc:  # noqa: BLE001 - counted
                refused.append(str(exc))

    threads = [threading.Thread(target=flood, daemon=True) for _ in range(16)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    other = Client(url, verbose=False, headers={"X-Forwarded-For": "10.1.1.1"})
    results = [other.predict(i, api_name="/slow") for i in range(6)]
    results += [other.predict(i, api_name="/sweep") for i in range(2)]
    stop.set()
    for t in threads:
        t.join(timeout=30)
    assert results == [0, 1, 2, 3, 4, 5, 0, 1]  # every call of the other client was served
    assert refused, "the flooding address was never refused"
    assert served, "the flooding address got nothing at all"


def test_unknown_function_index_is_a_400(scratch_app):
    _, url = scratch_app
    r = httpx.post(url + "gradio_api/queue/join",
                   json={"data": [1], "fn_index": 10_000, "session_hash": "s1", "event_data": None, "trigger_id": None})
    assert r.status_code == 400 and "no endpoint" in r.json()["detail"]


def test_queued_functions_do_not_skip_the_queue(scratch_app):
    _, url = scratch_app
    r = httpx.post(url + "gradio_api/run/slow", json={"data": [1]})
    assert r.status_code == 404


def test_private_events_never_take_a_public_name(scratch_app):
    demo, _ = scratch_app
    names = {fn.api_name for fn in demo.fns.values() if fn.api_visibility == "public"}
    assert names == {"slow", "_fast", "sweep"}
    private = [fn.api_name for fn in demo.fns.values() if fn.api_visibility != "public"]
    assert private and all(n.startswith(limits.PRIVATE_PREFIX) for n in private)
    groups = {fn.api_name: fn.concurrency_id for fn in demo.fns.values()}
    assert groups["sweep"] == limits.HEAVY and groups["slow"] == limits.VIEW


def test_sessions_are_small_and_bounded():
    from gradio.state_holder import SessionState, StateHolder

    sessions.install()
    with gr.Blocks() as demo:
        big = "x" * 500_000  # a large default value, like a figure with hover text
        gr.Textbox(big)
        state = gr.State([0])
    demo.state_session_capacity = 50
    holder = StateHolder()
    holder.set_blocks(demo)
    tracemalloc.start()
    for i in range(200):
        holder[f"session-{i}"][state._id] = [i]
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(holder.session_data) <= 50
    assert current / 50 < 100_000, "each kept session should hold far less than the page configuration"
    assert holder["session-199"][state._id] == [199]


def _event(group: str, session: str, address: str) -> SimpleNamespace:
    return SimpleNamespace(concurrency_id=group, session_hash=session, vitviz_address=address)


def _queue(waiting: list, running: list) -> SimpleNamespace:
    groups = {}
    for e in waiting:
        groups.setdefault(e.concurrency_id, SimpleNamespace(queue=[])).queue.append(e)
    return SimpleNamespace(event_queue_per_concurrency_id=groups, active_jobs=[running or None, None])


def test_one_live_stream_per_session_and_on_a_public_host_per_address():
    stream = _event(limits.LIVE, "s1", "10.0.0.5")
    q = _queue([_event(limits.VIEW, "s2", "10.0.0.6")], [stream])
    assert limits.live_taken(q, "s1", "10.0.0.9", per_address=False)  # the same session
    assert not limits.live_taken(q, "s3", "10.0.0.5", per_address=False)  # another session, same address
    assert limits.live_taken(q, "s3", "10.0.0.5", per_address=True)  # ... refused on a public host
    assert not limits.live_taken(q, "s2", "10.0.0.6", per_address=True)  # a view is no stream


def test_a_streams_frames_give_way_to_any_other_visitors_request(monkeypatch):
    monkeypatch.setattr(limits, "_SEEN", {})

    def request(queue: SimpleNamespace, session: str = "s1") -> SimpleNamespace:
        blocks = SimpleNamespace(_queue=queue)
        return SimpleNamespace(session_hash=session, request=SimpleNamespace(
            app=SimpleNamespace(get_blocks=lambda: blocks), client=SimpleNamespace(host="10.0.0.1"), headers={}))

    streams = [_event(limits.LIVE, "s1", "a"), _event(limits.LIVE, "s2", "b")]
    assert not limits.others_busy(request(_queue([], streams)))  # only streams: frames go on
    assert limits.others_busy(request(_queue([_event(limits.VIEW, "s3", "c")], streams)))  # a view waits
    assert limits.others_busy(request(_queue([], streams + [_event(limits.HEAVY, "s3", "c")])))  # one runs
    limits._SEEN.clear()  # (s3 was seen: the stream would keep giving way for a second)
    assert not limits.others_busy(request(_queue([_event(limits.HEAVY, "s1", "a")], streams)))  # its own page
    assert not limits.others_busy(SimpleNamespace())  # no queue to read: nothing waits
    # A visitor's calls come one after another: the stream keeps giving way for GIVE_WAY_S after each.
    idle = request(_queue([], streams))
    limits.note_request("s1")  # the stream's own page
    assert not limits.others_busy(idle)
    limits.note_request("s3", now=time.monotonic() - 2 * limits.GIVE_WAY_S)  # long ago
    assert not limits.others_busy(idle)
    limits.note_request("s3")
    assert limits.others_busy(idle)
    limits.note_request("10.0.0.1")  # an upload from the stream's own address
    limits._SEEN.pop("s3")
    assert not limits.others_busy(idle)


def test_a_request_seen_running_keeps_the_stream_giving_way_after_it_ends(monkeypatch):
    monkeypatch.setattr(limits, "_SEEN", {})
    blocks = SimpleNamespace(_queue=_queue([], [_event(limits.VIEW, "s9", "c")]))
    stream = SimpleNamespace(session_hash="s1", request=SimpleNamespace(app=SimpleNamespace(get_blocks=lambda: blocks),
                                                                        client=SimpleNamespace(host="10.0.0.1"),
                                                                        headers={}))
    assert limits.others_busy(stream)  # s9's view runs
    blocks._queue = _queue([], [])  # it ended just now
    assert limits.others_busy(stream)  # ... its next call comes within GIVE_WAY_S


def test_a_malformed_join_is_refused_after_the_pause(monkeypatch) -> None:  # noqa: ANN001
    """Issue 32, row 3: joins with one value too many (or no such endpoint) were answered at once, so one
    address repeating them sent ~1,000 a second and took the event loop from every visitor (×8 p95 on a
    quiet machine). Refused now after REFUSAL_PAUSE_S, as the other refusals are."""
    import asyncio

    from gradio import queueing

    limits.install()
    slept: list[float] = []

    async def no_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(limits.asyncio, "sleep", no_sleep)
    fn = SimpleNamespace(inputs=[object()] * 4)
    queue = SimpleNamespace(blocks=SimpleNamespace(vitviz_limits=object(), fns={7: fn}))
    for body, message in ((SimpleNamespace(fn_index=7, data=[1, 2, 3, 4, "mae-large"]), "takes 4 input values"),
                          (SimpleNamespace(fn_index=99, data=[]), "no endpoint"),
                          (SimpleNamespace(fn_index=7, data="x"), "no list of")):
        ok, text, kind = asyncio.run(queueing.Queue.push(queue, body, None, None))
        assert not ok and message in text and kind == "error"
    assert slept == [limits.REFUSAL_PAUSE_S] * 3
