import math

import pytest
import torch

from vitviz.core.masking import PATTERNS, nested_block_mask, grid_mask, make_mask, mask_to_ids, num_hidden, random_mask

GRID = (14, 14)
RATIOS = [round(0.05 * i, 2) for i in range(20)]  # 0.0 .. 0.95


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("ratio", [0.0, 0.1, 0.5, 0.75, 0.9, 0.95])
def test_exact_hidden_count(pattern, ratio):
    m = make_mask(GRID, ratio, seed=3, pattern=pattern)
    assert m.shape == GRID and m.dtype == torch.bool
    assert int(m.sum()) == num_hidden(196, ratio) == min(round(ratio * 196), 195)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_deterministic_per_seed(pattern):
    a = make_mask(GRID, 0.6, seed=11, pattern=pattern)
    b = make_mask(GRID, 0.6, seed=11, pattern=pattern)
    assert torch.equal(a, b)


@pytest.mark.parametrize("pattern", ["random", "block"])
def test_seeds_differ(pattern):
    assert not torch.equal(make_mask(GRID, 0.6, 1, pattern), make_mask(GRID, 0.6, 2, pattern))


@pytest.mark.parametrize("seed", [0, 1, 123456])
def test_random_masks_nest_across_ratios(seed):
    masks = [random_mask(GRID, r, seed) for r in RATIOS]
    for lo, hi in zip(masks, masks[1:]):
        # every patch visible at the higher ratio is visible at the lower ratio
        assert not bool((lo & ~hi).any())
    assert int(masks[0].sum()) == 0


def test_random_mask_does_not_touch_global_rng():
    torch.manual_seed(5)
    before = torch.rand(3)
    torch.manual_seed(5)
    random_mask(GRID, 0.75, 0)
    assert torch.equal(torch.rand(3), before)


def test_block_mask_is_blocky():
    # Blocks: most hidden patches have a hidden 4-neighbour (random masks at 40% have far fewer).
    def clustered(m):
        nb = torch.zeros_like(m)
        nb[1:] |= m[:-1]
        nb[:-1] |= m[1:]
        nb[:, 1:] |= m[:, :-1]
        nb[:, :-1] |= m[:, 1:]
        return float((m & nb).sum() / m.sum())

    blocks = [clustered(nested_block_mask(GRID, 0.4, s)) for s in range(10)]
    randoms = [clustered(random_mask(GRID, 0.4, s)) for s in range(10)]
    assert min(blocks) > 0.9
    assert sum(blocks) / 10 > sum(randoms) / 10 + 0.1


def test_grid_mask_at_75_percent_is_the_2x2_lattice():
    m = grid_mask(GRID, 0.75)
    expected = torch.ones(GRID, dtype=torch.bool)
    expected[::2, ::2] = False
    assert torch.equal(m, expected)


@pytest.mark.parametrize("ratio", [0.5, 0.8, 0.9])
def test_grid_mask_is_regular(ratio):
    m = grid_mask(GRID, ratio).flatten()
    kept = (~m).nonzero().flatten().tolist()
    gaps = {b - a for a, b in zip(kept, kept[1:])}
    assert max(gaps) - min(gaps) <= 1  # evenly spaced in raster order


@pytest.mark.parametrize("bad", [-0.1, 0.96, 1.0, math.nan, math.inf, "x", None])
def test_bad_ratio(bad):
    with pytest.raises(ValueError, match="mask ratio"):
        make_mask(GRID, bad, 0, "random")


@pytest.mark.parametrize("bad", [-1, 2**63, 1.5, "3", True])
def test_bad_seed(bad):
    with pytest.raises(ValueError, match="seed"):
        make_mask(GRID, 0.5, bad, "random")


def test_unknown_pattern_lists_choices():
    with pytest.raises(ValueError, match="random, block, grid"):
        make_mask(GRID, 0.5, 0, "checkerboard")


def test_mask_to_ids():
    m = torch.tensor([[True, False], [False, True]])
    assert mask_to_ids(m).tolist() == [1, 2]
    batch = torch.stack([m, ~m])
    assert mask_to_ids(batch).tolist() == [[1, 2], [0, 3]]
