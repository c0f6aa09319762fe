"""CPU kernels: packed fp32 linears match nn.Linear; int8 stays within its stated error."""

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from vitviz.models import kernels
from vitviz.models.kernels import PackedLinear, kernel_mode, pack_linears, quantize_int8
from vitviz.models.mae import MAEConfig, MaskedAutoencoderViT

pytestmark = pytest.mark.skipif(not kernels.onednn_available(), reason="this PyTorch build has no oneDNN")

SMALL = MAEConfig(img_size=64, patch_size=16, embed_dim=64, depth=2, num_heads=4, decoder_embed_dim=32,
                  decoder_depth=1, decoder_num_heads=4)


def as_mae(seed: int = 0) -> MaskedAutoencoderViT:
    g = torch.Generator().manual_seed(seed)
    m = MaskedAutoencoderViT(SMALL).eval().requires_grad_(False)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    return m


@pytest.mark.parametrize("tokens", [1, 7, 64, 300])
@pytest.mark.parametrize("gelu", [False, True])
def test_packed_linear_matches_linear_at_any_token_count(tokens, gelu):
    g = torch.Generator().manual_seed(tokens)
    lin = nn.Linear(48, 80)
    x = torch.randn(2, tokens, 48, generator=g)
    packed = PackedLinear(lin, gelu=gelu)
    with torch.inference_mode():
        ref = lin(x)
        ref = nn.functional.gelu(ref) if gelu else ref
        out = packed(x)
    assert out.shape == ref.shape
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_packed_model_equals_eager_and_keeps_its_state_dict():
    eager = as_mae()
    packed = as_mae()
    keys = set(packed.state_dict())
    n = pack_linears(packed)
    assert n == 2 * 4 + 1 * 4 + 2  # qkv, proj, fc1(+gelu), fc2 per block; decoder_embed, decoder_pred
    assert set(packed.state_dict()) == keys
    assert not any(isinstance(m, nn.GELU) for m in packed.modules())
    x = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    ids = torch.tensor([[0, 3, 5, 9, 12], [1, 2, 4, 8, 15]])
    with torch.inference_mode():
        torch.testing.assert_close(packed(x, ids), eager(x, ids), rtol=1e-5, atol=1e-5)


def test_packed_linear_falls_back_with_gradients_and_counts_flops():
    lin = nn.Linear(16, 8)
    packed = PackedLinear(lin)
    x = torch.randn(4, 16, requires_grad=True)
    packed(x).sum().backward()  # the fast kernel has no backward: fallback must be used
    assert lin.weight.grad is not None
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        packed(torch.randn(4, 16))
    assert counter.get_total_flops() == 2 * 4 * 16 * 8


def test_packed_linear_repacks_after_an_in_place_weight_change():
    lin = nn.Linear(8, 8).requires_grad_(False)
    packed = PackedLinear(lin)
    x = torch.randn(3, 8)
    with torch.inference_mode():
        packed(x)
    with torch.no_grad():
        lin.weight.mul_(2.0)
    with torch.inference_mode():
        torch.testing.assert_close(packed(x), lin(x), rtol=1e-5, atol=1e-5)


def test_kernel_mode_follows_the_settings(monkeypatch):
    cpu = torch.device("cpu")
    monkeypatch.delenv("VITVIZ_PRECISION", raising=False)
    monkeypatch.delenv("VITVIZ_ONEDNN", raising=False)
    assert kernel_mode(cpu) == "onednn"
    monkeypatch.setenv("VITVIZ_ONEDNN", "0")
    assert kernel_mode(cpu) == "eager"
    monkeypatch.setenv("VITVIZ_ONEDNN", "maybe")
    with pytest.raises(ValueError, match="VITVIZ_ONEDNN"):
        kernel_mode(cpu)
    monkeypatch.setenv("VITVIZ_ONEDNN", "1")
    monkeypatch.setenv("VITVIZ_PRECISION", "int8")
    assert kernel_mode(cpu) == "int8"
    with pytest.raises(ValueError, match="CPU only"):
        kernel_mode(torch.device("cuda"))


def test_loaded_models_are_cached_per_kernel_mode(monkeypatch):
    from vitviz.models import loading

    monkeypatch.setattr(loading, "CACHE", loading.LRU(4))
    monkeypatch.delenv("VITVIZ_PRECISION", raising=False)
    monkeypatch.setenv("VITVIZ_ONEDNN", "1")
    fast = loading.load_model("mae-tiny", device="cpu")
    monkeypatch.setenv("VITVIZ_ONEDNN", "0")
    plain = loading.load_model("mae-tiny", device="cpu")
    assert (fast.kernels, plain.kernels) == ("onednn", "eager") and fast is not plain
    assert any(isinstance(m, PackedLinear) for m in fast.module.modules())
    assert not any(isinstance(m, PackedLinear) for m in plain.module.modules())


def test_int8_reconstruction_stays_within_the_stated_error(monkeypatch, photo_path):
    """int8 on the shipped mae-tiny: hidden-patch MSE within 10% of fp32 (measured: see bench/README.md)."""
    from vitviz.models import loading
    from vitviz.mae.reconstruct import reconstruct

    monkeypatch.setattr(loading, "CACHE", loading.LRU(4))
    monkeypatch.delenv("VITVIZ_PRECISION", raising=False)
    ref_model = loading.load_model("mae-tiny", device="cpu")
    monkeypatch.setenv("VITVIZ_PRECISION", "int8")
    q_model = loading.load_model("mae-tiny", device="cpu")
    assert q_model.kernels == "int8" and q_model is not ref_model
    ref = reconstruct(ref_model, photo_path, 0.75, seed=0)
    low = reconstruct(q_model, photo_path, 0.75, seed=0)
    assert abs(low.masked_mse - ref.masked_mse) / ref.masked_mse < 0.10
    diff = np.abs(low.reconstruction.astype(int) - ref.reconstruction.astype(int))
    assert diff.mean() < 4.0


def test_quantize_int8_replaces_every_linear():
    m = quantize_int8(as_mae())
    assert not any(type(x) is nn.Linear for x in m.modules())
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        out = m(x, torch.tensor([[0, 5, 10]]))
    assert out.shape == (1, 16, 16 * 16 * 3) and torch.isfinite(out).all()


def test_load_model_takes_an_explicit_kernel_mode(monkeypatch):
    from vitviz.models import loading

    monkeypatch.setattr(loading, "CACHE", loading.LRU(4))
    monkeypatch.delenv("VITVIZ_PRECISION", raising=False)
    eager = loading.load_model("mae-tiny", device="cpu", kernels="eager")
    assert eager.kernels == "eager" and not any(isinstance(m, PackedLinear) for m in eager.module.modules())
    assert loading.load_model("mae-tiny", device="cpu", kernels="eager") is eager
    with pytest.raises(ValueError, match="kernels must be one of"):
        loading.load_model("mae-tiny", device="cpu", kernels="fast")
