"""VQ-KD (BEiT v2's tokenizer, ``vq-kd-tiny``) on hand-made features, with a small stand-in teacher.

No test here needs dinov2-small's weights: the teacher is a one-block random ViT of the same width
and patch (:func:`stand_in_teacher`), put in place of :func:`vitviz.models.loading.load_teacher`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import vitviz
from vitviz.assets import model_file
from vitviz.models import loading
from vitviz.models.beit import load_beit_file
from vitviz.models.dinov2 import Dinov2Arch, build_dinov2
from vitviz.models.vqkd import (VQKD, VQKDConfig, attach_teacher, code_usage, cosine_loss, export_vqkd, load_vqkd_file, lookup_codes,
                                straight_through, teacher_size)
from vitviz.training.train_beit import file_digest

SMALL = VQKDConfig(dim=32, heads=2, codebook_size=8, code_dim=4)


def stand_in_teacher(name: str, img_size: int) -> torch.nn.Module:
    """A one-block random DINOv2-shaped ViT (384 wide, patch 14) at ``img_size``: the teacher in tests."""
    g = torch.random.fork_rng()
    with g:
        torch.manual_seed(0)
        return build_dinov2(Dinov2Arch(embed_dim=384, depth=1, num_heads=6, patch_size=14), img_size).eval()


@pytest.fixture
def teacher(monkeypatch):
    monkeypatch.setattr(loading, "load_teacher", stand_in_teacher)


def test_lookup_is_the_nearest_code_by_cosine_not_by_distance():
    codebook = torch.tensor([[3.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    # (1, 0.9) points closer to code 0's direction (cos 0.74 against 0.67), but is nearer code 1 in distance
    z = torch.tensor([[1.0, 0.9], [5.0, 1.0], [-0.2, 0.1], [3.0, 3.1]])
    assert lookup_codes(z, codebook).tolist() == [0, 0, 2, 1]
    assert torch.cdist(z[:1], codebook).argmin().item() == 1  # what a Euclidean lookup would say
    # lengths do not matter: scaled codes and vectors give the same ids
    assert lookup_codes(7 * z, 0.5 * codebook).tolist() == [0, 0, 2, 1]


def test_straight_through_passes_the_gradient_unchanged():
    z = torch.tensor([[0.6, 0.8], [1.0, 0.0]], requires_grad=True)
    zq = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    out = straight_through(z, zq)
    assert torch.equal(out.detach(), zq)
    w = torch.tensor([[2.0, -1.0], [0.5, 3.0]])
    (out * w).sum().backward()
    assert torch.equal(z.grad, w)


def test_gradient_reaches_the_encoder_through_the_lookup_and_not_the_codebook():
    torch.manual_seed(0)
    m = VQKD(SMALL)
    feats = torch.randn(2, 3, 3, SMALL.teacher_dim)
    rec, ids, z, commit = m(feats)
    assert rec.shape == feats.shape and ids.shape == (2, 3, 3) and z.shape == (2, 3, 3, SMALL.code_dim)
    assert torch.allclose(z.norm(dim=-1), torch.ones(2, 3, 3), atol=1e-5)  # l2-normalised
    cosine_loss(rec, feats).backward()
    assert m.in_proj.weight.grad is not None and m.in_proj.weight.grad.abs().sum() > 0
    assert not m.codebook.requires_grad  # the codebook moves by EMA only


def test_cosine_loss_on_hand_made_features():
    a = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])
    assert cosine_loss(a, 5 * a).item() == pytest.approx(0.0, abs=1e-6)
    assert cosine_loss(a, -a).item() == pytest.approx(2.0)
    assert cosine_loss(a[:1], torch.tensor([[0.0, 1.0]])).item() == pytest.approx(1.0)


def test_feature_colours_depend_on_directions_only():
    """The decoder is trained with a cosine loss: its features point the teacher's way at ~1/3 of the length.
    Colours from a basis of unit-length features make such features look like the teacher's, not flat."""
    from vitviz.beit.tokenize import feature_colours, unit_features
    from vitviz.features.pca import fit_pca

    rng = np.random.default_rng(0)
    teacher = rng.normal(size=(4, 4, 24)) + 3.0  # a common offset, as real features have
    basis = fit_pca([unit_features(teacher.reshape(-1, 24))])
    same = feature_colours(teacher, basis, 2)
    assert same.shape == (8, 8, 3) and same.std() > 40  # a spread of colours
    assert np.array_equal(feature_colours(0.3 * teacher, basis, 2), same)


def test_code_usage_counts_codes_and_perplexity():
    u = code_usage(torch.tensor([0, 0, 1, 2]), 8)
    assert u["codes_used"] == 3 and u["tokens"] == 4
    h = -(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25))
    assert u["perplexity"] == pytest.approx(math.exp(h))
    assert code_usage(torch.full((10,), 5), 8)["perplexity"] == pytest.approx(1.0)


def test_ema_moves_a_code_to_the_normalised_mean_and_restarts_idle_codes():
    m = VQKD(VQKDConfig(dim=32, heads=2, codebook_size=3, code_dim=2, decay=0.0))
    m.codebook.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]))
    z = F.normalize(torch.tensor([[1.0, 0.2], [1.0, -0.1], [0.1, 1.0]]), dim=-1)
    ids = m.lookup(z)
    assert ids.tolist() == [0, 0, 1]
    m.ema_update(z, ids, torch.Generator().manual_seed(0), dead_after=2)
    assert torch.allclose(m.codebook[0], F.normalize(z[:2].mean(0), dim=0), atol=1e-6)
    assert torch.allclose(m.codebook[2], torch.tensor([-1.0, 0.0]))  # unused once: kept
    restarted = m.ema_update(z, ids, torch.Generator().manual_seed(0), dead_after=2)
    assert restarted == 1 and any(torch.allclose(m.codebook[2], v) for v in z)  # idle twice: a batch vector


def test_teacher_grid_is_aligned_with_16_pixel_patches():
    c = VQKDConfig()
    assert teacher_size(224, c) == 196 and teacher_size(256, c) == 224
    with pytest.raises(ValueError, match="multiple"):
        teacher_size(225, c)


def test_tokenize_runs_the_teacher_then_the_lookup(teacher):
    torch.manual_seed(0)
    m = attach_teacher(VQKD(SMALL).eval(), stand_in_teacher)
    x = torch.rand(2, 3, 224, 224)
    f = m.features(x)
    assert f.shape == (2, 14, 14, 384)
    assert torch.equal(m.tokenize(x), m.tokenize_features(f))
    # flip-equivariant (no position embeddings): the mirrored features give the mirrored ids
    assert torch.equal(m.tokenize_features(f.flip(2)), m.tokenize_features(f).flip(2))


def test_file_round_trip_is_strict_and_holds_no_training_state(tmp_path):
    torch.manual_seed(0)
    m = VQKD(SMALL)
    path = tmp_path / "kd.safetensors"
    export_vqkd(m, path, {"step": "3"})
    back, meta = load_vqkd_file(path)
    assert meta["format"] == "vitviz-vqkd" and meta["step"] == "3" and back.config == SMALL
    from safetensors.torch import load_file

    assert not {"cluster_size", "embed_sum", "idle"} & set(load_file(str(path)))
    feats = torch.randn(1, 4, 4, SMALL.teacher_dim)
    assert float((back.tokenize_features(feats) == m.tokenize_features(feats)).float().mean()) >= 0.9  # fp16


def test_committed_files_load_and_match():
    kd, kd_meta = load_vqkd_file(model_file("vq-kd-tiny.safetensors"))
    assert kd.config.codebook_size == 512 and kd.config.code_dim == 32 and kd.config.teacher == "dinov2-small"
    beit, meta = load_beit_file(model_file("beit-tiny-v2.safetensors"))
    assert beit.config.vocab_size == kd.config.codebook_size
    assert meta["tokenizer"] == "vq-kd-tiny" and meta["vq"] == file_digest(model_file("vq-kd-tiny.safetensors"))
    for name in ("vq-kd-tiny.safetensors", "beit-tiny-v2.safetensors"):
        assert model_file(name).stat().st_size < 25 * 1024 * 1024


def test_api_tokenizer_option(teacher, photo_path):
    kd = vitviz.load_model("vq-kd-tiny", device="cpu")
    t = vitviz.tokenize(kd, photo_path)
    assert t.kind == "features" and t.ids.shape == (14, 14) and t.ids.dtype == np.int64
    assert t.decoded.shape == t.reference.shape == (224, 224, 3) and -1.0 <= t.feature_cosine <= 1.0
    assert 0 <= int(t.ids.min()) and int(t.ids.max()) < 512
    by_name = vitviz.tokenize(vitviz.load_model("beit-tiny", device="cpu"), photo_path, tokenizer="vq-kd-tiny")
    assert np.array_equal(by_name.ids, t.ids)
    pixels = vitviz.tokenize(kd, photo_path, tokenizer="vq-tiny")
    assert pixels.kind == "pixels" and pixels.feature_cosine is None
    with pytest.raises(ValueError, match="vq-kd-tiny"):
        vitviz.tokenize(kd, photo_path, tokenizer="dall-e")


def test_beit_tiny_v2_predicts_vq_kd_tokens(teacher, photo_path):
    v2 = vitviz.load_model("beit-tiny-v2", device="cpu")
    p = vitviz.beit_predict(v2, photo_path, mask_ratio=0.4, seed=0, pattern="block")
    assert int(p.mask.sum()) == round(0.4 * 196)
    assert np.array_equal(p.target_ids, vitviz.tokenize(v2, photo_path, tokenizer="vq-kd-tiny").ids)
    assert p.reference is not None and p.decoded.shape == (224, 224, 3)
    hid = np.repeat(np.repeat(p.mask, 16, 0), 16, 1)
    assert np.array_equal(p.decoded[~hid], p.reference[~hid])  # the teacher's colours on visible patches
    assert 0.0 <= p.accuracy <= p.top5_accuracy <= 1.0
