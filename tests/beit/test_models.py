"""vq-tiny and beit-tiny modules: shapes, codes in range, round trip, loss on hidden positions only,
strict loading of the safetensors files."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from vitviz.models.beit import BEiTConfig, BEiTForMIM, export_beit, load_beit_file, mim_loss
from vitviz.models.vqvae import VQConfig, VQTokenizer, export_vq, load_vq_file

TINY_VQ = VQConfig(img_size=64, codebook_size=32, code_dim=8, hidden=8, decoder_blocks=1)
TINY_BEIT = BEiTConfig(img_size=64, embed_dim=32, depth=2, num_heads=2, vocab_size=32)


def _vq(seed: int = 0) -> VQTokenizer:
    torch.manual_seed(seed)  # test-only: deterministic random weights
    return VQTokenizer(TINY_VQ).eval()


def test_tokenizer_shapes_and_codes_in_range() -> None:
    vq = _vq()
    x = torch.rand(2, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ids = vq.tokenize(x)
        dec = vq.decode(ids)
    assert ids.shape == (2, 4, 4) and ids.dtype == torch.int64
    assert int(ids.min()) >= 0 and int(ids.max()) < TINY_VQ.codebook_size
    assert dec.shape == (2, 3, 64, 64) and float(dec.min()) >= 0 and float(dec.max()) <= 1


def test_round_trip_is_stable_on_decoded_codes() -> None:
    """Tokens are the codes nearest to the encoder output; decoding and re-reading them gives the
    same ids for a fixed code vector grid (the lookup of a codebook row is itself)."""
    vq = _vq()
    ids = torch.randint(0, TINY_VQ.codebook_size, (1, 4, 4), generator=torch.Generator().manual_seed(1))
    assert torch.equal(vq.lookup(vq.codebook[ids]), ids)


def test_ema_update_moves_codes_to_their_means_and_restarts_dead_codes() -> None:
    vq = _vq().train()
    g = torch.Generator().manual_seed(0)
    z = torch.randn(64, TINY_VQ.code_dim, generator=g)
    ids = torch.zeros(64, dtype=torch.int64)  # everything on code 0: the others die
    restarted = sum(vq.ema_update(z, ids, g) for _ in range(400))
    assert restarted > 0
    assert torch.allclose(vq.codebook[0], z.mean(0), atol=1e-3)
    revived = vq.codebook[1:]
    # every restarted code is one of the batch vectors
    assert bool(((revived[:, None] - z[None]).abs().max(-1).values.min(1).values < 1e-3).all())


def test_round_trip_of_initialised_tokenizer_equals_per_patch_codebook() -> None:
    """With the context modules at zero (their initial state), decoding is the per-patch inverse
    projection of each code: a k-means-style round trip."""
    vq = _vq()
    g = torch.Generator().manual_seed(3)
    comps = torch.linalg.qr(torch.randn(TINY_VQ.patch_dim, TINY_VQ.code_dim, generator=g))[0].t()
    mean = torch.rand(TINY_VQ.patch_dim, generator=g)
    cent = torch.randn(TINY_VQ.codebook_size, TINY_VQ.code_dim, generator=g)
    vq.init_from_data(mean, comps, cent, torch.ones(TINY_VQ.codebook_size))
    ids = torch.randint(0, TINY_VQ.codebook_size, (1, 4, 4), generator=g)
    with torch.no_grad():
        out = vq.decode_vectors(vq.codebook[ids])
    first = out[0, :, :16, :16].reshape(-1)
    assert torch.allclose(first, cent[ids[0, 0, 0]] @ comps + mean, atol=1e-5)


def test_vq_file_loads_strictly(tmp_path) -> None:
    vq = _vq()
    path = tmp_path / "vq.safetensors"
    export_vq(vq, path, {"step": "0"})
    back, meta = load_vq_file(path)
    assert meta["format"] == "vitviz-vqvae" and json.loads(meta["config"])["codebook_size"] == 32
    for key, value in vq.state_dict().items():
        if key != "codebook":  # the codebook is re-normalised after fp16 rounding
            assert torch.equal(back.state_dict()[key], value.half().float()), key
    assert torch.allclose(back.codebook, vq.codebook, atol=1e-3)
    sd = load_file(str(path))
    sd.pop("decoder.context.conv_in.weight")
    save_file(sd, str(tmp_path / "broken.safetensors"), metadata=meta)
    with pytest.raises(RuntimeError, match="Missing key"):
        load_vq_file(tmp_path / "broken.safetensors")


def test_loss_uses_hidden_positions_only() -> None:
    torch.manual_seed(0)  # test-only
    model = BEiTForMIM(TINY_BEIT).eval()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 64, 64, generator=g)
    mask = torch.zeros(2, 16, dtype=torch.bool)
    mask[:, 5:11] = True
    tgt = torch.randint(0, 32, (2, 16), generator=g)
    logits = model(x, mask)
    assert logits.shape == (2, 16, 32)
    base = mim_loss(logits, tgt, mask)
    changed = tgt.clone()
    changed[:, 0] = (changed[:, 0] + 1) % 32  # a visible position's target
    assert torch.equal(mim_loss(logits, changed, mask), base)
    changed[:, 6] = (changed[:, 6] + 1) % 32  # a hidden position's target
    assert not torch.equal(mim_loss(logits, changed, mask), base)


def test_mask_token_replaces_hidden_patches() -> None:
    """A hidden patch's pixels cannot reach the model: changing them leaves every output unchanged."""
    torch.manual_seed(0)  # test-only
    model = BEiTForMIM(TINY_BEIT).eval()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 3, 64, 64, generator=g)
    mask = torch.zeros(1, 16, dtype=torch.bool)
    mask[0, 0] = True  # patch (0, 0): pixels [0:16, 0:16]
    y = x.clone()
    y[:, :, :16, :16] = torch.randn(1, 3, 16, 16, generator=g)
    assert torch.allclose(model(x, mask), model(y, mask), atol=1e-6)
    assert not torch.allclose(model(x, ~mask), model(y, ~mask), atol=1e-6)


def test_beit_file_loads_strictly(tmp_path) -> None:
    torch.manual_seed(0)  # test-only
    model = BEiTForMIM(TINY_BEIT).eval()
    path = tmp_path / "beit.safetensors"
    export_beit(model, path)
    back, meta = load_beit_file(path)
    assert back.config == TINY_BEIT
    sd = load_file(str(path))
    sd["lm_head.extra"] = torch.zeros(1, dtype=torch.float16)
    save_file(sd, str(tmp_path / "extra.safetensors"), metadata=meta)
    with pytest.raises(RuntimeError, match="Unexpected key"):
        load_beit_file(tmp_path / "extra.safetensors")
    save_file(load_file(str(path)), str(tmp_path / "other.safetensors"), metadata={"format": "vitviz-mae"})
    with pytest.raises(ValueError, match="not a vitviz-beit"):
        load_beit_file(tmp_path / "other.safetensors")
