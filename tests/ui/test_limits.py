"""What one client may hold in the queue (vitviz.ui.serve.limits), counted at the door from the queue's HTTP
protocol; groups declared when events are registered (vitviz.ui.binder); small, bounded sessions."""

from __future__ import annotations

import threading
import time
import tracemalloc
from types import SimpleNamespace

import httpx
import pytest

gr = pytest.importorskip("gradio")

from vitviz.ui.binder import PRIVATE_PREFIX, Binder  # noqa: E402
from vitviz.ui.serve import clients, contacts, limits  # noqa: E402
from vitviz.models.costs import Cost, cost  # noqa: E402


def _request(peer: str, xff: str | None = None) -> SimpleNamespace:
    headers = {"x-forwarded-for": xff} if xff is not None else {}
    return SimpleNamespace(client=SimpleNamespace(host=peer), headers=headers)


def test_client_address_trusts_only_the_proxy_hops():
    assert clients.client_address(_request("10.0.0.1", "1.2.3.4"), 0) == "10.0.0.1"
    # A client can forge the left part; the last hop is the one the proxy added.
    assert clients.client_address(_request("10.0.0.1", "6.6.6.6, 1.2.3.4"), 1) == "1.2.3.4"
    assert clients.client_address(_request("10.0.0.1", "6.6.6.6, 1.2.3.4"), 2) == "6.6.6.6"
    assert clients.client_address(_request("10.0.0.1", "not-an-ip"), 1) == "10.0.0.1"
    assert clients.client_address(_request("10.0.0.1"), 1) == "10.0.0.1"
    # The machine's own user (loopback) has only the per-session cap.
    assert clients.exempt("127.0.0.1") and clients.exempt("::1") and not clients.exempt("10.0.0.1")
    assert not clients.exempt("unknown")


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
def free_port_value() -> int:
    from tools.appserver import free_port

    return free_port()


@pytest.fixture()
def scratch_app(monkeypatch, free_port_value):
    """A model-free app wired by a Binder, behind the door: caps 4 per session, 6 per address."""
    from starlette.middleware import Middleware

    from vitviz.ui.serve import http

    monkeypatch.setenv("VITVIZ_SESSION_QUEUE", "4")
    monkeypatch.setenv("VITVIZ_CLIENT_QUEUE", "6")
    monkeypatch.setenv("VITVIZ_TRUSTED_PROXIES", "1")
    monkeypatch.setattr(limits, "JOINS", limits.Joins())
    monkeypatch.setattr(http, "JOINS", limits.JOINS)
    with gr.Blocks() as demo:
        ui = Binder()
        ui.x, ui.out = gr.Number(), gr.Number()
        button = gr.Button()
        button.click(**ui.bind(_fast, "out", inputs=["x"], quick=False))  # private, registered first
        button.click(**ui.bind(_slow, "out", inputs=["x"], quick=False, api_name="slow", api_visibility="public"))
        button.click(**ui.bind(_fast, "out", inputs=["x"], quick=False, api_name="_fast", api_visibility="public"))
        button.click(**ui.bind(run_sweep, "out", inputs=["x"], quick=False, api_name="sweep",
                               api_visibility="public"))
    demo.queue(max_size=64, api_open=False)
    monkeypatch.setattr(limits, "_SERVED", {})
    limits.serve_events(demo.config)  # as serve.install does: the door knows which events are expensive
    demo.launch(server_name="127.0.0.1", server_port=free_port_value, prevent_thread_lock=True, quiet=True,
                app_kwargs={"middleware": [Middleware(http.Hardening)]})
    try:
        yield demo, f"http://127.0.0.1:{free_port_value}/"
    finally:
        demo.close()


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
    assert not limits.JOINS.held or all(h.address == "10.9.9.9" for h in limits.JOINS.held.values())


def test_joins_over_the_session_cap_are_refused_as_a_full_queue_and_completed_ones_count_no_more(scratch_app):
    """The door counts a session's joins from their answers and its event stream: a fifth join while four wait
    is refused (HTTP 503 and a sentence, as Gradio's full queue); once they completed, joins are admitted."""
    demo, url = scratch_app
    index = next(i for i, fn in demo.fns.items() if fn.api_name == "slow")
    join = {"data": [1], "fn_index": index, "session_hash": "abc123", "event_data": None, "trigger_id": None}
    with httpx.Client(base_url=url, timeout=60) as client:
        answers = [client.post("gradio_api/queue/join", json=join) for _ in range(5)]
        assert [a.status_code for a in answers] == [200] * 4 + [503]
        assert "Too many requests from you" in answers[-1].json()["detail"]
        with client.stream("GET", "gradio_api/queue/data", params={"session_hash": "abc123"}) as events:
            done = 0
            for line in events.iter_lines():
                done += '"process_completed"' in line
                if done == 4:
                    break
        assert client.post("gradio_api/queue/join", json=join).status_code == 200


def test_one_address_holds_at_most_its_share_of_expensive_joins_and_another_is_served(scratch_app, monkeypatch):
    """VITVIZ_CLIENT_HEAVY: past it, an address's expensive joins (the heavy group's) are refused with a sentence,
    while its views and another address's expensive joins are admitted; so is the HTTP API's ``/call/API``."""
    demo, url = scratch_app
    monkeypatch.setenv("VITVIZ_CLIENT_HEAVY", "2")
    index = {fn.api_name: i for i, fn in demo.fns.items()}
    assert limits.of_join(index["sweep"]) is Cost.HEAVY and limits.of_join(index["slow"]) is Cost.VIEW

    def join(name: str, session: str, address: str) -> httpx.Response:
        body = {"data": [1], "fn_index": index[name], "session_hash": session, "event_data": None, "trigger_id": None}
        return httpx.post(url + "gradio_api/queue/join", json=body, headers={"X-Forwarded-For": address}, timeout=60)

    flood = [join("sweep", f"f{i}", "10.9.9.9") for i in range(3)]  # never read: they stay held
    assert [r.status_code for r in flood] == [200, 200, 503]
    assert flood[-1].json()["detail"] == limits.HEAVY_BUSY_MESSAGE
    call = httpx.post(url + "gradio_api/call/sweep", json={"data": [1]}, headers={"X-Forwarded-For": "10.9.9.9"},
                      timeout=60)
    assert call.status_code == 503 and call.json()["detail"] == limits.HEAVY_BUSY_MESSAGE
    assert join("slow", "f9", "10.9.9.9").status_code == 200  # a view: only the address's queue cap counts
    assert join("sweep", "o1", "10.1.1.1").status_code == 200  # another address


def test_the_expensive_cap_counts_only_expensive_joins_of_one_capped_address(monkeypatch):
    monkeypatch.setenv("VITVIZ_CLIENT_HEAVY", "3")
    joins = limits.Joins()
    for i in range(3):
        assert joins.admit(f"s{i}", "10.0.0.5", heavy=True)[0] is not None
    assert joins.admit("s9", "10.0.0.5", heavy=True) == (None, limits.HEAVY_BUSY_MESSAGE)
    assert joins.admit("s9", "10.0.0.5")[0] is not None  # a view
    assert joins.admit("s9", "10.0.0.6", heavy=True)[0] is not None  # another address
    assert all(joins.admit(f"l{i}", "127.0.0.1", heavy=True)[0] for i in range(5))  # the machine's own user
    first = next(k for k, h in joins.held.items() if h.address == "10.0.0.5" and h.heavy)
    joins.answered(first, "e1")
    joins.completed("e1")
    assert joins.admit("s9", "10.0.0.5", heavy=True)[0] is not None  # one ended: room for one more


def test_unknown_function_index_is_a_400(scratch_app):
    _, url = scratch_app
    r = httpx.post(url + "gradio_api/queue/join",
                   json={"data": [1], "fn_index": 10_000, "session_hash": "s1", "event_data": None, "trigger_id": None})
    assert r.status_code == 400 and "no endpoint" in r.json()["detail"]


def test_queued_functions_do_not_skip_the_queue(scratch_app):
    _, url = scratch_app
    r = httpx.post(url + "gradio_api/run/slow", json={"data": [1]})
    assert r.status_code == 404


def test_events_are_registered_in_their_declared_group_and_private_ones_never_take_a_public_name(scratch_app):
    demo, _ = scratch_app
    names = {fn.api_name for fn in demo.fns.values() if fn.api_visibility == "public"}
    assert names == {"slow", "_fast", "sweep"}
    private = [fn.api_name for fn in demo.fns.values() if fn.api_visibility != "public"]
    assert private and all(n.startswith(PRIVATE_PREFIX) for n in private)
    groups = {fn.api_name: (fn.concurrency_id, fn.concurrency_limit) for fn in demo.fns.values()}
    assert groups["sweep"] == (limits.HEAVY, 1) and groups["slow"] == (limits.VIEW, 2)


def test_sessions_are_small_and_bounded():
    contacts.install()
    with gr.Blocks() as demo:
        big = "x" * 500_000  # a large default value, like a figure with hover text
        gr.Textbox(big)
        state = gr.State([0])
    demo.state_session_capacity = 50
    holder = gr.state_holder.StateHolder()
    holder.set_blocks(demo)
    tracemalloc.start()
    for i in range(200):
        holder[f"session-{i}"][state._id] = [i]
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(holder.session_data) <= 50
    assert current / 50 < 100_000, "each kept session should hold far less than the page configuration"
    assert holder["session-199"][state._id] == [199]


def test_one_camera_stream_per_session_and_on_a_public_host_per_address(monkeypatch):
    joins = limits.Joins()
    ticket, _ = joins.admit("s1", "10.0.0.5", live=True)
    joins.answered(ticket, "e1")
    assert joins.admit("s1", "10.0.0.9", live=True) == (None, limits.LIVE_BUSY_MESSAGE)  # the same session
    assert joins.admit("s3", "10.0.0.5", live=True)[0] is not None  # another session, same address
    monkeypatch.setenv("VITVIZ_PUBLIC", "1")
    assert joins.admit("s4", "10.0.0.5", live=True) == (None, limits.LIVE_BUSY_MESSAGE)  # ... not on a public host
    assert joins.admit("s1", "10.0.0.5")[0] is not None  # a view beside the stream
    joins.completed("e1")
    assert joins.admit("s1", "10.0.0.9", live=True)[0] is not None  # its stream ended: another may start
    assert joins.admit("s5", "10.0.0.5", live=True)[0] is None  # s3's stream (same address) still runs


def test_a_streams_frames_give_way_to_any_other_visitors_request(monkeypatch):
    joins = limits.Joins()
    monkeypatch.setattr(limits, "JOINS", joins)

    def stream(session: str = "s1") -> SimpleNamespace:
        return SimpleNamespace(session_hash=session, request=_request("10.0.0.1"))

    for session in ("s1", "s2"):  # two streams
        ticket, _ = joins.admit(session, f"10.0.0.{session[-1]}", live=True)
        joins.answered(ticket, f"stream-{session}")
    assert not limits.others_busy(stream("s1")) and not limits.others_busy(stream("s2"))  # only streams
    ticket, _ = joins.admit("s3", "10.0.0.3")  # a view waits or runs
    joins.answered(ticket, "view")
    assert limits.others_busy(stream())
    joins.completed("view")
    assert limits.others_busy(stream())  # its next call comes within GIVE_WAY_S
    joins.seen.clear()
    assert not limits.others_busy(stream())
    joins.note("s3", now=time.monotonic() - 2 * limits.GIVE_WAY_S)  # long ago
    assert not limits.others_busy(stream())
    joins.note("10.0.0.1")  # an upload from the stream's own address
    assert not limits.others_busy(stream())
    ticket, _ = joins.admit("s1", "10.0.0.1")  # its own page's view
    assert not limits.others_busy(stream())
    assert not limits.others_busy(SimpleNamespace())  # no request to read: only other sessions count


def test_the_event_stream_reader_finds_completed_events_split_across_pieces():
    joins = limits.Joins()
    for event in ("e1", "e2", "e3"):
        ticket, _ = joins.admit("s", "10.0.0.1")
        joins.answered(ticket, event)
    reader = limits.CompletedEvents(joins)
    stream = (b'data: {"msg":"estimation","event_id":"e1","rank":0}\n\n'
              b'data: {"msg":"process_completed","event_id":"e1","output":{"data":["' + b"x" * 100_000 + b'"]}}\n\n'
              b'data: {"msg": "process_completed", "event_id": "e3", "success": true}\n\n')
    for at in range(0, len(stream), 777):
        reader.feed(stream[at:at + 777])
    assert set(joins.held) == {"e2"}
