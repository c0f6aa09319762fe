"""MAE decoder provenance: a hidden patch's mask token, its attention per decoder layer and rolled out.

Offline, on the embedded mae-tiny (and the random tiny MAE of conftest for the hook checks).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import vitviz
from vitviz.explain import attention as attention_module
from vitviz.explain.rollout import rollout_matrix
from vitviz.mae.provenance import SHARE_KINDS, decoder_provenance
from vitviz.render.provenance import provenance_grid
from vitviz.views import provenance as pv


@pytest.fixture(scope="module")
def mae_tiny():
    return vitviz.load_model("mae-tiny")


def _hidden(mask: np.ndarray, k: int = 0) -> tuple[int, int]:
    r, c = np.argwhere(mask)[k]
    return int(r), int(c)


@pytest.mark.parametrize("pattern,ratio,seed", [("random", 0.75, 0), ("block", 0.4, 3), ("grid", 0.75, 1)])
def test_the_mask_is_the_reconstructions(mae_tiny, photo_path, pattern, ratio, seed):
    rec = vitviz.reconstruct(mae_tiny, photo_path, mask_ratio=ratio, seed=seed, pattern=pattern)
    p = vitviz.decoder_provenance(mae_tiny, photo_path, mask_ratio=ratio, seed=seed, patch=_hidden(rec.mask),
                                  pattern=pattern)
    assert np.array_equal(p.mask, rec.mask)
    assert np.array_equal(p.masked, rec.masked)  # drawn on the very input the encoder was given


def test_rows_sum_to_one_over_the_decoders_tokens(mae_tiny, photo_path):
    rec = vitviz.reconstruct(mae_tiny, photo_path, 0.75, 0)
    p = decoder_provenance(mae_tiny, photo_path, 0.75, 0, patch=_hidden(rec.mask, 7))
    t = 1 + rec.mask.size  # class token + every patch (visible tokens and mask tokens)
    cfg = mae_tiny.module.config
    assert p.heads.shape == (cfg.decoder_depth, cfg.decoder_num_heads, t)
    assert p.layers.shape == (cfg.decoder_depth, t) and p.rollout.shape == (t,)
    np.testing.assert_allclose(p.heads.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(p.layers.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(p.rollout.sum(), 1.0, atol=1e-9)
    for s in p.layer_shares() + [p.rollout_shares()]:
        assert set(s) == set(SHARE_KINDS) and min(s.values()) >= 0
        assert sum(s.values()) == pytest.approx(1.0, abs=1e-5)
    # the rollout row is the query's row of the shared rollout (mean fusion, residual identity), not a copy
    full = rollout_matrix(vitviz.attention(mae_tiny, photo_path, rec.mask, part="decoder").attentions)
    np.testing.assert_allclose(p.rollout, full[p.token], atol=1e-12)
    # visible share = the weight on the visible patches' tokens, read straight from the row
    visible = 1 + np.flatnonzero(~rec.mask.reshape(-1))
    assert p.layer_shares()[0]["visible"] == pytest.approx(p.layers[0, visible].sum(), abs=1e-12)


def test_the_map_never_draws_the_querys_own_pixels(mae_tiny, photo_path):
    rec = vitviz.reconstruct(mae_tiny, photo_path, 0.75, 0)
    q = _hidden(rec.mask, 3)
    p = decoder_provenance(mae_tiny, photo_path, 0.75, 0, patch=q)
    for mask_tokens in (False, True):
        maps = np.concatenate([p.layer_maps(mask_tokens), p.rollout_map(mask_tokens)[None]])
        assert np.isnan(maps[:, q[0], q[1]]).all()
        finite = np.isfinite(maps[0])
        expected = ~rec.mask if not mask_tokens else np.ones_like(rec.mask)
        expected[q] = False
        assert np.array_equal(finite, expected)
    # its own mask token's weight is reported as "self", and it is what the row holds there
    assert p.layer_shares()[0]["self"] == pytest.approx(p.layers[0, p.token])
    assert p.rollout_shares()["self"] == pytest.approx(p.rollout[p.token])
    # in the drawing, the query cell's inside is grey (no colour scale), whatever its weight
    view = pv.provenance(p, mask_tokens=True)
    tile = view.panel[20:20 + 196, :196].astype(int)  # first tile, under its title
    side = 196 / rec.mask.shape[0]
    y0, x0 = int(np.ceil(q[0] * side)) + 4, int(np.ceil(q[1] * side)) + 4
    inside = tile[y0:y0 + int(side) - 8, x0:x0 + int(side) - 8]
    assert inside.size and (inside.max(-1) - inside.min(-1)).max() <= 2


def test_a_visible_patch_is_refused_with_a_sentence(mae_tiny, photo_path):
    rec = vitviz.reconstruct(mae_tiny, photo_path, 0.75, 0)
    r, c = (int(v) for v in np.argwhere(~rec.mask)[0])
    with pytest.raises(ValueError, match="visible"):
        decoder_provenance(mae_tiny, photo_path, 0.75, 0, patch=(r, c))
    v = pv.patch_view(photo_path, "mae-tiny", 0.75, 0, "random", None, (r, c))
    assert v.panel is None and "this patch was visible; click a hidden one" in v.text.lower()
    with pytest.raises(ValueError, match="outside the 14x14 grid"):
        decoder_provenance(mae_tiny, photo_path, 0.75, 0, patch=(14, 0))
    not_an_mae = SimpleNamespace(name="vit-base", family="vit", module=None)
    with pytest.raises(ValueError, match="masked autoencoder"):
        decoder_provenance(not_an_mae, photo_path, patch=(0, 0))


def test_a_click_maps_to_the_patch_and_the_view_has_every_layer(mae_tiny, photo_path):
    rec = vitviz.reconstruct(mae_tiny, photo_path, 0.75, 0)
    r, c = _hidden(rec.mask, 10)
    v = pv.click_view(photo_path, "mae-tiny", 0.75, 0, "random", None, (c + 0.5) * 16, (r + 0.5) * 16, 224)
    assert v.patch == (r, c) and v.panel is not None and v.panel.dtype == np.uint8
    depth = mae_tiny.module.config.decoder_depth
    assert v.text.count("| decoder layer") == depth and "| **rollout** |" in v.text
    assert len(v.summary["layers"]) == depth
    painted = np.zeros_like(rec.mask)
    painted[2, 3] = True  # a painted mask is followed exactly
    w = pv.patch_view(photo_path, "mae-tiny", 0.75, 0, "random", painted, (2, 3))
    assert w.summary["hidden_patches"] == 1 and w.summary["rollout"]["mask"] == pytest.approx(0.0, abs=1e-12)


def test_no_hooks_left_and_deterministic(tiny_loaded, rng):
    image = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    mae = tiny_loaded.module
    fused = [b.attn.fused_attn for b in mae.decoder_blocks]
    attention_module.CACHE.clear()
    a = decoder_provenance(tiny_loaded, image, 0.5, 1, patch=(0, 0), mask=np.eye(4, dtype=bool))
    attention_module.CACHE.clear()  # the second one is computed again, not read back
    b = decoder_provenance(tiny_loaded, image, 0.5, 1, patch=(0, 0), mask=np.eye(4, dtype=bool))
    for x, y in ((a.heads, b.heads), (a.layers, b.layers), (a.rollout, b.rollout)):
        assert np.array_equal(x, y)
    for blk in list(mae.decoder_blocks) + list(mae.blocks):
        assert not blk._forward_hooks and not blk._forward_pre_hooks
        assert not blk.attn.attn_drop._forward_hooks
    assert [b.attn.fused_attn for b in mae.decoder_blocks] == fused
    assert not any(p.requires_grad and p.grad is not None for p in mae.parameters())


def test_other_fusions_still_give_rows_that_sum_to_one(mae_tiny, photo_path):
    rec = vitviz.reconstruct(mae_tiny, photo_path, 0.75, 0)
    p = decoder_provenance(mae_tiny, photo_path, 0.75, 0, patch=_hidden(rec.mask), head_fusion="max",
                           discard_ratio=0.5)
    np.testing.assert_allclose(p.layers.sum(-1), 1.0, atol=1e-9)
    np.testing.assert_allclose(p.rollout.sum(), 1.0, atol=1e-9)
    with pytest.raises(ValueError, match="head fusion"):
        decoder_provenance(mae_tiny, photo_path, 0.75, 0, patch=_hidden(rec.mask), head_fusion="median")


def test_render_checks_titles(mae_tiny, photo_path):
    rec = vitviz.reconstruct(mae_tiny, photo_path, 0.75, 0)
    p = decoder_provenance(mae_tiny, photo_path, 0.75, 0, patch=_hidden(rec.mask))
    with pytest.raises(ValueError, match="titles"):
        provenance_grid(p.masked, p.layer_maps(), p.rollout_map(), p.patch, ["only one"])
