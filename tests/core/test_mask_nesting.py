"""Which mask patterns nest across ratios, exactly as the MAE tab says (issue 22)."""

from __future__ import annotations

import pytest
import torch

from vitviz.core.masking import NESTED_PATTERNS, PATTERNS, nested_block_mask, block_order, make_mask, num_hidden
from vitviz.mae.sweep import STOPS

GRIDS = [(14, 14), (16, 16), (7, 9)]


def _nested(lower: torch.Tensor, higher: torch.Tensor) -> bool:
    return not bool((lower & ~higher).any())


def _all_steps_nested(pattern: str, grid: tuple[int, int], seed: int) -> bool:
    masks = [make_mask(grid, r, seed, pattern) for r in STOPS]
    return all(_nested(a, b) for a, b in zip(masks, masks[1:]))


@pytest.mark.parametrize("pattern", PATTERNS)
def test_nesting_is_exactly_what_the_ui_claims(pattern):
    # Claimed nested: every slider step, every seed and grid. Claimed redrawn: some step is not nested.
    results = [_all_steps_nested(pattern, grid, seed) for grid in GRIDS for seed in range(6)]
    if pattern in NESTED_PATTERNS:
        assert all(results)
    else:
        assert not any(results)


def test_the_nested_patterns_are_known_patterns():
    assert set(NESTED_PATTERNS) < set(PATTERNS)


@pytest.mark.parametrize("grid", GRIDS + [(1, 2), (3, 3), (28, 28)])
def test_block_order_is_a_permutation(grid):
    order = block_order(grid, 5)
    assert sorted(order.tolist()) == list(range(grid[0] * grid[1]))


def test_block_mask_hides_a_prefix_of_its_order():
    grid = (14, 14)
    order = block_order(grid, 3)
    for ratio in (0.1, 0.4, 0.75, 0.95):
        m = nested_block_mask(grid, ratio, 3).flatten()
        k = num_hidden(196, ratio)
        assert int(m.sum()) == k
        assert bool(m[order[:k]].all())


def test_block_rectangles_grow_with_the_ratio():
    # A patch hidden at 40% by seed 0 is still hidden at 75%, and 75% adds patches next to blocks.
    lo, hi = nested_block_mask((14, 14), 0.4, 0), nested_block_mask((14, 14), 0.75, 0)
    assert _nested(lo, hi) and int(hi.sum()) > int(lo.sum())
