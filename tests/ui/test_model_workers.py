"""The served app with its model calls in worker processes (VITVIZ_WORKERS=processes)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tools.appserver import running_app
from vitviz.models import runner
from vitviz.models import costs
from vitviz.ui.serve import model_workers
from vitviz.models.costs import Cost


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists() and "(zombie)" not in Path(f"/proc/{pid}/status").read_text().lower() \
        if Path(f"/proc/{pid}").exists() else False


def test_the_cost_class_is_the_calls(monkeypatch):
    assert model_workers.cost_of() == "view"  # outside any call
    for c in (Cost.HEAVY, Cost.LIVE, Cost.VIEW):
        with costs.as_class(c):
            assert model_workers.cost_of() == c.value
    seen = []
    frame = threading.Thread(target=lambda: seen.append(model_workers.cost_of()), name="vitviz-live_0")
    frame.start()
    frame.join()
    assert seen == ["live"] and model_workers.cost_of() == "view"


def test_a_view_whose_model_is_not_in_memory_is_loaded_by_the_view_worker(monkeypatch):
    """Each worker loads its own copy: the one that serves the model's next views loads it, not the heavy one."""
    from vitviz.models import loading
    from vitviz.models.costs import cost, model_cost

    monkeypatch.setattr(loading, "CACHE", type(loading.CACHE)(4, budgeted=False))

    @cost(model_cost(0))
    def view(model: str) -> None: ...

    with costs.running(view, ["mae-tiny"]):
        assert costs.current() is Cost.HEAVY and model_workers.cost_of() == "view"


def test_install_and_uninstall_leave_the_library_in_process():
    workers = model_workers.install(start=False)
    try:
        assert runner.dispatching() and workers.pids("view") == []
    finally:
        model_workers.uninstall()
    assert not runner.dispatching()


def test_the_app_with_workers_answers_as_without_and_leaves_no_process(app_url, photo_path, tmp_path):
    from gradio_client import Client, handle_file

    args = (handle_file(str(photo_path)), "mae-tiny", 0.75, 0, "random")
    alone = Client(app_url, verbose=False).predict(*args, api_name="/reconstruct")
    with running_app(log=tmp_path / "app.log", HF_HUB_OFFLINE="1", VITVIZ_PACKAGE_WEIGHTS="0", VITVIZ_WARMUP="0",
                     VITVIZ_WORKERS="processes") as (url, proc):
        there = Client(url, verbose=False).predict(*args, api_name="/reconstruct")
        workers = _children(proc.pid)
        assert len(workers) >= 2  # the view pool's process, the heavy and the live ones, multiprocessing's tracker
        nested = [c for w in workers for c in _children(w)]
        assert not nested, f"a worker process started processes of its own: {nested}"
    for a, b in zip(alone[:4], there[:4]):
        assert np.array_equal(np.asarray(Image.open(a)), np.asarray(Image.open(b)))
    assert alone[4] == there[4]
    deadline = time.time() + 10
    while any(_alive(p) for p in workers) and time.time() < deadline:
        time.sleep(0.2)
    assert not [p for p in workers if _alive(p)], "worker processes outlived the app"
    assert os.getpid() not in workers


def test_a_spawned_worker_importing_the_app_builds_no_page_and_starts_no_workers(monkeypatch):
    """``spawn`` runs the parent's main file under the name ``__mp_main__`` in each worker: app.py must then
    build nothing (no Gradio page, no second set of workers inside the worker)."""
    import runpy

    monkeypatch.setenv("VITVIZ_WORKERS", "processes")
    started = []
    monkeypatch.setattr(model_workers, "install", lambda *a, **k: started.append(a))
    names = runpy.run_path(str(Path(__file__).resolve().parents[2] / "app.py"), run_name="__mp_main__")
    assert "demo" not in names and not started


@pytest.mark.parametrize("public, started", [("1", 1), ("0", 0)])
def test_a_public_host_runs_its_model_calls_in_workers_by_default(monkeypatch, public, started):
    from vitviz.models import threads
    from vitviz.ui import serve

    monkeypatch.setenv("VITVIZ_PUBLIC", public)
    monkeypatch.delenv("VITVIZ_WORKERS", raising=False)  # auto
    calls = []
    monkeypatch.setattr(model_workers, "install", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(threads, "install", lambda *a, **k: None)
    serve.install_process()
    assert len(calls) == started
