"""Issue 32 rows 1-2: a model call's intra-op threads follow its cost class (vitviz.models.threads), so
expensive work leaves a core to the views. No timing: the threads each call ran on are checked."""

from __future__ import annotations

import threading

import torch

from vitviz.models import runner, threads
from vitviz.models.costs import Cost


def test_heavy_calls_leave_a_core_a_view_takes_its_share_and_a_live_frame_one():
    assert threads.share(Cost.HEAVY, [], 2) == 2 and threads.share(Cost.HEAVY, [Cost.VIEW], 2) == 1
    assert threads.share(Cost.HEAVY, [Cost.VIEW], 8) == 7 and threads.share(Cost.HEAVY, [], 1) == 1
    assert threads.share(Cost.VIEW, [], 2) == 2  # alone: every core
    assert threads.share(Cost.VIEW, [Cost.HEAVY], 2) == 1  # beside a heavy call: the core it leaves
    assert threads.share(Cost.LIVE, [], 2) == 1 and threads.share(Cost.LIVE, [Cost.VIEW], 8) == 1  # issue 30
    assert threads.share(Cost.VIEW, [Cost.VIEW, Cost.HEAVY, Cost.LIVE], 8) == 2


def test_each_model_call_runs_on_its_groups_threads_and_restores_them(monkeypatch):  # noqa: ANN001
    """Two calls at once, a heavy one and a view: each ran on the threads of its group, set in its own thread
    (torch keeps the count per thread), and each thread's count is back afterwards."""
    from vitviz import settings

    monkeypatch.setattr(settings, "threads", lambda: 2)
    groups = {}  # thread -> group of its event (what gradio.context.LocalContext says in a handler)
    monkeypatch.setattr(threads, "current", lambda: groups.get(threading.get_ident(), Cost.VIEW))
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
        groups[threading.get_ident()] = Cost.HEAVY
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
    monkeypatch.setattr(threads, "current", lambda: groups.get(threading.get_ident(), Cost.VIEW))
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
        groups[threading.get_ident()] = Cost.HEAVY
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


def test_the_served_app_installs_it_on_the_cpu_and_zerogpu_keeps_its_own():
    from vitviz.ui import serve

    runner.install(None)
    try:
        serve.install_process()
        assert runner.installed()  # no `spaces` here: the thread share
    finally:
        runner.install(None)
