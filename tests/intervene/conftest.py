"""Small models for the intervention tests: random timm ViT and DeiT of 3 blocks, the embedded mae-tiny."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.models.loading import LoadedModel

from ..random_models import random_loaded


@pytest.fixture(scope="session")
def vit() -> LoadedModel:
    """A random ViT-Tiny classifier of 3 blocks (3 heads, 1000 classes)."""
    return random_loaded("vit_tiny_patch16_224", "vit-base", 1, depth=3)


@pytest.fixture(scope="session")
def deit() -> LoadedModel:
    """A random distilled DeiT-Tiny of 3 blocks (class and distillation tokens)."""
    return random_loaded("deit_tiny_distilled_patch16_224", "deit-small-distilled", 2, depth=3)


@pytest.fixture(scope="session")
def backbone() -> LoadedModel:
    """A random ViT without a head (a DINO-like backbone)."""
    return random_loaded("vit_tiny_patch16_224", "dino-small", 3, depth=3, num_classes=0)


@pytest.fixture(scope="session")
def mae():
    """The embedded, trained mae-tiny."""
    from vitviz.models.loading import load_model

    return load_model("mae-tiny", device="cpu")


@pytest.fixture(scope="session")
def image() -> np.ndarray:
    """A random 224-px view (not one of the example photos)."""
    return np.random.default_rng(7).integers(0, 256, (224, 224, 3), dtype=np.uint8)
