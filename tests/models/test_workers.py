"""Model calls in worker processes (vitviz.models.workers) answer bit for bit what the calling process answers."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch

import vitviz
from vitviz.explain.attention import capture
from vitviz.explain.faithfulness import faithfulness
from vitviz.explain.methods import explain_maps
from vitviz.models import runner
from vitviz.models.loading import load_model
from vitviz.models.runner import runs_model
from vitviz.models.workers import ModelRef, WorkerCrashed, Workers, reference


@runs_model
def where_it_ran(model: vitviz.LoadedModel) -> tuple[int, int, str]:
    """The process that ran the call, its OS priority, and the model it was given."""
    return os.getpid(), os.nice(0) if hasattr(os, "nice") else 0, model.name


@runs_model
def die(model: vitviz.LoadedModel) -> None:
    """Ends its process without a word, as the kernel's out-of-memory killer would."""
    os._exit(3)


@pytest.fixture(scope="module")
def workers():
    pool = Workers(views=1, threads=torch.get_num_threads())
    yield pool
    pool.close()
    assert pool.pids("view") == [] and pool.pids("heavy") == []


@pytest.fixture()
def dispatched(workers):
    runner.install_dispatch(workers.submit)
    try:
        yield workers
    finally:
        runner.install_dispatch(None)


@pytest.fixture(scope="module")
def mae():
    return load_model("mae-tiny")


@pytest.fixture(scope="module")
def deit():
    return load_model("deit-small-distilled", random_init=True)


def _equal(a, b) -> None:
    """Bit-for-bit equality of two results, field by field (arrays by their bytes)."""
    assert type(a) is type(b)
    fields = vars(a) if hasattr(a, "__dict__") else None
    if fields is None:
        if isinstance(a, (tuple, list)):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                _equal(x, y)
        elif isinstance(a, dict):
            assert a.keys() == b.keys()
            for k in a:
                _equal(a[k], b[k])
        elif isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        elif isinstance(a, torch.Tensor):
            assert a.dtype == b.dtype and torch.equal(a, b)
        else:
            assert a == b or (a != a and b != b)
        return
    assert fields.keys() == vars(b).keys()
    for k in fields:
        _equal(fields[k], vars(b)[k])


def test_reconstruct_is_bit_for_bit_the_same_in_a_worker(dispatched, mae, photo_path):
    alone = vitviz.reconstruct(mae, photo_path, mask_ratio=0.75, seed=3)
    there = vitviz.reconstruct(mae, photo_path, mask_ratio=0.75, seed=3)
    assert dispatched.pids("view")  # it did run in a worker
    runner.install_dispatch(None)
    here = vitviz.reconstruct(mae, photo_path, mask_ratio=0.75, seed=3)
    _equal(here, there)
    _equal(here, alone)
    assert here.reconstruction.tobytes() == there.reconstruction.tobytes() and here.masked_mse == there.masked_mse


def test_attention_and_explanation_are_bit_for_bit_the_same(dispatched, mae, deit, photo_path):
    there_a = capture(mae, photo_path)
    there_e = explain_maps(deit, photo_path, methods=("rollout", "gradcam"))
    runner.install_dispatch(None)
    _equal(capture(mae, photo_path), there_a)
    _equal(explain_maps(deit, photo_path, methods=("rollout", "gradcam")), there_e)
    assert there_a.attentions.flags.writeable is False  # read-only as the calling process makes it


def test_a_dict_the_call_fills_is_filled_in_the_caller(dispatched, deit, photo_path):
    e = explain_maps(deit, photo_path, methods=("rollout",))
    known: dict = {}
    there = faithfulness(deit, photo_path, methods=("rollout",), steps=3, explanation=e, known=known, random=0)
    assert known  # the worker's rows came back
    runner.install_dispatch(None)
    mine: dict = {}
    _equal(faithfulness(deit, photo_path, methods=("rollout",), steps=3, explanation=e, known=mine, random=0), there)
    assert mine.keys() == known.keys() and all(mine[k].tobytes() == known[k].tobytes() for k in mine)


def test_calls_go_to_the_worker_of_their_cost_class(dispatched, mae):
    view_pid, view_nice, name = where_it_ran(mae)
    with runner.cost("heavy"):
        heavy_pid, heavy_nice, _ = where_it_ran(mae)
    with runner.cost("live"):
        live_pid, _, _ = where_it_ran(mae)
    assert name == "mae-tiny" and len({os.getpid(), view_pid, heavy_pid, live_pid}) == 4
    assert heavy_nice > view_nice or heavy_nice == 19
    assert dispatched.pids("view") == [view_pid] and dispatched.pids("heavy") == [heavy_pid]


def test_only_a_small_reference_crosses_for_a_model(mae):
    ref = reference(mae)
    assert isinstance(ref, ModelRef) and ref.name == "mae-tiny" and ref.part is None and not ref.random_init
    assert len(pickle.dumps(ref)) < 1000
    block = reference(mae.module.blocks[1])
    assert block.part == "blocks.1"


def test_a_model_no_reference_names_runs_here(dispatched, tiny_loaded):
    pid, _, _ = where_it_ran(tiny_loaded)  # built by hand, in no cache: the worker could not load it
    assert pid == os.getpid()


def test_a_crashed_worker_gives_a_clear_error_and_the_next_call_works(dispatched, mae):
    first, _, _ = where_it_ran(mae)
    with pytest.raises(WorkerCrashed, match="view model worker stopped while running die"):
        die(mae)
    again, _, _ = where_it_ran(mae)
    assert again != first and dispatched.pids("view") == [again]


def test_errors_of_the_call_come_back_as_they_are(dispatched, mae):
    with pytest.raises(ValueError, match="part"):
        capture(mae, np.zeros((64, 64, 3), np.uint8), part="nose")


def test_the_library_runs_in_process_with_workers_off(mae, photo_path):
    assert not runner.dispatching()
    pid, _, _ = where_it_ran(mae)
    r = vitviz.reconstruct(mae, photo_path, mask_ratio=0.5, seed=1)
    assert pid == os.getpid() and r.reconstruction.shape == (mae.input_size, mae.input_size, 3)


def test_a_large_model_runs_in_the_heavy_worker_whatever_its_class(dispatched, mae, monkeypatch):
    from vitviz.models import loading

    monkeypatch.setattr(loading, "is_large", lambda spec: True)  # mae-tiny counted as large as MAE-Huge
    pid, _, _ = where_it_ran(mae)  # a view's call
    assert dispatched.pids("heavy") == [pid]


def test_a_view_drawn_in_a_worker_is_the_one_drawn_here(dispatched, mae, photo_path):
    import json

    from vitviz.mae.sweep import sweep
    from vitviz.views import attention_drawn as ad

    args = (str(photo_path), "mae-tiny", "encoder", 0.0, 2, 3, "patch", 4, 5, False, "mean", 0.0)
    there = ad.all_views(*args)
    swept = sweep(mae, photo_path, seed=4, ratios=(0.3, 0.6), cache=None)
    runner.install_dispatch(None)
    here = ad.all_views(*args)
    for name in ("overlay", "heads", "cls_heads", "rollout"):
        assert getattr(here, name).tobytes() == getattr(there, name).tobytes()
    assert (here.query_info, here.rollout_info, here.query) == (there.query_info, there.rollout_info, there.query)
    assert json.loads(here.distance.to_json()) == json.loads(there.distance.to_json())
    _equal(sweep(mae, photo_path, seed=4, ratios=(0.3, 0.6), cache=None), swept)


def _imported(name: str) -> bool:
    import sys

    return name in sys.modules


def test_a_worker_starts_with_the_modules_it_is_given_imported():
    pool = Workers(views=1, threads=1, modules=("vitviz.views.swin", "vitviz.no_such_module"))
    try:
        assert pool.pool("view").submit(_imported, "vitviz.views.swin").result(timeout=120)
    finally:
        pool.close()


class _Held:
    """A stand-in executor whose calls all answer only once ``expected`` calls were asked of all of them."""

    def __init__(self, asked: list, expected: int) -> None:
        import concurrent.futures

        self._futures = concurrent.futures
        self.asked, self.expected = asked, expected

    def submit(self, fn, *args):
        f = self._futures.Future()
        self.asked.append(f)
        if len(self.asked) == self.expected:
            for each in self.asked:
                each.set_result(os.getpid())
        return f


def test_start_asks_every_class_before_waiting_for_any(monkeypatch):
    pool = Workers(views=2, threads=1)
    costs = ("view", "heavy")
    expected = sum(pool._shape(c)[0] for c in costs)
    asked: list = []
    executors = {c: _Held(asked, expected) for c in costs}
    monkeypatch.setattr(pool, "pool", lambda cost: executors[cost])
    import threading

    done = threading.Event()
    threading.Thread(target=lambda: (pool.start(costs), done.set()), daemon=True).start()
    assert done.wait(10), "start waited for one class's processes before asking the next class's"
    assert len(asked) == expected == 3
