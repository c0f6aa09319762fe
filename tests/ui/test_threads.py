"""Issue 32 rows 1-2: a model call's intra-op threads follow its cost class (vitviz.ui.serve.threads), so
expensive work leaves a core to the views. No timing: the threads each call ran on are checked."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import torch

from vitviz.models import runner
from vitviz.ui.serve import limits, threads


def test_heavy_calls_leave_a_core_a_view_takes_its_share_and_a_live_frame_one():
    assert threads.share(limits.HEAVY, [], 2) == 2 and threads.share(limits.HEAVY, [limits.VIEW], 2) == 1
    assert threads.share(limits.HEAVY, [limits.VIEW], 8) == 7 and threads.share(limits.HEAVY, [], 1) == 1
    assert threads.share(limits.VIEW, [], 2) == 2  # alone: every core
    assert threads.share(limits.VIEW, [limits.HEAVY], 2) == 1  # beside a heavy call: the core it leaves
    assert threads.share(limits.LIVE, [], 2) == 1 and threads.share(limits.LIVE, [limits.VIEW], 8) == 1  # issue 30
    assert threads.share(limits.VIEW, [limits.VIEW, limits.HEAVY, limits.LIVE], 8) == 2


def test_each_model_call_runs_on_its_groups_threads_and_restores_them(monkeypatch):  # noqa: ANN001
    """Two calls at once, a heavy one and a view: each ran on the threads of its group, set in its own thread
    (torch keeps the count per thread), and each thread's count is back afterwards."""
    from vitviz import settings

    monkeypatch.setattr(settings, "threads", lambda: 2)
    groups = {}  # thread -> group of its event (what gradio.context.LocalContext says in a handler)
    monkeypatch.setattr(threads, "current_group", lambda: groups.get(threading.get_ident(), limits.VIEW))
    heavy_in, release = threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    @runner.runs_model
    def heavy_forward() -> None:
        seen["heavy"] = torch.get_num_threads()
        heavy_in.set()
        assert release.wait(30)
        seen["heavy after the view"] = torch.get_num_threads()

    @runner.runs_model
    def view_forward() -> None:
        seen["view"] = torch.get_num_threads()

    after: dict[str, int] = {}

    def heavy_handler() -> None:
        groups[threading.get_ident()] = limits.HEAVY
        torch.set_num_threads(2)
        heavy_forward()
        after["heavy"] = torch.get_num_threads()

    threads.install()
    try:
        view_forward()
        alone = seen.pop("view")
        worker = threading.Thread(target=heavy_handler)
        worker.start()
        assert heavy_in.wait(30)
        view_forward()  # while the heavy call runs
        release.set()
        worker.join(30)
    finally:
        runner.install(None)
    assert alone == 2 and seen == {"heavy": 2, "view": 1, "heavy after the view": 2}
    assert after == {"heavy": 2}


def test_a_heavy_call_gives_a_core_back_at_its_next_layer_while_another_call_runs(monkeypatch):  # noqa: ANN001
    """Alone, a heavy call runs on every core; at the next module forward after another model call started,
    on one fewer; after that call, on every core again (threads.rebalance, a forward pre-hook)."""
    from vitviz import settings

    monkeypatch.setattr(settings, "threads", lambda: 2)
    groups = {}
    monkeypatch.setattr(threads, "current_group", lambda: groups.get(threading.get_ident(), limits.VIEW))
    layer = torch.nn.Identity()
    heavy_in, view_in, view_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[int] = []

    @runner.runs_model
    def heavy_forward() -> None:
        layer(torch.zeros(1))
        seen.append(torch.get_num_threads())
        heavy_in.set()
        assert view_in.wait(30)
        layer(torch.zeros(1))  # a layer while the view runs
        seen.append(torch.get_num_threads())
        view_out.set()
        assert release.wait(30)
        layer(torch.zeros(1))  # a layer after it
        seen.append(torch.get_num_threads())

    release = threading.Event()

    @runner.runs_model
    def view_forward() -> None:
        view_in.set()
        assert view_out.wait(30)

    def heavy_handler() -> None:
        groups[threading.get_ident()] = limits.HEAVY
        torch.set_num_threads(2)
        heavy_forward()

    threads.install()
    try:
        worker = threading.Thread(target=heavy_handler)
        worker.start()
        assert heavy_in.wait(30)
        view_forward()
        release.set()
        worker.join(30)
    finally:
        runner.install(None)
    assert seen == [2, 1, 2]


def test_the_group_is_read_from_the_event_the_handler_runs_for():
    from gradio.context import LocalContext

    event = SimpleNamespace(concurrency_id=limits.HEAVY)
    blocks = SimpleNamespace(_queue=SimpleNamespace(event_ids_to_events={"e1": event}))
    result: list[str] = []

    def handler() -> None:  # what gradio.utils.get_function_with_locals sets in the handler's thread
        LocalContext.blocks.set(blocks)
        LocalContext.event_id.set("e1")
        result.append(threads.current_group())
        LocalContext.event_id.set("other")
        result.append(threads.current_group())

    worker = threading.Thread(target=handler)
    worker.start()
    worker.join(10)
    assert result == [limits.HEAVY, limits.VIEW] and threads.current_group() == limits.VIEW


def test_the_served_app_installs_it_on_the_cpu_and_zerogpu_keeps_its_own():
    from vitviz.ui import serve

    runner.install(None)
    try:
        serve.install_process()
        assert runner.installed()  # no `spaces` here: the thread share
    finally:
        runner.install(None)


def test_background_work_keeps_its_threads_and_never_counts_beside_a_call(monkeypatch):  # noqa: ANN001
    """The warm-up (courtesy.background) runs model calls on the threads it set, and a visitor's heavy call
    beside it still gets every core: the warm-up pauses while calls run."""
    from vitviz import settings
    from vitviz.ui.serve import courtesy

    monkeypatch.setattr(settings, "threads", lambda: 2)
    groups = {}
    monkeypatch.setattr(threads, "current_group", lambda: groups.get(threading.get_ident(), limits.VIEW))
    inside, release = threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    @runner.runs_model
    def warm_forward() -> None:
        seen["warm-up"] = torch.get_num_threads()
        inside.set()
        assert release.wait(30)

    @runner.runs_model
    def heavy_forward() -> None:
        seen["heavy"] = torch.get_num_threads()

    def warm_up() -> None:
        torch.set_num_threads(1)
        with courtesy.background(None):
            warm_forward()

    def heavy_handler() -> None:
        groups[threading.get_ident()] = limits.HEAVY
        heavy_forward()

    threads.install()
    try:
        worker = threading.Thread(target=warm_up)
        worker.start()
        assert inside.wait(30)
        heavy = threading.Thread(target=heavy_handler)
        heavy.start()
        heavy.join(30)
        release.set()
        worker.join(30)
    finally:
        runner.install(None)
    assert seen == {"warm-up": 1, "heavy": 2}
