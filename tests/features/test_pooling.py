"""Class token vs average pooling: cosine by layer and logits through one head."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vitviz.features.pooling import cls_gap_cosine, gap, pooled_logits, topk_overlap, uniform_weights


def test_cls_gap_cosine_by_hand(rng):
    t = rng.normal(size=(3, 1 + 6, 4))
    t[1, 0] = t[1, 1:].mean(0) * 2.0  # layer 1: class token along the patch mean
    t[2, 0] = -t[2, 1:].mean(0)  # layer 2: opposite
    cos = cls_gap_cosine(t, 1)
    ref0 = t[0, 0] @ gap(t, 1)[0] / np.linalg.norm(t[0, 0]) / np.linalg.norm(t[0, 1:].mean(0))
    np.testing.assert_allclose(cos, [ref0, 1.0, -1.0], atol=1e-12)


def test_uniform_weights_sum_to_one():
    w = uniform_weights(196)
    assert w.sum() == pytest.approx(1.0) and np.ptp(w) == 0
    with pytest.raises(ValueError):
        uniform_weights(0)


def test_pooled_logits_through_a_random_timm_head_match_a_direct_computation():
    from timm.models.vision_transformer import VisionTransformer

    from vitviz.models.build import isolated_seed

    with isolated_seed(0):
        model = VisionTransformer(img_size=32, patch_size=8, embed_dim=16, depth=2, num_heads=2,
                                  num_classes=10).eval()
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        feats = model.forward_features(x)
        direct_cls = model.forward_head(feats)[0].numpy()
        direct_gap = model.head(model.fc_norm(feats[:, model.num_prefix_tokens:].mean(1)))[0].numpy()
    cls_l, gap_l = pooled_logits(feats[0], model.num_prefix_tokens, lambda v: model.head(model.fc_norm(v)))
    np.testing.assert_allclose(cls_l, direct_cls, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gap_l, direct_gap, rtol=1e-5, atol=1e-6)
    assert topk_overlap(cls_l, direct_cls, 5) == 5
