"""The app's warm-up (vitviz.ui.warmup): it waits until the server listens, and a failing step stops nothing."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace


def test_warm_up_waits_for_the_server_then_runs(monkeypatch):
    from vitviz.ui import warmup

    import os

    import torch

    monkeypatch.setenv("VITVIZ_WARMUP", "1")
    monkeypatch.setenv("VITVIZ_THREADS", "2")
    ran = threading.Event()
    seen: dict = {}

    def warm() -> None:
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        seen["threads"] = torch.get_num_threads()
        ran.set()

    monkeypatch.setattr(warmup, "warm", warm)
    demo = SimpleNamespace(is_running=False)
    thread = warmup.start(demo)
    time.sleep(0.5)
    assert not ran.is_set() and thread.daemon  # not before the app listens; never keeps the process alive
    demo.is_running = True
    assert ran.wait(5)
    # at the lowest priority (a visitor's request always gets the cores first), on the threads a visitor's call
    # gets (oneDNN's kernels are built per thread count)
    assert seen == {"nice": warmup.IDLE_NICE, "threads": 2}
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) != warmup.IDLE_NICE  # only that thread


def test_a_failing_step_is_one_log_line_and_the_next_step_runs(monkeypatch, caplog):
    from vitviz.ui import warmup

    def broken() -> str:
        raise RuntimeError("weights missing")

    monkeypatch.setattr(warmup, "_features", broken)
    monkeypatch.setattr(warmup, "_explain", lambda: "done")
    with caplog.at_level("INFO", logger="vitviz.ui"):
        warmup.warm()
    messages = [r.getMessage() for r in caplog.records]
    assert any("warm-up (features) skipped: weights missing" in m for m in messages)
    assert any(m.startswith("warm-up (explain): done in ") for m in messages)


def test_warm_up_is_on_by_default_and_off_with_0(monkeypatch):
    from vitviz import settings
    from vitviz.ui import warmup

    monkeypatch.delenv("VITVIZ_WARMUP", raising=False)
    assert settings.get("VITVIZ_WARMUP")  # python app.py warms up unless told not to
    monkeypatch.setenv("VITVIZ_WARMUP", "0")
    monkeypatch.setattr(warmup, "warm", lambda: (_ for _ in ()).throw(AssertionError("warmed")))
    assert warmup.start(SimpleNamespace(is_running=True)) is None


def test_the_tabs_default_models_are_loaded_where_their_views_run(sent_calls, monkeypatch):
    from vitviz.models import loading
    from vitviz.ui import warmup

    monkeypatch.setattr(loading, "CACHE", type(loading.CACHE)(8, budgeted=False))
    said = warmup._models()
    names = said.split(" in memory")[0].split(", ")
    assert "mae-tiny" in names
    # one call per model sent where model calls run: with model workers, the worker loads its weights
    assert sent_calls == ["on_module"] * len(names)
    assert all(loading.is_loaded(n) for n in names)
