"""Fair admission at the door (vitviz.ui.serve.admission): a class's joins enter Gradio's queue only as fast as it
runs them, and the waiting ones go in least-recently-served address first."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

gr = pytest.importorskip("gradio")

from vitviz.models.costs import GROUPS, Cost, cost  # noqa: E402
from vitviz.ui.serve import admission  # noqa: E402
from vitviz.ui.serve.admission import Admission, Refused  # noqa: E402

VIEW = GROUPS[Cost.VIEW]


@pytest.fixture(autouse=True)
def _one_at_a_time(monkeypatch):
    monkeypatch.setenv("VITVIZ_CONCURRENCY", "1")  # room: 1 running + SLACK
    monkeypatch.setenv("VITVIZ_HEAVY_CONCURRENCY", "1")
    monkeypatch.setattr(admission, "POLL_S", 0.05)
    monkeypatch.setattr(admission, "RUNS_COUNTED", True)  # as once the app's serve.install wrapped the runs


async def _waiting(gate: Admission, c: Cost, n: int) -> None:
    while gate.waiting(c) < n:
        await asyncio.sleep(0.01)


async def _full_then_one_waiting(gate: Admission, c: Cost, filler: str, address: str) -> tuple[list, asyncio.Future]:
    """Fill class ``c``'s room from ``filler`` (one running place plus SLACK), then a join of ``address`` that
    waits: the fillers' tokens and the waiting join."""
    tokens = [await gate.enter(c, filler) for _ in range(1 + admission.SLACK)]
    waiter = asyncio.ensure_future(gate.enter(c, address))
    await _waiting(gate, c, 1)
    return tokens, waiter


def test_until_runs_are_counted_the_door_lets_every_join_in(monkeypatch):
    """An app whose runs are not counted (no ``serve.install``) is not gated: a count with no end would stop it."""
    monkeypatch.setattr(admission, "RUNS_COUNTED", False)

    async def scenario() -> list[int | None]:
        gate = Admission()
        return [await asyncio.wait_for(gate.enter(Cost.HEAVY, "10.0.0.1"), 1.0) for _ in range(5)]

    assert asyncio.run(scenario()) == [None] * 5


def test_joins_past_the_room_wait_and_the_least_recently_served_address_goes_first():
    async def scenario() -> list[str]:
        gate, order = Admission(), []
        room = 1 + admission.SLACK
        first = [await gate.enter(Cost.VIEW, "10.0.0.1") for _ in range(room)]  # let in at once
        assert all(isinstance(t, int) for t in first)

        async def join(address: str) -> None:
            await gate.enter(Cost.VIEW, address)
            order.append(address)

        flood = [asyncio.ensure_future(join("10.0.0.1")) for _ in range(5)]
        await _waiting(gate, Cost.VIEW, 5)
        visitor = asyncio.ensure_future(join("10.0.0.2"))
        await _waiting(gate, Cost.VIEW, 6)
        for _ in range(6):  # each run of a let-in event frees one place
            with gate.running(VIEW):
                pass
            await asyncio.sleep(0.02)
        await asyncio.wait_for(asyncio.gather(*flood, visitor), 5)
        return order

    order = asyncio.run(scenario())
    assert order[0] == "10.0.0.2", order  # not behind the flooding address's five
    assert order.count("10.0.0.1") == 5


def test_addresses_take_turns_whatever_their_backlog():
    async def scenario() -> list[str]:
        gate, order = Admission(), []
        for _ in range(1 + admission.SLACK):
            await gate.enter(Cost.VIEW, "filler")

        async def join(address: str) -> None:
            await gate.enter(Cost.VIEW, address)
            order.append(address)

        tasks = [asyncio.ensure_future(join(a)) for a in ["a"] * 4 + ["b"] * 4]
        await _waiting(gate, Cost.VIEW, 8)
        for _ in range(8):
            with gate.running(VIEW):
                pass
            await asyncio.sleep(0.02)
        await asyncio.wait_for(asyncio.gather(*tasks), 5)
        return order

    order = asyncio.run(scenario())
    assert order == ["a", "b"] * 4


def test_a_join_gradio_did_not_take_gives_its_place_back_and_a_dropped_event_stops_counting(monkeypatch):
    async def scenario() -> None:
        gate = Admission()
        tokens, waiter = await _full_then_one_waiting(gate, Cost.HEAVY, "x", "y")
        gate.give_back(Cost.HEAVY, tokens[0])  # refused by Gradio: never runs
        assert isinstance(await asyncio.wait_for(waiter, 2), int)
        # an event let in that never runs (dropped by Gradio) stops counting after UNSTARTED_S
        monkeypatch.setitem(admission.UNSTARTED_S, Cost.HEAVY, 0.1)
        late = asyncio.ensure_future(gate.enter(Cost.HEAVY, "z"))
        assert isinstance(await asyncio.wait_for(late, 2), int)

    asyncio.run(scenario())


def test_a_client_that_leaves_while_waiting_or_just_let_in_holds_no_place():
    async def scenario() -> None:
        gate = Admission()
        _, leaving = await _full_then_one_waiting(gate, Cost.VIEW, "x", "y")
        leaving.cancel()
        await asyncio.sleep(0.01)
        assert gate.waiting(Cost.VIEW) == 0
        with gate.running(VIEW):  # one place frees: nobody waits for it
            pass
        assert len(gate.classes[Cost.VIEW].unstarted) == admission.SLACK

    asyncio.run(scenario())


def test_past_the_queue_size_a_join_of_an_address_already_waiting_is_refused_and_unknown_classes_pass(monkeypatch):
    monkeypatch.setenv("VITVIZ_MAX_QUEUE", "2")

    async def scenario() -> None:
        gate = Admission()
        _, waiter = await _full_then_one_waiting(gate, Cost.VIEW, "x", "x")
        with pytest.raises(Refused):  # full, and "x" has a join waiting
            await gate.enter(Cost.VIEW, "x")
        other = asyncio.ensure_future(gate.enter(Cost.VIEW, "y"))  # an address with none waiting still waits
        await _waiting(gate, Cost.VIEW, 2)
        with pytest.raises(Refused):
            await gate.enter(Cost.HEAVY, "y")
        other.cancel()
        assert await gate.enter(None, "y") is None and await gate.enter(Cost.LIVE, "y") is None
        waiter.cancel()

    asyncio.run(scenario())


def test_a_run_is_found_by_its_event_id_and_one_with_no_join_behind_it_counts_while_it_runs(monkeypatch):
    monkeypatch.setenv("VITVIZ_HEAVY_CONCURRENCY", "2")  # room for both joins: neither waits

    async def scenario() -> None:
        gate = Admission()
        first, second = await gate.enter(Cost.HEAVY, "a"), await gate.enter(Cost.HEAVY, "b")
        gate.named(Cost.HEAVY, second, "event-2")
        with gate.running("a group of no class", "event-2"):  # found by its id, whatever the group
            assert set(gate.classes[Cost.HEAVY].unstarted) == {first}
        with gate.running(VIEW):
            assert gate._in_flight(Cost.VIEW) == 1
        assert gate._in_flight(Cost.VIEW) == 0
        with gate.running("vitviz-measure"):  # a group not gated: nothing counted
            assert gate._in_flight(Cost.VIEW) == gate._in_flight(Cost.HEAVY) - 1 == 0

    asyncio.run(scenario())


@cost(Cost.VIEW)
def _record(x: float) -> float:
    STARTS.append(x)
    time.sleep(0.15)
    return x


STARTS: list[float] = []


def _served(monkeypatch, events) -> tuple:  # noqa: ANN001
    """A launched app behind the door with a fresh admission (Gradio's run counted, as the app's serve.install
    does): ``events(ui)`` registers its events on a Binder with a number ``x`` and ``out``. Returns
    ``(demo, url, gate)``; the caller closes ``demo``."""
    from starlette.middleware import Middleware

    from tools.appserver import free_port
    from vitviz.ui.binder import Binder
    from vitviz.ui.serve import contacts, http, limits

    monkeypatch.setenv("VITVIZ_TRUSTED_PROXIES", "1")
    monkeypatch.setattr(limits, "JOINS", limits.Joins())
    monkeypatch.setattr(http, "JOINS", limits.JOINS)
    gate = Admission()
    monkeypatch.setattr(admission, "ADMISSION", gate)
    monkeypatch.setattr(http, "ADMISSION", gate)
    contacts.install()
    with gr.Blocks() as demo:
        ui = Binder()
        ui.x, ui.out = gr.Number(), gr.Number()
        events(ui)
    demo.queue(max_size=64, api_open=False)
    monkeypatch.setattr(limits, "_SERVED", {})
    limits.serve_events(demo.config)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                app_kwargs={"middleware": [Middleware(http.Hardening)]})
    return demo, f"http://127.0.0.1:{port}/", gate


def test_through_the_served_app_a_visitor_waits_for_no_flooders_backlog(monkeypatch):
    """A served app behind the door: one address keeps eight joins waiting; a second address's join runs after
    at most the events already let in (room), not after the backlog."""
    from gradio_client import Client

    STARTS.clear()

    def events(ui) -> None:  # noqa: ANN001
        gr.Button().click(**ui.bind(_record, "out", inputs=["x"], quick=False, api_name="record",
                                    api_visibility="public"))

    demo, url, gate = _served(monkeypatch, events)
    stop = threading.Event()
    try:
        def flood() -> None:
            client = Client(url, verbose=False, headers={"X-Forwarded-For": "10.9.9.9"})
            while not stop.is_set():
                try:
                    client.predict(1, api_name="/record")
                except Exception:  # noqa: BLE001 - the app closing at the end
                    return

        threads = [threading.Thread(target=flood, daemon=True) for _ in range(10)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while gate.waiting(Cost.VIEW) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gate.waiting(Cost.VIEW) >= 6, "the flood never filled the door"
        visitor = Client(url, verbose=False, headers={"X-Forwarded-For": "10.1.1.1"})
        before = len(STARTS)
        assert visitor.predict(2, api_name="/record") == 2
        ahead = STARTS.index(2) - before  # flood calls that started after the visitor's join
        assert ahead <= 1 + admission.SLACK, STARTS[before:]
    finally:
        stop.set()
        demo.close()
        for t in threads:
            t.join(timeout=30)


def test_a_run_of_an_address_with_other_calls_in_flight_is_crowding_and_its_views_go_to_the_low_priority_worker(
        monkeypatch):
    """An address with other events let in (or waiting) is crowding; a visitor with one call is not; a crowding
    view's model calls are sent to the ``crowded`` worker (the lowest OS priority), a heavy call stays heavy."""
    from vitviz.models.costs import as_class
    from vitviz.models.workers import shape
    from vitviz.ui.serve import model_workers

    monkeypatch.setenv("VITVIZ_CONCURRENCY", "3")

    async def scenario() -> tuple[bool, bool, bool]:
        gate = Admission()
        a1, a2 = await gate.enter(Cost.VIEW, "10.0.0.1"), await gate.enter(Cost.VIEW, "10.0.0.1")
        b = await gate.enter(Cost.VIEW, "10.0.0.2")
        gate.named(Cost.VIEW, a1, "a1")
        gate.named(Cost.VIEW, b, "b")
        with gate.running(VIEW, "a1") as flooding, gate.running(VIEW, "b") as visitor:
            pass
        gate.named(Cost.VIEW, a2, "a2")
        with gate.running(VIEW, "a2") as alone_now:  # its other call ended
            pass
        assert gate.owners == {}  # nothing remembered past the runs
        return flooding.crowded, visitor.crowded, alone_now.crowded

    assert asyncio.run(scenario()) == (True, False, False)
    mark = admission.CROWDED.set(True)
    try:
        with as_class(Cost.VIEW):
            assert model_workers.cost_of() == "crowded"
        with as_class(Cost.HEAVY):
            assert model_workers.cost_of() == "heavy"
    finally:
        admission.CROWDED.reset(mark)
    with as_class(Cost.VIEW):
        assert model_workers.cost_of() == "view"
    assert shape("crowded", 2, 2, 19) == (1, 19, 2)


def test_a_crowding_address_leaves_the_last_place_to_a_visitor_with_one_call(monkeypatch):
    """Two places: a flooding address gets one (its second join waits though a place is free); a visitor with one
    call takes the other at once; the flood's next join goes in when its first ends."""
    monkeypatch.setenv("VITVIZ_CONCURRENCY", "2")
    assert admission.RESERVED == 1 and admission.SLACK == 0

    async def scenario() -> None:
        gate = Admission()
        first = await gate.enter(Cost.VIEW, "10.6.6.6")
        second = asyncio.ensure_future(gate.enter(Cost.VIEW, "10.6.6.6"))
        await _waiting(gate, Cost.VIEW, 1)
        assert gate._in_flight(Cost.VIEW) == 1  # a free place, kept
        visitor = await asyncio.wait_for(gate.enter(Cost.VIEW, "10.1.1.1"), 0.5)  # no wait
        assert isinstance(visitor, int) and not second.done()
        gate.named(Cost.VIEW, first, "f1")
        with gate.running(VIEW, "f1"):
            pass
        assert isinstance(await asyncio.wait_for(second, 2), int)

    asyncio.run(scenario())


class _Fn:
    """A block function as Gradio's method that runs an event sees it (only its concurrency group is read)."""

    concurrency_id = VIEW


def _generator_steps(gate: Admission, steps: int, fail_at: int | None = None):
    """Gradio's method that runs an event, as :func:`.errors.in_sentences` wraps it, for a generator handler of
    ``steps`` yields: called once per yield (``iterator`` set after the first), ``is_generating`` until the last;
    the call ``fail_at`` raises. Returns the wrapped method and the in-flight count each call saw."""
    from vitviz.ui.serve.errors import in_sentences

    seen: list[int] = []

    async def process_api(self, block_fn, inputs, state=None, request=None, iterator=None, session_hash=None,
                          event_id=None, **kwargs):
        seen.append(gate._in_flight(Cost.VIEW))
        if fail_at is not None and len(seen) == fail_at:
            raise ValueError("the handler's step failed")
        return {"data": [len(seen)], "is_generating": len(seen) < steps, "iterator": "the handler's iterator"}

    return in_sentences(process_api), seen


def test_a_generator_run_holds_its_place_from_its_first_yield_to_its_last(monkeypatch):
    """Gradio runs a generator handler's event with one call per yield: the run counts once, from the first call to
    the last (a join waiting for the class's one place goes in only then), and steals no other event's place."""
    async def scenario() -> None:
        gate = Admission()
        monkeypatch.setattr(admission, "ADMISSION", gate)
        wrapped, seen = _generator_steps(gate, 3)
        token = await gate.enter(Cost.VIEW, "10.0.0.1")
        gate.named(Cost.VIEW, token, "gen")
        waiter = asyncio.ensure_future(gate.enter(Cost.VIEW, "10.0.0.2"))
        await _waiting(gate, Cost.VIEW, 1)
        out = await wrapped(None, block_fn=_Fn(), inputs=[], iterator=None, event_id="gen")
        assert out["is_generating"]
        for _ in range(2):
            await asyncio.sleep(0.15)  # the door's checks come and go: the place stays held
            assert gate.waiting(Cost.VIEW) == 1 and not waiter.done()
            out = await wrapped(None, block_fn=_Fn(), inputs=[], iterator="the handler's iterator", event_id="gen")
        assert not out["is_generating"] and seen == [1, 1, 1]
        assert isinstance(await asyncio.wait_for(waiter, 2), int)  # the generator ended: its place is free
        assert gate._in_flight(Cost.VIEW) == 1 and gate.owners == {waiter.result(): "10.0.0.2"}

    asyncio.run(scenario())


def test_a_generator_run_that_fails_is_cancelled_or_is_dropped_between_yields_gives_its_place_back(monkeypatch):
    monkeypatch.setattr(admission, "BETWEEN_S", 0.2)

    async def scenario() -> None:
        gate = Admission()
        monkeypatch.setattr(admission, "ADMISSION", gate)
        failing, _ = _generator_steps(gate, 3, fail_at=2)
        await failing(None, block_fn=_Fn(), inputs=[], event_id="fails")
        assert gate._in_flight(Cost.VIEW) == 1
        with pytest.raises(gr.Error):
            await failing(None, block_fn=_Fn(), inputs=[], iterator="it", event_id="fails")
        assert gate._in_flight(Cost.VIEW) == 0

        async def slow(self, *args, **kwargs):
            await asyncio.sleep(10)

        from vitviz.ui.serve.errors import in_sentences

        cancelled, _ = _generator_steps(gate, 3)
        await cancelled(None, block_fn=_Fn(), inputs=[], event_id="cancelled")
        step = asyncio.ensure_future(in_sentences(slow)(None, block_fn=_Fn(), inputs=[], iterator="it",
                                                        event_id="cancelled"))
        await asyncio.sleep(0.05)
        assert gate._in_flight(Cost.VIEW) == 1
        step.cancel()  # the visitor stopped it (Gradio cancels the task)
        with pytest.raises(asyncio.CancelledError):
            await step
        assert gate._in_flight(Cost.VIEW) == 0

        dropped, _ = _generator_steps(gate, 3)
        await dropped(None, block_fn=_Fn(), inputs=[], event_id="dropped")  # the client leaves: no next call
        waiter = asyncio.ensure_future(gate.enter(Cost.VIEW, "10.0.0.2"))
        assert isinstance(await asyncio.wait_for(waiter, 2), int)  # after BETWEEN_S the place is given back
        assert gate._in_flight(Cost.VIEW) == 1

    asyncio.run(scenario())


@cost(Cost.VIEW)
def _steps(x: float):
    """A generator handler of a gated class: three yields; from the second on, it notes how many joins wait at the
    door once one does (or five seconds have passed); with ``x`` 3 each later yield takes half a second instead."""
    yield x
    for _ in range(2):
        if x == 3:
            STOPPED_STEPS.append(x)
            time.sleep(0.5)
            yield x
            continue
        deadline = time.monotonic() + 5.0
        while admission.ADMISSION.waiting(Cost.VIEW) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        SEEN_WAITING.append(admission.ADMISSION.waiting(Cost.VIEW))
        time.sleep(0.1)
        yield x


SEEN_WAITING: list[int] = []
STOPPED_STEPS: list[float] = []


def test_through_the_served_app_a_generator_handler_holds_its_place_until_it_ends(monkeypatch):
    """Gradio (the installed one) runs a gated generator handler's event with one call per yield: the door keeps a
    second address's join waiting until the generator ends, then lets it in; nothing stays counted."""
    from gradio_client import Client

    from vitviz.ui.serve import limits

    SEEN_WAITING.clear()
    STOPPED_STEPS.clear()

    def events(ui) -> None:  # noqa: ANN001
        gr.Button().click(_steps, [ui.x], [ui.out], concurrency_id=VIEW, concurrency_limit=1, api_name="steps",
                          api_visibility="public")
        limits.name_endpoint("steps", _steps)
        gr.Button().click(**ui.bind(_record, "out", inputs=["x"], quick=False, api_name="record",
                                    api_visibility="public"))

    demo, url, gate = _served(monkeypatch, events)
    try:
        first, second = (Client(url, verbose=False, headers={"X-Forwarded-For": a}) for a in ("10.0.0.1", "10.0.0.2"))
        generating = first.submit(1, api_name="/steps")
        deadline = time.monotonic() + 30
        while not gate.classes[Cost.VIEW].running and time.monotonic() < deadline:
            time.sleep(0.02)
        other = second.submit(2, api_name="/record")
        assert generating.result(timeout=30) == 1 and other.result(timeout=30) == 2
        assert SEEN_WAITING == [1, 1]  # the second join waited at the door through the generator's later yields
        assert gate._in_flight(Cost.VIEW) == 0 and gate.owners == {}
        stopped = Client(url, verbose=False, headers={"X-Forwarded-For": "10.0.0.3"}).submit(3, api_name="/steps")
        while not stopped.outputs() and time.monotonic() < deadline:
            time.sleep(0.02)
        stopped.cancel()  # the visitor stops it while its second yield computes (Gradio waits for that yield)
        while gate._in_flight(Cost.VIEW) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert gate._in_flight(Cost.VIEW) == 0 and gate.owners == {}
        time.sleep(0.6)
        assert STOPPED_STEPS == [3]  # stopped: its last yield never ran
    finally:
        demo.close()
