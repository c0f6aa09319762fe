"""Token capture for every registry model: shapes, layouts, equality with the model's own outputs,
hooks removed; CLS/GAP logits through one head; a model's PCA of a two-colour image."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vitviz.core.images import model_input
from vitviz.features.pca import joint_pca_maps
from vitviz.features.probes import holdout_split, layer_probes
from vitviz.features.targets import patch_targets
from vitviz.features.layer_tokens import capture_tokens, layer_tokens, num_blocks
from vitviz.models.loading import load_model


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _halves(size: int = 224) -> np.ndarray:
    img = np.zeros((size, size, 3), np.uint8)
    img[:, : size // 2] = (200, 40, 30)
    img[:, size // 2:] = (30, 60, 200)
    return img


def _hooks(module: torch.nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in module.modules())


def test_mae_tiny_tokens_match_the_encoder(photo_path):
    m = load_model("mae-tiny")
    before = _hooks(m.module)
    lt = capture_tokens(m, photo_path)
    assert _hooks(m.module) == before
    assert lt.num_layers == num_blocks(m) + 1 == 9
    assert lt.names[0] == "embedding" and lt.names[-1] == "block 8"
    assert all(t.shape == (197, 192) for t in lt.tokens) and lt.num_prefix == 1
    assert lt.patch_grid(-1).shape == (14, 14, 192)
    mod = m.module
    x = model_input(lt.image, m.data_config, m.device)
    with torch.inference_mode():
        emb = mod.embed_patches(x)[0].numpy()
        ids = torch.arange(196)
        out = mod.encode_tokens(mod.embed_patches(x), ids)[0].numpy()
        last = mod.norm(torch.from_numpy(np.array(lt.tokens[-1]))).numpy()
    np.testing.assert_allclose(lt.tokens[0][1:], emb, atol=1e-5)
    np.testing.assert_allclose(last, out, atol=1e-4)
    assert lt.cls_logits is None and lt.logits is None and lt.head_pool == ""
    assert layer_tokens(m, photo_path) is layer_tokens(m, str(photo_path))  # cached by content


def test_random_deit_cls_and_gap_through_one_head_match_a_direct_computation(photo_path):
    m = load_model("deit-small-distilled", random_init=True)
    lt = capture_tokens(m, photo_path)
    assert lt.random_init and lt.layouts[0].prefix == ("cls", "dist") and lt.num_layers == 13
    mod = m.module
    x = model_input(lt.image, m.data_config, m.device)
    with torch.inference_mode():
        feats = mod.forward_features(x)
        direct_cls = mod.head(feats[:, 0])[0].numpy()
        direct_gap = mod.head(feats[:, 2:].mean(1))[0].numpy()
        direct = mod(x)[0].numpy()
    np.testing.assert_allclose(lt.cls_logits, direct_cls, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(lt.gap_logits, direct_gap, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(lt.logits, direct, rtol=1e-4, atol=1e-4)
    names = lambda top: [n for n, _ in top]  # noqa: E731
    from vitviz.explain.labels import top_k

    assert names(lt.top_k("cls")) == names(top_k(direct_cls, 5))
    assert names(lt.top_k("gap")) == names(top_k(direct_gap, 5))
    assert lt.head_pool == "token"


def test_random_swin_stages_have_their_own_grids(photo_path):
    m = load_model("swin-tiny", random_init=True)
    lt = capture_tokens(m, photo_path)
    grids = [lay.grid for lay in lt.layouts]
    assert grids[0] == (56, 56) and grids[-1] == (7, 7) and lt.num_layers == 13
    assert [lt.patch_size(i) * lay.grid[0] for i, lay in enumerate(lt.layouts)] == [224] * 13
    assert lt.num_prefix == 0 and lt.tokens[-1].shape == (49, 768)
    assert lt.names[1] == "stage 1 · block 1" and lt.names[-1] == "stage 4 · block 2"
    assert lt.head_pool == "avg" and lt.cls_logits is None and lt.logits is not None


def test_pca_of_a_two_colour_image_on_mae_tiny_gives_two_colours():
    m = load_model("mae-tiny")
    lt = capture_tokens(m, _halves())
    for layer in (0, lt.num_layers - 1):
        rgb = joint_pca_maps([lt.patch_grid(layer)]).rgb[0]
        left, right = rgb[:, 1:6].reshape(-1, 3), rgb[:, 8:13].reshape(-1, 3)  # away from the seam
        cl, cr = left.mean(0), right.mean(0)
        assert np.linalg.norm(cl - cr) > 0.3
        near_own = (np.linalg.norm(left - cl, axis=1) < np.linalg.norm(left - cr, axis=1)).mean()
        assert near_own > 0.9


def _smooth_images(n: int, size: int = 224, seed: int = 0) -> list[np.ndarray]:
    """Low-frequency colour fields: little texture, so patch content varies slowly."""
    from PIL import Image

    gen = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        small = gen.integers(40, 216, size=(3, 3, 3), dtype=np.uint8)
        out.append(np.asarray(Image.fromarray(small).resize((size, size), Image.BICUBIC)))
    return out


@pytest.mark.parametrize("name", ["dino-small", "vit-base"])
def test_random_init_position_probe_beats_shuffled_targets_at_the_first_layer(name):
    """Layer 0 = patch embedding + the (random) position embedding just added."""
    m = load_model(name, random_init=True)
    images = _smooth_images(6)
    sets = [capture_tokens(m, img) for img in images]
    feats = [np.stack([t.tokens[0][t.num_prefix:]]) for t in sets]  # (1, P, D): layer 0 only
    targets = [patch_targets(t.image, t.patch_size(0)) for t in sets]
    split = holdout_split(len(images))
    real = layer_probes(feats, targets, split)
    control = layer_probes(feats, targets, split, shuffle_seed=0)
    assert set(real.split.fit).isdisjoint(real.split.score)
    for target in ("row", "column"):
        assert real.column(target)[0] > control.column(target)[0] + 0.2
