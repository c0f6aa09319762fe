"""Swin's window attention (vitviz.explain.windows), captured by the one mechanism, and its renders."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import vitviz.core.images as core_images
import vitviz.core.windows as core_windows
import vitviz.explain.windows as explain_windows
import vitviz.render.windows as render_windows
import vitviz.views.swin as views_swin

timm = pytest.importorskip("timm")


def _input(picture: np.ndarray) -> torch.Tensor:
    return core_images.model_input(picture, core_images.DataConfig())


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
