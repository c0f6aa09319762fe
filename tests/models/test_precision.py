import numpy as np
import pytest

from vitviz.models.precision import autocast, precision
from vitviz.mae.reconstruct import reconstruct


def test_bf16_autocast_stays_close_to_fp32(monkeypatch, photo_path):
    """The CUDA default (bf16 autocast), checked on CPU against fp32 with the shipped mae-tiny."""
    import vitviz

    model = vitviz.load_model("mae-tiny", device="cpu")
    monkeypatch.setenv("VITVIZ_PRECISION", "fp32")
    ref = reconstruct(model, photo_path, 0.75, seed=0)
    monkeypatch.setenv("VITVIZ_PRECISION", "bf16")
    low = reconstruct(model, photo_path, 0.75, seed=0)
    assert abs(low.masked_mse - ref.masked_mse) / ref.masked_mse < 0.02
    diff = np.abs(low.reconstruction.astype(int) - ref.reconstruction.astype(int))
    assert diff.mean() < 1.0 and diff.max() <= 8


def test_precision_setting(monkeypatch):
    import torch

    monkeypatch.setenv("VITVIZ_PRECISION", "auto")
    assert precision() == "auto"
    with autocast(torch.device("cpu")):
        assert not torch.is_autocast_enabled("cpu")
    monkeypatch.setenv("VITVIZ_PRECISION", "fp16")
    with pytest.raises(ValueError, match="VITVIZ_PRECISION"):
        precision()


def test_bf16_batched_sweep_stays_close_to_fp32(monkeypatch, photo_path):
    """The packed multi-mask path under autocast (the GPU default), checked on CPU."""
    import vitviz
    from vitviz.mae.sweep import sweep

    model = vitviz.load_model("mae-tiny", device="cpu")
    ratios = (0.25, 0.5, 0.75, 0.9)
    monkeypatch.setenv("VITVIZ_PRECISION", "fp32")
    ref = sweep(model, photo_path, ratios=ratios, cache=None)
    monkeypatch.setenv("VITVIZ_PRECISION", "bf16")
    low = sweep(model, photo_path, ratios=ratios, cache=None)
    for a, b in zip(ref.results, low.results):
        assert abs(b.masked_mse - a.masked_mse) / a.masked_mse < 0.02
        assert np.abs(a.reconstruction.astype(int) - b.reconstruction.astype(int)).mean() < 1.0
