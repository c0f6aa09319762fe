"""Swin window geometry (vitviz.core.windows): partition, shift, the mask against timm's, stage geometry, clicks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import vitviz.core.windows as core_windows
import vitviz.explain.windows as explain_windows

timm = pytest.importorskip("timm")
from timm.models.swin_transformer import SwinTransformerBlock  # noqa: E402
from timm.models.swin_transformer import window_partition as timm_window_partition  # noqa: E402


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
