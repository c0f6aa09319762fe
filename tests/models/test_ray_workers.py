"""Model calls on Ray actors (vitviz.models.ray_workers) answer bit for bit what the calling process answers."""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
import pytest
import torch

import vitviz
from vitviz.explain.attention import capture
from vitviz.explain.methods import explain_maps
from vitviz.models import runner
from vitviz.models.workers import WorkerCrashed

from .test_workers import _equal, die, where_it_ran

ray = pytest.importorskip("ray", reason="Ray is an optional extra (pip install 'vitviz[ray]')")


@pytest.fixture(scope="module")
def actors():
    from vitviz.models.ray_workers import RayWorkers

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # Ray's session folder (sockets, logs) in a short folder of its own, removed after (Ray leaves it)
    folder = tempfile.mkdtemp(prefix="vitviz-ray-", dir="/tmp" if os.path.isdir("/tmp") else None)
    try:  # the actors import vitviz and these tests from the checkout
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=folder,
                 runtime_env={"env_vars": {"PYTHONPATH": root}})
    except Exception as e:  # noqa: BLE001 - no shared memory, no free port, a sandbox: say why and skip
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"Ray cannot start here: {type(e).__name__}: {e}")
    workers = RayWorkers(views=1, threads=torch.get_num_threads())
    try:
        yield workers
    finally:
        workers.close()
        ray.shutdown()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture()
def dispatched(actors):
    runner.install_dispatch(actors.submit)
    try:
        yield actors
    finally:
        runner.install_dispatch(None)


def test_reconstruct_attention_and_explain_are_bit_for_bit_the_same_on_ray(dispatched, photo_path):
    mae = vitviz.load_model("mae-tiny")
    deit = vitviz.load_model("deit-small-distilled", random_init=True)
    pid, _, _ = where_it_ran(mae)
    assert pid != os.getpid()  # it did run on an actor
    there = (vitviz.reconstruct(mae, photo_path, mask_ratio=0.75, seed=3), capture(mae, photo_path),
             explain_maps(deit, photo_path, methods=("rollout", "gradcam")))
    runner.install_dispatch(None)
    here = (vitviz.reconstruct(mae, photo_path, mask_ratio=0.75, seed=3), capture(mae, photo_path),
            explain_maps(deit, photo_path, methods=("rollout", "gradcam")))
    for a, b in zip(here, there):
        _equal(a, b)
    assert here[0].reconstruction.tobytes() == there[0].reconstruction.tobytes()


def test_cost_classes_errors_and_a_dead_actor_on_ray(dispatched, photo_path):
    mae = vitviz.load_model("mae-tiny")
    view_pid, view_nice, _ = where_it_ran(mae)
    with runner.cost("heavy"):
        heavy_pid, heavy_nice, _ = where_it_ran(mae)
    assert heavy_pid != view_pid and heavy_nice == 19  # the lowest OS priority (Ray may start its workers lowered too)
    with pytest.raises(ValueError, match="part"):  # the call's own error, as raised there
        capture(mae, np.zeros((64, 64, 3), np.uint8), part="nose")
    with pytest.raises(WorkerCrashed, match="view model worker stopped while running die"):
        die(mae)
    again, _, _ = where_it_ran(mae)  # a fresh actor
    assert again != view_pid
