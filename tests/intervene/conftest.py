"""The intervention tests' trained model (the embedded mae-tiny) and image; the random ViT, DeiT and backbone
of 3 blocks are tests/conftest.py's."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def mae():
    """The embedded, trained mae-tiny."""
    from vitviz.models.loading import load_model

    return load_model("mae-tiny", device="cpu")


@pytest.fixture(scope="session")
def image() -> np.ndarray:
    """A random 224-px view (not one of the example photos)."""
    return np.random.default_rng(7).integers(0, 256, (224, 224, 3), dtype=np.uint8)
