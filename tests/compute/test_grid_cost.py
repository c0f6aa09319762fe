"""The cost of a photo at its own shape against the square, in closed form."""

from __future__ import annotations

import pytest

from vitviz.compute.formulas import global_attention_flops, vit_block_flops
from vitviz.compute.grid_cost import grid_cost, most_patch_tokens


def test_a_16x9_photo_at_644_px_against_the_224_square():
    c = grid_cost((26, 46), (16, 16), dim=384, depth=12)
    assert c.patch_tokens == 1196 and c.base_patch_tokens == 256
    assert round(c.token_ratio, 1) == 4.7  # the "4.7x the 256"
    assert c.attention_ratio == pytest.approx((1197 / 257) ** 2) and round(c.attention_ratio) == 22
    assert c.flops == 12 * vit_block_flops(1197, 384)
    assert c.flops_ratio == pytest.approx(c.flops / (12 * vit_block_flops(257, 384)))
    assert 1 < c.token_ratio < c.flops_ratio < c.attention_ratio  # linear parts in between


def test_the_same_grid_costs_the_same_and_bad_grids_are_refused():
    c = grid_cost((16, 16), (16, 16), 384, 12)
    assert c.token_ratio == c.attention_ratio == c.flops_ratio == 1.0
    assert global_attention_flops(257, 384) * 12 < c.flops
    with pytest.raises(ValueError, match="positive"):
        grid_cost((0, 4), (16, 16), 384, 12)
    assert most_patch_tokens(644, 14) == 46 * 46 and most_patch_tokens(448, 14) == 1024
