"""High-norm tokens (vitviz.explain.norms), the sink share that counts them, and every ViT lesson
on a DINOv2-layout model with patch 14 (no hidden assumption of patch 16 or 224 px)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vitviz
from vitviz.explain.heads import classify_heads, outlier_share
from vitviz.explain.layout import TokenLayout
from vitviz.explain.norms import norms_of, outlier_threshold

from ..models.dinov2_files import TINY, hf_tensors


def _layout(grid=(4, 4), patch=14) -> TokenLayout:
    gh, gw = grid
    rc = np.stack(np.divmod(np.arange(gh * gw), gw), axis=1).astype(np.int64)
    return TokenLayout(("cls",), rc, grid, patch, np.zeros(grid, bool), np.zeros(gh * gw, bool))


def test_outliers_threshold_and_class_token_share():
    lay = _layout()
    rng = np.random.default_rng(0)
    tokens = [rng.normal(size=(17, 8)).astype(np.float32) for _ in range(3)]
    tokens[1][1 + 5] *= 20  # patch 5 of layer 1 (block 1's output) is an artefact
    tokens[1][1 + 9] *= 20
    att = np.full((2, 2, 17, 17), 1 / 17, np.float32)
    att[1, :, 0] = 0.0
    att[1, :, 0, [6, 10]] = 0.3  # block 2's class token puts 60% on those two tokens ...
    att[1, :, 0, 0] = 0.4
    n = norms_of("m", ("embedding", "block 1", "block 2"), tuple(tokens), lay, att)
    assert n.outliers.shape == (3, 16) and n.outliers[1].nonzero()[0].tolist() == [5, 9]
    assert not n.outliers[0].any() and not n.outliers[2].any()
    assert n.threshold[1] == pytest.approx(outlier_threshold(n.norms[1, 1:]))
    np.testing.assert_allclose(n.norms[1], np.linalg.norm(tokens[1], axis=1), rtol=1e-6)
    assert n.cls_share[1] == pytest.approx(0.6) and np.isnan(n.cls_share[2])  # ... read by block 2; none after
    assert n.uniform_share[1] == pytest.approx(2 / 17)
    assert n.outlier_map(1)[1, 1] and n.outlier_map(1)[2, 1]
    s = n.summary()
    assert "after 1 of 2 blocks" in s and "2 of 16 patches" in s and "60.0%" in s
    with pytest.raises(ValueError, match="0..2"):
        n.check_layer(3)


def test_no_outliers_is_said():
    lay = _layout()
    tokens = tuple(np.ones((17, 8), np.float32) + 0.01 * np.arange(17)[:, None] for _ in range(3))
    n = norms_of("m", ("embedding", "block 1", "block 2"), tokens, lay, None)
    assert n.counts().sum() == 0 and "**no** high-norm patch tokens" in n.summary()
    assert np.isnan(n.cls_share).all()


def test_sink_rule_counts_attention_on_high_norm_patch_tokens():
    lay = _layout()
    a = np.full((1, 2, 17, 17), 1 / 17)
    a[0, 1, 1:] = 0.0
    a[0, 1, 1:, 3] = 0.7  # head 2: every patch query puts 70% on patch token 2 ...
    a[0, 1, 1:, 1:3] = 0.15
    outliers = np.zeros((2, 16), bool)
    outliers[0, 2] = True  # ... a high-norm token of the block's input
    share = outlier_share(a, lay, outliers)
    assert share[0, 1] == pytest.approx(0.7) and share[0, 0] == pytest.approx(1 / 17)
    prefix = a[..., 1:, :1].sum(-1).mean(-1)
    assert classify_heads(np.full((1, 2), 50.0), prefix + share, np.zeros((1, 2)), 60.0)[0, 1] == 0  # prefix-sink
    assert classify_heads(np.full((1, 2), 50.0), prefix, np.zeros((1, 2)), 60.0)[0, 1] != 0  # not without them


@pytest.fixture(scope="module")
def tiny_dinov2():
    """A DINOv2-layout ViT with patch 14 at 56 px (4x4 grid), random weights from a ``Dinov2Model`` dict."""
    from vitviz.models.checkpoint import load_strict
    from vitviz.models.dinov2 import at_input_size, build_dinov2, data_config, hf_to_timm
    from vitviz.models.loading import LoadedModel
    from vitviz.models.registry import get_spec

    sd = hf_to_timm(hf_tensors(TINY, seed=2), TINY, "tiny")
    module = load_strict(build_dinov2(TINY, 56), at_input_size(sd, TINY, 56), "tiny").eval()
    return LoadedModel("dinov2-small", get_spec("dinov2-small"), module, data_config(56), torch.device("cpu"))


def test_every_lesson_runs_with_patch_14(tiny_dinov2):
    m = tiny_dinov2
    img = np.random.default_rng(1).integers(0, 255, (70, 90, 3), dtype=np.uint8)
    assert m.patch_size == 14 and m.grid == (4, 4)
    maps = vitviz.attention(m, img)
    assert maps.attentions.shape == (TINY.depth, TINY.num_heads, 17, 17) and maps.layout.patch_size == 14
    roll = maps.rollout()
    assert roll.shape == (4, 4) and roll.sum() == pytest.approx(1.0, abs=1e-5)
    atlas = vitviz.head_atlas(m, img)
    assert atlas.distance.shape == (2, 2) and atlas.outlier_share is not None
    assert np.all(atlas.distance <= 14 * np.hypot(3, 3) + 1e-6)  # distances in pixels of patch 14
    space = vitviz.query_key_space(m, img, layer=1, head=0)
    np.testing.assert_allclose(space.attention(), maps.attentions[1, 0], atol=1e-5)
    lt = vitviz.layer_tokens(m, img)
    assert lt.patch_grid(-1).shape == (4, 4, 8) and lt.patch_size(1) == 14
    from vitviz.explain.norms import token_norms

    n = token_norms(m, img)
    assert n.norms.shape == (3, 17) and n.patch_norms(2).shape == (4, 4)
    from vitviz.core.pos_embed import similarity_grid
    from vitviz.embedding.sequence import position_embeddings

    pos = position_embeddings(m.module)
    assert pos.grid == (4, 4) and similarity_grid(pos.patches, pos.grid).shape == (4, 4, 4, 4)


def test_atlas_and_token_norms_of_a_new_photo_take_one_forward_pass(tiny_dinov2):
    """One pass fills the token and attention caches; both equal their own separate captures."""
    from vitviz.explain import attention as ea
    from vitviz.explain.norms import token_norms
    from vitviz.features import layer_tokens as ft

    m = tiny_dinov2
    img = np.random.default_rng(7).integers(0, 255, (60, 60, 3), dtype=np.uint8)
    passes = []
    handle = m.module.patch_embed.register_forward_hook(lambda *_: passes.append(1))
    try:
        atlas = vitviz.head_atlas(m, img)
        norms_view = token_norms(m, img)
    finally:
        handle.remove()
    assert len(passes) == 1 and atlas.outlier_share is not None and norms_view.norms.shape == (3, 17)
    view = ea.attention(m, img).image
    alone = ea.capture(m, view)
    np.testing.assert_allclose(ea.attention(m, img).attentions, alone.attentions, atol=1e-6)
    tokens_alone = ft.capture_tokens(m, view)
    for a, b in zip(vitviz.layer_tokens(m, img).tokens, tokens_alone.tokens):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_token_norms_of_a_photo_at_its_own_shape():
    """The norms of every token of a 16:9 photo's native grid, from its own attention (mae-tiny, offline)."""
    import vitviz
    from vitviz.explain.norms import token_norms
    from tests.embedding.wide_photo import wide_photo

    m = vitviz.load_model("mae-tiny", device="cpu")
    n = token_norms(m, wide_photo(), "native", 448)
    assert n.layout.grid == (16, 28) and n.norms.shape == (m.module.config.depth + 1, 1 + 16 * 28)
    assert n.outliers.shape == (m.module.config.depth + 1, 16 * 28) and np.isfinite(n.cls_share[:-1]).all()
