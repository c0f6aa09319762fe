"""Attention capture, token layout, rollout and attention distance: invariants on tiny models."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

# The module, not the function: ``vitviz.attention`` is also exported as the function ``attention``.
import vitviz.cache as cache
import vitviz.explain.attention as explain_attention
import vitviz.explain.capture as explain_capture
import vitviz.explain.layout as explain_layout
import vitviz.explain.rollout as explain_rollout
from vitviz.core.masking import make_mask
from vitviz.models.loading import LoadedModel
from vitviz.models.registry import get_spec


# ----------------------------------------------------------------------------- helpers


def _timm(name: str, seed: int = 0, **kwargs) -> torch.nn.Module:
    import timm

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return timm.create_model(name, pretrained=False, **kwargs).eval()


def _loaded(module: torch.nn.Module, registry_name: str) -> LoadedModel:
    from vitviz.models.build import timm_data_config

    return LoadedModel(registry_name, get_spec(registry_name), module, timm_data_config(module), torch.device("cpu"))


@pytest.fixture(scope="module")
def vit() -> LoadedModel:
    return _loaded(_timm("vit_tiny_patch16_224", depth=2), "vit-base")


@pytest.fixture(scope="module")
def deit() -> LoadedModel:
    return _loaded(_timm("deit_tiny_distilled_patch16_224", depth=2), "deit-small-distilled")


@pytest.fixture(scope="module")
def dino() -> LoadedModel:
    return _loaded(_timm("vit_tiny_patch16_224", depth=2, num_classes=0), "dino-small")


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    g = np.random.default_rng(0)
    return g.integers(0, 256, (224, 224, 3), dtype=np.uint8)


def _input(model: LoadedModel, view: np.ndarray) -> torch.Tensor:
    from vitviz.core.images import normalize, uint8_to_unit

    return normalize(uint8_to_unit(view), model.data_config).unsqueeze(0)


def _block_inputs(blocks, run) -> list[torch.Tensor]:
    """The input of each block's ``attn`` (after norm1), recorded by test-only pre-hooks."""
    seen: list[torch.Tensor] = []
    handles = [b.attn.register_forward_pre_hook(lambda _m, inp: seen.append(inp[0].detach().clone()))
               for b in blocks]
    try:
        with torch.inference_mode():
            run()
    finally:
        for h in handles:
            h.remove()
    return seen


@torch.no_grad()
def _recompute(attn: torch.nn.Module, x: torch.Tensor) -> np.ndarray:
    """softmax(q k^T / sqrt(d)) from the block's own q and k projections: ``(H, T, T)``."""
    b, n, _ = x.shape
    qkv = attn.qkv(x).reshape(b, n, 3, attn.num_heads, attn.head_dim).permute(2, 0, 3, 1, 4)
    q, k = attn.q_norm(qkv[0]), attn.k_norm(qkv[1])
    logits = (q.double() @ k.double().transpose(-2, -1)) / np.sqrt(attn.head_dim)
    return logits.softmax(-1)[0].numpy()


def _all_hooks(module: torch.nn.Module) -> int:
    total = 0
    for m in module.modules():
        for name in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
                     "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs", "_state_dict_hooks",
                     "_load_state_dict_pre_hooks"):
            total += len(getattr(m, name, {}) or {})
    return total


def _fused(blocks) -> list[bool]:
    return [bool(b.attn.fused_attn) for b in blocks]


# ----------------------------------------------------------------------------- capture equals q·k


@pytest.mark.parametrize("which", ["vit", "deit"])
def test_timm_capture_equals_attention_from_q_and_k(which, request, image):
    model = request.getfixturevalue(which)
    mod = model.module
    maps = explain_attention.capture(model, image)
    x = _input(model, image)
    inputs = _block_inputs(mod.blocks, lambda: mod(x))
    assert maps.attentions.shape == (len(mod.blocks), mod.blocks[0].attn.num_heads, 197 + (which == "deit"),
                                     197 + (which == "deit"))
    for layer, (blk, xin) in enumerate(zip(mod.blocks, inputs)):
        np.testing.assert_allclose(maps.attentions[layer], _recompute(blk.attn, xin), atol=1e-5, rtol=0)
    np.testing.assert_allclose(maps.attentions.sum(-1), 1.0, atol=1e-5)
    assert maps.layout.prefix == (("cls", "dist") if which == "deit" else ("cls",))
    assert maps.layout.num_patches == 196 and maps.layout.grid == (14, 14)


def test_mae_encoder_capture_equals_q_and_k_over_visible_tokens_only(tiny_loaded, rng):
    mae = tiny_loaded.module
    view = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    mask = make_mask(mae.config.grid, 0.5, seed=3)
    maps = explain_attention.capture(tiny_loaded, view, mask=mask)
    visible = int((~mask).sum())
    assert maps.attentions.shape == (mae.config.depth, mae.config.num_heads, 1 + visible, 1 + visible)
    hidden_rc = {tuple(rc) for rc in np.argwhere(mask.numpy())}
    layout_rc = {tuple(rc) for rc in maps.layout.patch_rc}
    assert not hidden_rc & layout_rc  # hidden patches never appear
    assert layout_rc | hidden_rc == {(r, c) for r in range(4) for c in range(4)}
    assert np.array_equal(maps.layout.hidden, mask.numpy())
    for r, c in hidden_rc:
        assert maps.layout.token_of_patch(r, c) is None
        with pytest.raises(ValueError, match="hidden"):
            maps.query(0, (r, c))
    # recompute from q and k over exactly the visible tokens
    x = _input(tiny_loaded, view)
    ids = torch.as_tensor((~mask).reshape(-1).nonzero().flatten())
    inputs = _block_inputs(mae.blocks, lambda: mae.encode_tokens(mae.embed_patches(x), ids))
    for layer, (blk, xin) in enumerate(zip(mae.blocks, inputs)):
        np.testing.assert_allclose(maps.attentions[layer], _recompute(blk.attn, xin), atol=1e-5, rtol=0)
    np.testing.assert_allclose(maps.attentions.sum(-1), 1.0, atol=1e-5)
    q = maps.query(0, "cls")
    assert np.isnan(q[:, mask.numpy()]).all() and np.isfinite(q[:, ~mask.numpy()]).all()


def test_mae_decoder_sees_every_patch_with_mask_tokens(tiny_loaded, rng):
    mae = tiny_loaded.module
    view = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    mask = make_mask(mae.config.grid, 0.75, seed=1)
    maps = explain_attention.capture(tiny_loaded, view, mask=mask, part="decoder")
    n = mae.config.num_patches
    assert maps.attentions.shape == (mae.config.decoder_depth, mae.config.decoder_num_heads, 1 + n, 1 + n)
    assert np.array_equal(maps.layout.mask_token, mask.numpy().reshape(-1))
    x = _input(tiny_loaded, view)
    ids = torch.as_tensor((~mask).reshape(-1).nonzero().flatten())
    inputs = _block_inputs(mae.decoder_blocks, lambda: mae.forward_decoder(mae.forward_encoder(x, ids), ids))
    for layer, (blk, xin) in enumerate(zip(mae.decoder_blocks, inputs)):
        np.testing.assert_allclose(maps.attentions[layer], _recompute(blk.attn, xin), atol=1e-5, rtol=0)
    assert "mask token" in maps.layout.describe(1 + int(np.argmax(mask.numpy().reshape(-1))))
    with pytest.raises(ValueError, match="encoder"):
        explain_attention.capture(_loaded(_timm("test_vit"), "vit-base"), np.zeros((160, 160, 3), np.uint8), part="decoder")


def test_register_tokens_and_classifier_free_models(dino, image):
    reg = _loaded(_timm("vit_tiny_patch16_224", depth=1, reg_tokens=4), "vit-base")
    maps = explain_attention.capture(reg, image)
    assert maps.layout.prefix == ("cls", "reg0", "reg1", "reg2", "reg3")
    assert maps.attentions.shape[-1] == 5 + 196
    assert maps.logits is not None and len(maps.top_k(5)) == 5
    assert explain_attention.capture(dino, image).logits is None
    assert explain_attention.capture(dino, image).top_k() == []


# ----------------------------------------------------------------------------- the model is left as it was


@pytest.mark.parametrize("which", ["vit", "deit"])
def test_capture_leaves_outputs_fused_flags_and_hooks_unchanged(which, request, image):
    model = request.getfixturevalue(which)
    mod = model.module
    mod.blocks[0].attn.fused_attn = False  # a mixed setting must come back exactly
    try:
        before_flags = _fused(mod.blocks)
        before_hooks = _all_hooks(mod)
        x = _input(model, image)
        with torch.inference_mode():
            before = mod(x).clone()
        maps = explain_attention.capture(model, image)
        with torch.inference_mode():
            after = mod(x)
        assert torch.equal(before, after)
        assert _fused(mod.blocks) == before_flags
        assert _all_hooks(mod) == before_hooks == 0
        assert not torch.nn.modules.module._global_forward_hooks
        # the captured forward (explicit softmax) gives the same logits as the fused one
        np.testing.assert_allclose(maps.logits, before[0].numpy(), atol=1e-4, rtol=1e-4)
    finally:
        mod.blocks[0].attn.fused_attn = True


def test_mae_capture_leaves_module_unchanged(tiny_loaded, rng):
    mae = tiny_loaded.module
    blocks = list(mae.blocks) + list(mae.decoder_blocks)
    flags = _fused(blocks)
    view = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    mask = make_mask(mae.config.grid, 0.5, seed=0)
    ids = torch.as_tensor((~mask).reshape(-1).nonzero().flatten())
    x = _input(tiny_loaded, view)
    with torch.inference_mode():
        before = mae(x, ids.unsqueeze(0)).clone()
    for part in ("encoder", "decoder"):
        explain_attention.capture(tiny_loaded, view, mask=mask, part=part)
    with torch.inference_mode():
        assert torch.equal(before, mae(x, ids.unsqueeze(0)))
    assert _fused(blocks) == flags and _all_hooks(mae) == 0


def test_hooks_removed_and_flags_restored_when_the_forward_raises(vit):
    blocks = vit.module.blocks
    flags = _fused(blocks)

    def boom():
        assert not any(_fused(blocks))  # explicit path while capturing
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        explain_capture.capture_blocks(blocks, boom)
    assert _fused(blocks) == flags and _all_hooks(vit.module) == 0


def test_forward_in_another_thread_does_not_leak_into_a_capture(vit, image):
    x = _input(vit, image)
    mods = explain_capture.attention_modules(vit.module.blocks)
    with explain_capture.capturing(mods) as store:
        t = threading.Thread(target=lambda: vit.module(x))
        with torch.inference_mode():
            t.start()
            t.join()
        assert all(len(s) == 0 for s in store)
    assert _all_hooks(vit.module) == 0


def test_unsupported_models_and_bad_arguments(vit, image, tiny_loaded):
    swin = _loaded(_timm("swin_tiny_patch4_window7_224", depths=(1, 1, 1, 1)), "swin-tiny")
    with pytest.raises(ValueError, match="Swin"):
        explain_attention.capture(swin, image)
    with pytest.raises(ValueError, match="MAE models only"):
        explain_attention.capture(vit, image, mask=np.zeros((14, 14), bool))
    with pytest.raises(ValueError, match="hides every patch"):
        explain_attention.capture(tiny_loaded, np.zeros((64, 64, 3), np.uint8), mask=np.ones((4, 4), bool))
    with pytest.raises(ValueError, match="4x4"):
        explain_attention.capture(tiny_loaded, np.zeros((64, 64, 3), np.uint8), mask=np.zeros((3, 3), bool))
    maps = explain_attention.capture(vit, image)
    with pytest.raises(ValueError, match="distillation"):
        maps.query(0, "dist")
    with pytest.raises(ValueError, match="layer must be 0..1"):
        maps.layer(2)
    with pytest.raises(ValueError, match="mean, max, min"):
        maps.rollout("median")
    with pytest.raises(ValueError, match="discard ratio"):
        maps.rollout("mean", 1.5)
    assert not maps.attentions.flags.writeable and not maps.image.flags.writeable


# ----------------------------------------------------------------------------- rollout


def _rollout_reference(att: np.ndarray, fusion: str, discard: float) -> np.ndarray:
    """Rollout written out step by step, independently of vitviz (rows loop for the discard)."""
    t = att.shape[-1]
    result = np.eye(t)
    for layer in att.astype(np.float64):
        fused = {"mean": layer.mean(0), "max": layer.max(0), "min": layer.min(0)}[fusion].copy()
        n = int(np.floor(discard * (t - 1) + 1e-9))
        for i in range(t):
            others = sorted((fused[i, j], j) for j in range(t) if j != i)
            for _, j in others[:n]:
                fused[i, j] = 0.0
        a = fused + np.eye(t)
        a = a / a.sum(axis=1, keepdims=True)
        result = a @ result
    return result


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
@pytest.mark.parametrize("discard", [0.0, 0.3, 0.9])
def test_rollout_equals_a_direct_matrix_product(fusion, discard):
    g = np.random.default_rng(1)
    att = g.random((3, 2, 9, 9)) ** 3
    att /= att.sum(-1, keepdims=True)
    got = explain_rollout.rollout_matrix(att, fusion, discard)
    np.testing.assert_allclose(got, _rollout_reference(att, fusion, discard), atol=1e-12)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-12)


def test_rollout_mean_is_the_papers_half_identity():
    g = np.random.default_rng(2)
    att = g.random((4, 3, 6, 6))
    att /= att.sum(-1, keepdims=True)
    expected = np.eye(6)
    for layer in att:
        expected = (0.5 * layer.mean(0) + 0.5 * np.eye(6)) @ expected
    np.testing.assert_allclose(explain_rollout.rollout_matrix(att), expected, atol=1e-12)


def test_rollout_map_of_models_sums_to_one(vit, deit, tiny_loaded, image):
    for model, img in ((vit, image), (deit, image)):
        maps = explain_attention.capture(model, img)
        for fusion in explain_rollout.HEAD_FUSIONS:
            r = maps.rollout(fusion, 0.5)
            assert r.shape == (14, 14) and abs(r.sum() - 1) < 1e-9 and (r >= 0).all()
        full = maps.rollout_matrix()
        row = full[0, maps.layout.num_prefix:]
        np.testing.assert_allclose(maps.rollout().reshape(-1), row / row.sum(), atol=1e-12)
    maps = explain_attention.capture(deit, image)
    assert not np.allclose(maps.rollout(token="cls"), maps.rollout(token="dist"))
    mask = make_mask((4, 4), 0.5, 0).numpy()
    r = explain_attention.capture(tiny_loaded, np.zeros((64, 64, 3), np.uint8), mask=mask).rollout()
    assert abs(r.sum() - 1) < 1e-9 and (r[mask] == 0).all()


def test_discard_keeps_the_diagonal_and_drops_the_weakest():
    a = np.array([[0.1, 0.5, 0.4], [0.0, 0.2, 0.8], [0.3, 0.3, 0.4]])
    d = explain_rollout.discard_lowest(a, 0.5)  # one of the two off-diagonal entries per row
    assert np.array_equal(d, [[0.1, 0.5, 0.0], [0.0, 0.2, 0.8], [0.0, 0.3, 0.4]])
    assert np.array_equal(explain_rollout.discard_lowest(a, 0.99), d)  # floor(0.99 * 2) = 1 entry per row
    big = np.random.default_rng(0).random((101, 101))
    kept = explain_rollout.discard_lowest(big, 0.99) != 0
    assert kept.sum(axis=1).tolist() == [2] * 101 and kept.diagonal().all()  # 99 of 100 dropped, diagonal kept
    np.testing.assert_allclose(explain_rollout.rollout_matrix(np.zeros((2, 1, 3, 3)), "mean", 0.99), np.eye(3))


# ----------------------------------------------------------------------------- attention distance and others


def _layout(gh: int = 3, gw: int = 3, p: int = 16) -> explain_layout.TokenLayout:
    rc = np.stack(np.divmod(np.arange(gh * gw), gw), axis=1)
    return explain_layout.TokenLayout(("cls",), rc, (gh, gw), p, np.zeros((gh, gw), bool), np.zeros(gh * gw, bool))


def test_mean_attention_distance_in_pixels():
    lay = _layout()
    t = lay.num_tokens
    to_self = np.eye(t)[None, None]
    assert np.allclose(explain_rollout.mean_attention_distance(to_self, lay), 0)
    right = np.zeros((1, 1, t, t))  # each patch looks at its right neighbour (or itself at the edge)
    for i, (r, c) in enumerate(lay.patch_rc):
        right[0, 0, 1 + i, 1 + lay.token_of_patch(r, min(c + 1, 2)) - 1] = 0.5
        right[0, 0, 1 + i, 0] = 0.5  # half on the class token: renormalised away over patches
    right[0, 0, 0, 0] = 1
    assert np.isclose(explain_rollout.mean_attention_distance(right, lay)[0, 0], 16 * 6 / 9)
    uniform = np.full((2, 3, t, t), 1.0 / t)
    np.testing.assert_allclose(explain_rollout.mean_attention_distance(uniform, lay), explain_rollout.uniform_distance(lay))


def test_mass_region_is_the_smallest_set_holding_the_share():
    heat = np.array([[0.5, 0.2], [0.2, 0.1]])
    assert np.array_equal(explain_rollout.mass_region(heat, 0.6), [[True, True], [False, False]])
    assert explain_rollout.mass_region(heat, 1.0).all()
    assert not explain_rollout.mass_region(np.full((2, 2), np.nan), 0.6).any()


def test_layout_pixels_and_scatter():
    lay = _layout(4, 4, 16)
    assert lay.patch_at_pixel(0, 0, 448) == (0, 0)
    assert lay.patch_at_pixel(447, 120, 448) == (1, 3)
    assert lay.patch_at_pixel(9999, -5, 448) == (0, 3)
    out = lay.scatter(np.arange(16.0))
    assert out[2, 1] == 9.0
    with pytest.raises(ValueError):
        lay.patch_at_pixel(float("nan"), 0)


def test_cache_is_a_lookup_and_bounded(tiny_loaded, monkeypatch, rng):
    monkeypatch.setattr(explain_attention, "CACHE", cache.LRU(2))
    view = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    a = explain_attention.attention(tiny_loaded, view)
    assert explain_attention.attention(tiny_loaded, view.copy()) is a and explain_attention.CACHE.computed == 1
    mask = make_mask((4, 4), 0.5, 0)
    b = explain_attention.attention(tiny_loaded, view, mask=mask)
    assert b is not a and explain_attention.CACHE.computed == 2
    explain_attention.attention(tiny_loaded, view, mask=mask, part="decoder")
    assert len(explain_attention.CACHE) == 2 and explain_attention.CACHE.computed == 3
    assert explain_attention.masked_attention(tiny_loaded, view, 0.5, 0) is b


def test_random_init_models_are_flagged_seeded_and_leave_the_global_rng(monkeypatch):
    from vitviz.models import loading

    monkeypatch.setattr(loading, "CACHE", loading.LRU(2))
    state = torch.random.get_rng_state()
    m = loading.load_model("mae-tiny", device="cpu", random_init=True)
    assert torch.equal(state, torch.random.get_rng_state())
    assert m.random_init and not m.module.training
    again = loading._load_random(get_spec("mae-tiny"), torch.device("cpu"), m.kernels)
    for k, v in m.module.state_dict().items():
        assert torch.equal(v, again.module.state_dict()[k])
    trained = loading.load_model("mae-tiny", device="cpu")
    assert not trained.random_init and trained is not m
    maps = explain_attention.capture(m, np.zeros((224, 224, 3), np.uint8))
    assert maps.random_init and not explain_attention.capture(trained, np.zeros((224, 224, 3), np.uint8)).random_init


def test_imagenet_labels_and_top_k():
    from vitviz.explain.labels import imagenet_labels, top_k

    names = imagenet_labels()
    assert len(names) == 1000 and len(set(names)) == 1000
    assert names[0] == "tench" and names[281] == "tabby"
    logits = np.zeros(1000)
    logits[281], logits[1] = 5.0, 4.0
    top = top_k(logits, 5)
    assert [n for n, _ in top[:2]] == ["tabby", "goldfish"]
    assert top[0][1] > top[1][1] > top[2][1] and sum(p for _, p in top) < 1
    with pytest.raises(ValueError):
        top_k(np.zeros(10))


def test_render_and_figure(tiny_loaded):
    from vitviz.plots.attention import attention_distance_figure
    from vitviz.render.attention import head_grid, heat_overlay

    mask = make_mask((4, 4), 0.5, 0).numpy()
    maps = explain_attention.capture(tiny_loaded, np.full((64, 64, 3), 200, np.uint8), mask=mask)
    over = heat_overlay(maps.image, maps.query_mean(0, "cls"), 128, query=(0, 0), label="x")
    assert over.shape == (128, 128, 3) and over.dtype == np.uint8
    hidden = np.argwhere(mask)[0]
    cell = over[hidden[0] * 32 + 16, hidden[1] * 32 + 10]
    assert abs(int(cell[0]) - int(cell[1])) < 8  # grey, not a colour
    grid = head_grid(maps.image, maps.query(0, "cls"), tile=64, cols=2)
    assert grid.shape == (20 + 64, 2 * 64 + 6, 3)
    fig = attention_distance_figure(maps.mean_distance(), "t", reference=maps.uniform_distance())
    assert sum(len(t.x) for t in fig.data) == maps.depth * maps.num_heads
    assert [t.name for t in fig.data] == [f"head {h + 1}" for h in range(maps.num_heads)]
