"""Layer-wise learning-rate decay: multipliers, layer ids and parameter groups."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.features.llrd import DECAYS, DEPTHS, layer_id, llrd_multipliers, param_groups


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("decay", DECAYS)
def test_multipliers_match_the_formula(depth, decay):
    m = llrd_multipliers(depth, decay)
    assert m.shape == (depth + 2,)
    for i in range(depth + 2):
        assert m[i] == pytest.approx(decay ** (depth + 1 - i))
    assert m[-1] == 1.0
    np.testing.assert_allclose(m[1:] * decay, m[:-1])


def test_bad_decay_and_depth_raise():
    for bad in (0.0, 1.5, float("nan"), "x"):
        with pytest.raises(ValueError):
            llrd_multipliers(12, bad)
    with pytest.raises(ValueError):
        llrd_multipliers(0, 0.75)


def test_layer_ids_follow_the_mae_convention():
    assert layer_id("cls_token", 12) == 0
    assert layer_id("pos_embed", 12) == 0
    assert layer_id("patch_embed.proj.weight", 12) == 0
    assert layer_id("blocks.0.attn.qkv.weight", 12) == 1
    assert layer_id("blocks.11.mlp.fc2.bias", 12) == 12
    assert layer_id("norm.weight", 12) == 13
    assert layer_id("head.weight", 12) == 13


def test_param_groups_cover_every_parameter_once():
    from timm.models.vision_transformer import VisionTransformer

    from vitviz.models.build import isolated_seed

    with isolated_seed(0):
        model = VisionTransformer(img_size=32, patch_size=8, embed_dim=16, depth=3, num_heads=2, num_classes=5)
    groups = param_groups(model, base_lr=1e-3, decay=0.5)
    names = [n for g in groups for n in g["names"]]
    assert sorted(names) == sorted(n for n, _ in model.named_parameters())
    lrs = {g["layer_id"]: g["lr"] for g in groups}
    assert lrs[4] == pytest.approx(1e-3) and lrs[0] == pytest.approx(1e-3 * 0.5 ** 4)
