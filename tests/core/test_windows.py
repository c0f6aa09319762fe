"""Swin windows (vitviz.core.windows): partition, shift, mask vs timm, geometry; captured attention
(vitviz.explain.windows) and renders (vitviz.render.windows, vitviz.views.swin) on the same fixtures."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import vitviz.core.images as core_images
import vitviz.render.windows as render_windows
import vitviz.views.swin as views_swin
import vitviz.core.windows as core_windows
import vitviz.explain.windows as explain_windows

timm = pytest.importorskip("timm")
from timm.models.swin_transformer import SwinTransformerBlock  # noqa: E402
from timm.models.swin_transformer import window_partition as timm_window_partition  # noqa: E402


@pytest.fixture(scope="module")
def swin_t() -> nn.Module:
    from vitviz.models.loading import load_model

    return load_model("swin-tiny", device="cpu", random_init=True).module


def _input(picture: np.ndarray) -> torch.Tensor:
    return core_images.model_input(picture, core_images.DataConfig())


@pytest.fixture(scope="module")
def picture() -> np.ndarray:
    return core_images.view_or_synthetic(None, 224)


# ---------------------------------------------------------------------------- partition and shift


@pytest.mark.parametrize("hw,window", [((14, 21), 7), ((8, 12), (4, 3)), ((7, 7), 7)])
def test_partition_reverse_round_trip(hw: tuple[int, int], window: int | tuple[int, int]) -> None:
    x = torch.randn(2, *hw, 5, generator=torch.Generator().manual_seed(0))
    win = core_windows.window_partition(x, window)
    mh, mw = (window, window) if isinstance(window, int) else window
    assert win.shape == (2 * (hw[0] // mh) * (hw[1] // mw), mh, mw, 5)
    assert torch.equal(core_windows.window_reverse(win, window, *hw), x)
    assert torch.equal(win, timm_window_partition(x, (mh, mw)))


def test_partition_rejects_partial_windows() -> None:
    with pytest.raises(ValueError, match="pad"):
        core_windows.window_partition(torch.zeros(1, 10, 14, 3), 7)


def test_cyclic_shift() -> None:
    x = torch.arange(2 * 14 * 14 * 3).reshape(2, 14, 14, 3)
    y = core_windows.cyclic_shift(x, 3)
    assert torch.equal(y[:, 0, 0], x[:, 3, 3])
    assert torch.equal(y[:, 13, 13], x[:, 2, 2])
    assert torch.equal(core_windows.cyclic_shift(y, 3, reverse=True), x)


# ---------------------------------------------------------------------------- the mask


@pytest.mark.parametrize(
    "grid,window,shift",
    [((56, 56), 7, 3), ((28, 28), 7, 3), ((14, 14), 7, 3), ((7, 7), 7, 3), ((24, 24), 7, 3),
     ((14, 28), 7, 3), ((16, 16), 4, 2), ((12, 20), 6, 3), ((5, 30), 7, 3)],
)
def test_shifted_mask_equals_timm(grid: tuple[int, int], window: int, shift: int) -> None:
    blk = SwinTransformerBlock(dim=8, input_resolution=grid, num_heads=2, window_size=window, shift_size=shift)
    win, sft = core_windows.effective_window(grid, window, shift)
    assert (win, sft) == (tuple(blk.window_size), tuple(blk.shift_size))
    mine = core_windows.shifted_window_mask(grid, win, sft)
    if blk.attn_mask is None:
        assert mine is None
    else:
        assert mine.dtype == blk.attn_mask.dtype
        assert torch.equal(mine, blk.attn_mask)


def test_every_swin_t_block_mask_equals_timm(swin_t: nn.Module) -> None:
    geoms = explain_windows.model_geometry(swin_t)
    for g, layer in zip(geoms, swin_t.layers):
        for b, blk in enumerate(layer.blocks):
            assert tuple(blk.shift_size) == g.block_shift(b)
            mine = core_windows.shifted_window_mask(g.grid, g.window, g.block_shift(b))
            assert (mine is None and blk.attn_mask is None) or torch.equal(mine, blk.attn_mask)


def test_mask_blocks_exactly_the_pairs_from_different_places() -> None:
    g = core_windows.stage_geometry()[1]  # 28x28 tokens, 4x4 windows, shift 3
    blocked = core_windows.blocked_pairs(g.grid, g.window, g.shift)
    n_wr, n_wc = g.windows_hw
    for w in range(g.num_windows):
        pos = core_windows.window_token_positions(g, 1, w)
        # two tokens may attend iff they are neighbours in the image, i.e. not separated by the wrap
        r, c = pos[:, 0], pos[:, 1]
        same = (np.abs(r[:, None] - r[None, :]) < g.window[0]) & (np.abs(c[:, None] - c[None, :]) < g.window[1])
        assert np.array_equal(~blocked[w], same)
        edge = w // n_wc == n_wr - 1 or w % n_wc == n_wc - 1
        assert blocked[w].any() == edge
        assert np.array_equal(blocked[w], blocked[w].T)
        assert not blocked[w].diagonal().any()
    labels = core_windows.region_labels(g.grid, g.window, g.shift)
    assert sorted(np.unique(labels)) == list(range(9))
    assert (labels == 0).sum() == (28 - 7) ** 2


# ---------------------------------------------------------------------------- geometry


def test_swin_t_stage_geometry(swin_t: nn.Module) -> None:
    geoms = core_windows.stage_geometry()
    assert geoms == explain_windows.model_geometry(swin_t)
    assert [g.grid for g in geoms] == [(56, 56), (28, 28), (14, 14), (7, 7)]
    assert [g.windows_hw for g in geoms] == [(8, 8), (4, 4), (2, 2), (1, 1)]
    assert [g.shift for g in geoms] == [(3, 3), (3, 3), (3, 3), (0, 0)]
    assert [g.dim for g in geoms] == [96, 192, 384, 768]
    assert [g.token_pixels for g in geoms] == [4, 8, 16, 32]
    assert "8x8 windows of 7x7" in geoms[0].describe()
    with pytest.raises(ValueError, match="blocks 0..1"):
        geoms[0].block_shift(2)


@pytest.mark.parametrize("stage", [1, 3, 4])
def test_token_window_maps_are_consistent(stage: int) -> None:
    g = core_windows.stage_geometry()[stage - 1]
    for block in (0, 1):
        ids = core_windows.window_id_map(g, block)
        for row in range(0, g.grid[0], 3):
            for col in range(0, g.grid[1], 2):
                w, q = core_windows.token_window(g, block, row, col)
                assert ids[row, col] == w
                assert tuple(core_windows.window_token_positions(g, block, w)[q]) == (row, col)
        assert np.bincount(ids.ravel()).tolist() == [g.window_area] * g.num_windows


def test_click_on_rolled_view_maps_back() -> None:
    g = core_windows.stage_geometry()[2]
    tp = 448 // g.grid[0]
    for row in range(g.grid[0]):
        for col in range(g.grid[1]):
            rr, rc = core_windows.rolled_position(g, 1, row, col)
            assert core_windows.token_at_pixel(g, (rc + 0.5) * tp, (rr + 0.5) * tp, 448, rolled_block=1) == (row, col)
            x, y = core_windows.token_center_pixel(g, (row, col), 224)
            assert core_windows.token_at_pixel(g, x, y, 224) == (row, col)
    with pytest.raises(ValueError):
        core_windows.token_at_pixel(g, float("nan"), 0)


# ---------------------------------------------------------------------------- captured attention


def _recompute(swin_t: nn.Module, x: torch.Tensor, stage: int, block: int) -> torch.Tensor:
    """The block's softmax recomputed from its input, q and k: ``(nW, heads, A, A)``."""
    blk = swin_t.layers[stage - 1].blocks[block]
    seen: dict[str, torch.Tensor] = {}
    h = blk.register_forward_pre_hook(lambda m, args: seen.setdefault("x", args[0]))
    try:
        with torch.inference_mode():
            swin_t(x)
    finally:
        h.remove()
    g = explain_windows.model_geometry(swin_t)[stage - 1]
    with torch.inference_mode():
        t = core_windows.cyclic_shift(blk.norm1(seen["x"]), g.block_shift(block))
        win = core_windows.window_partition(t, g.window).reshape(-1, g.window_area, g.dim)
        qkv = blk.attn.qkv(win).reshape(win.shape[0], g.window_area, 3, g.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, _ = qkv.unbind(0)
        logits = (q * blk.attn.scale) @ k.transpose(-2, -1) + blk.attn._get_rel_pos_bias()
        mask = core_windows.shifted_window_mask(g.grid, g.window, g.block_shift(block))
        if mask is not None:
            logits = logits + mask.unsqueeze(1)
        return logits.softmax(-1)


@pytest.mark.parametrize("stage,block,token", [(1, 1, (0, 0)), (2, 0, (5, 20)), (3, 1, (13, 2)), (4, 1, (3, 3))])
def test_captured_attention_equals_recomputed(swin_t: nn.Module, picture: np.ndarray, stage: int, block: int,
                                              token: tuple[int, int]) -> None:
    x = _input(picture)
    cap = explain_windows.capture_window_attention(swin_t, x, stage, block, token)
    ref = _recompute(swin_t, x, stage, block)
    assert np.allclose(cap.window_attention, ref[cap.window_index].numpy(), atol=1e-6)
    assert np.allclose(cap.weights.reshape(cap.weights.shape[0], -1),
                       ref[cap.window_index, :, cap.query_index].numpy(), atol=1e-6)
    assert np.allclose(cap.weights.sum(axis=(1, 2)), 1.0, atol=1e-5)
    assert np.all(cap.weights.reshape(cap.weights.shape[0], -1)[:, cap.blocked] < 1e-30)
    g = cap.geometry
    assert cap.weights.shape == (g.num_heads, *g.window)
    grid = cap.weights_on_grid()
    assert grid.shape == (g.num_heads, *g.grid)
    assert np.isfinite(grid[0]).sum() == g.window_area


def test_capture_handles_fused_attention_and_removes_hooks(swin_t: nn.Module, picture: np.ndarray) -> None:
    blk = swin_t.layers[0].blocks[1]
    x = _input(picture)
    ref = explain_windows.capture_window_attention(swin_t, x, 1, 1, (0, 0))
    blk.attn.fused_attn = True
    try:
        cap = explain_windows.capture_window_attention(swin_t, x, 1, 1, (0, 0))
        assert blk.attn.fused_attn is True
    finally:
        blk.attn.fused_attn = False
    assert np.allclose(cap.weights, ref.weights, atol=1e-6)
    assert not blk.attn.attn_drop._forward_hooks and not blk.attn.softmax._forward_hooks
    assert int(ref.blocked.sum()) == 49 - 9  # the top-left token sits with 8 others of region I
    with pytest.raises(ValueError):
        explain_windows.capture_window_attention(swin_t, x, 5, 0, (0, 0))


def test_random_swin_is_seeded_and_leaves_global_rng_alone() -> None:
    from vitviz.models.build import build_random
    from vitviz.models.registry import get_spec

    state = torch.random.get_rng_state()
    a, _, _ = build_random(get_spec("swin-tiny"))
    assert torch.equal(state, torch.random.get_rng_state())
    b, _, _ = build_random(get_spec("swin-tiny"))
    assert torch.equal(a.head.fc.weight, b.head.fc.weight)


def test_swin_tab_model_is_pretrained_only_when_its_file_is_here(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("VITVIZ_WEIGHTS_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    assert not explain_windows.has_pretrained()
    m = explain_windows.swin_model()
    assert m.random_init and m.name == "swin-tiny"
    cap = explain_windows.window_attention(m, core_images.view_or_synthetic(None, 224), 1, 1, (0, 0))
    assert cap.random_init


# ---------------------------------------------------------------------------- renders


def test_renders(picture: np.ndarray, swin_t: nn.Module) -> None:
    assert picture.shape == (224, 224, 3) and picture.dtype == np.uint8
    assert np.array_equal(picture, core_images.view_or_synthetic(None, 224))  # deterministic, no file
    geoms = core_windows.stage_geometry()
    v = views_swin.swin_views(picture, 1, (0, 0), geoms)
    for img in (v.regular, v.shifted, v.rolled):
        assert img.shape == (448, 448, 3) and img.dtype == np.uint8
    assert len(v.stages) == 4 and all(s.shape == (224, 224, 3) for s in v.stages)
    assert np.array_equal(v.blocked, core_windows.blocked_pairs(v.geometry.grid, v.geometry.window, v.geometry.shift)[63])
    assert not views_swin.swin_views(picture, 4, (0, 0), geoms).blocked.any()
    # the rolled view without a shift is the plain partition view
    assert np.array_equal(render_windows.rolled_overlay(picture, geoms[3], 1, 448), render_windows.partition_overlay(picture, geoms[3], 1, 448))
    cap = explain_windows.capture_window_attention(swin_t, _input(picture), 2, 1, (0, 27))
    tiles = render_windows.window_attention_tiles(picture, cap, 196)
    assert len(tiles) == 6 and tiles[0].shape == (196, 196, 3)
    assert render_windows.attention_overlay(picture, cap, 448).shape == (448, 448, 3)
    with pytest.raises(ValueError):
        views_swin.swin_views(picture, 1, (56, 0), geoms)
