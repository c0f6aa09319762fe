"""Long work and a flood's calls pause while another visitor's view runs (issue 32, row 2): vitviz.ui.serve.courtesy."""

from __future__ import annotations

import contextvars
import threading
from types import SimpleNamespace

import pytest
import torch

from vitviz.models import runner
from vitviz.ui.serve import courtesy, limits, turns


class _Queue(SimpleNamespace):
    """Gradio's queue as courtesy reads it: running events (``active_jobs``), waiting ones, events by id."""


def _app() -> tuple[SimpleNamespace, _Queue]:
    queue = _Queue(event_queue_per_concurrency_id={}, active_jobs=[], event_ids_to_events={})
    blocks = SimpleNamespace(vitviz_limits=object(), _queue=queue)
    return blocks, queue


def _running(queue: _Queue, address: str, group: str, session: str = "s") -> SimpleNamespace:
    event = SimpleNamespace(_id=f"e{len(queue.event_ids_to_events)}", vitviz_address=address, session_hash=session,
                            concurrency_id=group)
    queue.event_ids_to_events[event._id] = event
    queue.active_jobs.append([event])
    return event


def _in_event(blocks: SimpleNamespace, event: SimpleNamespace, fn, *args):  # noqa: ANN001, ANN202
    """Run ``fn(*args)`` in a new thread as the handler of ``event`` (Gradio's LocalContext set)."""
    from gradio.context import LocalContext

    done = threading.Event()
    out: dict = {}

    def body() -> None:
        LocalContext.blocks.set(blocks)
        LocalContext.event_id.set(event._id)
        out["value"] = fn(*args)
        done.set()

    thread = threading.Thread(target=contextvars.Context().run, args=(body,), daemon=True)
    thread.start()
    return thread, done, out


def _end(queue: _Queue, event: SimpleNamespace) -> None:
    queue.active_jobs = [job for job in queue.active_jobs if job[0] is not event]


def test_a_heavy_call_pauses_while_another_visitors_view_runs_and_goes_on_when_it_ends():
    blocks, queue = _app()
    heavy = _running(queue, "10.3.0.1", limits.HEAVY)
    view = _running(queue, "10.1.0.1", limits.VIEW)
    seen: dict = {}

    def work() -> None:
        courtesy.give_way()
        seen["view still running"] = any(job[0] is view for job in queue.active_jobs)

    thread, done, _ = _in_event(blocks, heavy, work)
    assert not done.wait(0.3)  # paused: the visitor's view runs
    _end(queue, view)
    thread.join(10)
    assert done.is_set() and seen == {"view still running": False}


def test_a_visitors_own_view_a_flooders_view_or_a_view_in_its_own_client_never_pause_a_call():
    blocks, queue = _app()
    heavy = _running(queue, "10.3.0.1", limits.HEAVY)
    _running(queue, "10.3.0.1", limits.VIEW)  # the heavy call's own client
    for _ in range(turns.FLOOD_HELD):
        _running(queue, "10.4.0.1", limits.VIEW)  # a flooding client's views
    thread, done, _ = _in_event(blocks, heavy, courtesy.give_way)
    thread.join(10)
    assert done.is_set()
    # a view of a client that does not flood never yields, whoever else runs
    other = _running(queue, "10.5.0.1", limits.VIEW)
    _running(queue, "10.6.0.1", limits.VIEW)
    thread, done, out = _in_event(blocks, other, courtesy.yielding)
    thread.join(10)
    assert done.is_set() and out["value"] is False


def test_a_flooding_clients_view_yields_to_a_visitors_view():
    blocks, queue = _app()
    flood = [_running(queue, "10.3.0.2", limits.VIEW) for _ in range(turns.FLOOD_HELD)]
    visitor = _running(queue, "10.1.0.1", limits.VIEW)
    thread, done, _ = _in_event(blocks, flood[0], courtesy.give_way)
    assert not done.wait(0.3)
    _end(queue, visitor)
    thread.join(10)
    assert done.is_set()


def test_a_paused_call_waits_within_its_allowance_then_goes_on(monkeypatch):
    blocks, queue = _app()
    monkeypatch.setattr(courtesy, "GRACE_S", 0.05)
    heavy = _running(queue, "10.3.0.1", limits.HEAVY)
    _running(queue, "10.1.0.1", limits.VIEW)  # a view that never ends
    thread, done, _ = _in_event(blocks, heavy, courtesy.give_way)
    thread.join(30)
    assert done.is_set()  # went on although the view still runs


def test_every_model_forward_is_a_pause_point_once_installed():
    """The global forward pre-hook: a heavy call's model pauses inside its forward, not only between calls."""
    courtesy.install()
    blocks, queue = _app()
    heavy = _running(queue, "10.3.0.1", limits.HEAVY)
    view = _running(queue, "10.1.0.1", limits.VIEW)
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    thread, done, out = _in_event(blocks, heavy, lambda: net(torch.ones(1, 4)).shape)
    assert not done.wait(0.3)
    _end(queue, view)
    thread.join(10)
    assert done.is_set() and tuple(out["value"]) == (1, 4)
    # and the library's own loops (probes per fold) through the runner seam
    view = _running(queue, "10.1.0.1", limits.VIEW)
    thread, done, _ = _in_event(blocks, heavy, runner.pause_point)
    assert not done.wait(0.3)
    _end(queue, view)
    thread.join(10)
    assert done.is_set()


def test_outside_a_queued_event_a_pause_point_returns_at_once():
    courtesy.install()
    assert courtesy.yielding() is False
    courtesy.give_way()  # no event context: returns
    assert torch.nn.Linear(2, 2)(torch.ones(1, 2)).shape == (1, 2)


@pytest.mark.parametrize("yields, expected", [(False, 2), (True, 1)])
def test_a_call_that_does_not_yield_takes_every_core_beside_one_that_does(monkeypatch, yields, expected):
    from vitviz.ui.serve import threads

    monkeypatch.setattr(threads, "_RUNNING", {-1: (limits.HEAVY, True)})  # a paused heavy call
    monkeypatch.setattr(courtesy, "yielding", lambda: yields)
    monkeypatch.setattr(threads, "current_group", lambda: limits.VIEW)
    monkeypatch.setattr("vitviz.settings.threads", lambda: 2)
    used = threads.shared(lambda fn, args, kwargs: torch.get_num_threads())(None, (), {})
    assert used == expected


def test_a_handlers_start_and_end_are_pause_points():
    """Every endpoint's error wrapper (vitviz.ui.common.user_errors) pauses a yielding call before its work
    (decoding the photo) and after it (before Gradio draws the answer)."""
    from vitviz.ui.common import user_errors

    courtesy.install()
    blocks, queue = _app()
    heavy = _running(queue, "10.3.0.1", limits.HEAVY)
    view = _running(queue, "10.1.0.1", limits.VIEW)
    started = threading.Event()

    @user_errors
    def handler() -> str:
        started.set()
        return "drawn"

    thread, done, out = _in_event(blocks, heavy, handler)
    assert not done.wait(0.3) and not started.is_set()  # paused before its work
    _end(queue, view)
    thread.join(10)
    assert done.is_set() and out["value"] == "drawn"


def test_background_work_sleeps_while_any_call_runs_unless_a_call_waits_for_its_result():
    from vitviz.cache import LRU, waiting_on_others

    _, queue = _app()
    view = _running(queue, "10.1.0.1", limits.VIEW)
    woke = threading.Event()

    def work() -> None:
        with courtesy.background(queue):
            courtesy.give_way()  # a pause point of the app's warm-up
        woke.set()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    assert not woke.wait(0.3)  # a visitor's call runs: the background work sleeps
    _end(queue, view)
    assert woke.wait(2)
    thread.join()

    # A call that waits for a value the background work computes: it does not sleep then.
    _running(queue, "10.1.0.1", limits.VIEW)
    cache: LRU[str, int] = LRU(4)
    started, gave_way = threading.Event(), threading.Event()

    def compute() -> int:
        started.set()
        while waiting_on_others() == 0:
            threading.Event().wait(0.01)
        courtesy.give_way()  # must return: someone waits for this value
        gave_way.set()
        return 7

    def background() -> None:
        with courtesy.background(queue):
            cache.get_or_compute("k", compute)

    worker = threading.Thread(target=background, daemon=True)
    worker.start()
    assert started.wait(2)
    assert cache.get_or_compute("k", lambda: 0) == 7  # waits for the background's value, which is not held back
    assert gave_way.is_set() and waiting_on_others() == 0
    worker.join()
    assert not getattr(courtesy._local, "background", None)  # the mark ends with the block


def test_background_work_holding_the_attention_capture_does_not_sleep_while_a_call_waits_for_it():
    """The capture lock is held for a whole forward (its pause points): a view that needs it is counted as
    waiting (cache.acquired), so the background work goes on instead of sleeping."""
    from vitviz.cache import waiting_on_others
    from vitviz.explain import capture

    _, queue = _app()
    _running(queue, "10.1.0.1", limits.VIEW)
    holding, done = threading.Event(), threading.Event()

    def background() -> None:
        with courtesy.background(queue), capture.acquired(capture._CAPTURE_LOCK):
            holding.set()
            while waiting_on_others() == 0:
                threading.Event().wait(0.01)
            courtesy.give_way()  # must return: the view waits for this lock
            done.set()

    worker = threading.Thread(target=background, daemon=True)
    worker.start()
    assert holding.wait(2)
    with capture.acquired(capture._CAPTURE_LOCK):  # the view's capture waits for the lock, counted
        assert done.is_set()
    worker.join(5)
    assert waiting_on_others() == 0
