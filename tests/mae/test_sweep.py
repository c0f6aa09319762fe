import numpy as np
import pytest
import torch

from vitviz.models.mae import MaskedAutoencoderViT
from vitviz.mae.reconstruct import reconstruct
from vitviz.mae.sweep import STOPS, SweepCache, reconstruct_cached, stop_of, sweep


def test_stops():
    assert STOPS[0] == 0.0 and STOPS[-1] == 0.95 and len(STOPS) == 20
    assert stop_of(0.74) == 0.75 and stop_of(0.0) == 0.0
    with pytest.raises(ValueError):
        stop_of(0.99)


@pytest.mark.parametrize("pattern", ["random", "block", "grid"])
def test_sweep_equals_single_calls(tiny_loaded, photo_path, pattern):
    s = sweep(tiny_loaded, photo_path, seed=3, pattern=pattern, cache=None)
    assert len(s.results) == len(STOPS)
    for ratio, res in zip(s.ratios, s.results):
        single = reconstruct(tiny_loaded, photo_path, mask_ratio=ratio, seed=3, pattern=pattern)
        assert np.array_equal(res.mask, single.mask)
        assert res.masked_mse == pytest.approx(single.masked_mse, abs=1e-5)
        assert np.abs(res.reconstruction.astype(int) - single.reconstruction.astype(int)).max() <= 1


def test_padded_batch_equals_unpadded(tiny_config):
    model = MaskedAutoencoderViT(tiny_config).eval()
    tokens = model.embed_patches(torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(1)))
    a = torch.tensor([0, 3, 5, 9, 12])
    b = torch.tensor([1, 2])
    ids = torch.stack([a, torch.cat([b, torch.zeros(3, dtype=torch.long)])])
    valid = torch.tensor([[True] * 5, [True, True, False, False, False]])
    with torch.inference_mode():
        batched = model.forward_decoder(model.encode_tokens(tokens.expand(2, -1, -1), ids, valid), ids, valid)
        single_b = model.forward_decoder(model.encode_tokens(tokens, b.unsqueeze(0)), b.unsqueeze(0))
        single_a = model.forward_decoder(model.encode_tokens(tokens, a.unsqueeze(0)), a.unsqueeze(0))
    assert torch.allclose(batched[1], single_b[0], atol=1e-5)
    assert torch.allclose(batched[0], single_a[0], atol=1e-5)


def test_packed_encoding_equals_each_mask_alone(tiny_config):
    """Masks of very different sizes packed end to end give each mask's own result."""
    from vitviz.models.mae import MaskedAutoencoderViT

    torch.manual_seed(0)  # test-only: deterministic random weights
    model = MaskedAutoencoderViT(tiny_config).eval()
    x = torch.randn(1, 3, tiny_config.img_size, tiny_config.img_size)
    n = tiny_config.num_patches
    ids = [torch.arange(n), torch.tensor([0]), torch.arange(1, n, 3), torch.tensor([n - 1, 2])]
    with torch.inference_mode():
        tokens = model.embed_patches(x)
        packed = model.decode_packed(model.encode_packed(tokens, ids), ids)
        for row, i in enumerate(ids):
            single = model.forward_decoder(model.encode_tokens(tokens, i), i)
            torch.testing.assert_close(packed[row], single[0], rtol=1e-5, atol=1e-5)


def test_cache_makes_slider_a_lookup(tiny_loaded, photo_path):
    cache = SweepCache(capacity=2)
    r, hit = reconstruct_cached(tiny_loaded, photo_path, 0.5, seed=1, cache=cache)
    assert not hit
    calls = []
    sweep(tiny_loaded, photo_path, seed=1, cache=cache, progress=calls.append)
    assert calls and calls[-1] == 1.0
    for ratio in STOPS:
        res, hit = reconstruct_cached(tiny_loaded, photo_path, ratio, seed=1, cache=cache)
        assert hit
    again, hit = reconstruct_cached(tiny_loaded, photo_path, 0.5, seed=1, cache=cache)
    assert hit and again is r  # the first stop was kept, not recomputed
    # a different seed is a different entry; capacity evicts the oldest image
    reconstruct_cached(tiny_loaded, photo_path, 0.5, seed=2, cache=cache)
    reconstruct_cached(tiny_loaded, photo_path, 0.5, seed=3, cache=cache)
    assert len(cache) == 2
    assert not reconstruct_cached(tiny_loaded, photo_path, 0.5, seed=1, cache=cache)[1]


def test_sweep_validates(tiny_loaded, photo_path):
    with pytest.raises(ValueError, match="pattern"):
        sweep(tiny_loaded, photo_path, pattern="nope")
    with pytest.raises(ValueError, match="seed"):
        sweep(tiny_loaded, photo_path, seed=-1)
