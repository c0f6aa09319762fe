"""BEiT blockwise masks: exact share, rectangles of at least 16 patches, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.beit.masking import MIN_PATCHES, block_mask, covered_by_rectangles, random_patch_mask


@pytest.mark.parametrize("ratio", [0.2, 0.4, 0.5, 0.75])
def test_block_mask_hides_requested_share_in_rectangles(ratio: float) -> None:
    for seed in range(25):
        m = block_mask((14, 14), ratio, np.random.default_rng(seed))
        assert m.shape == (14, 14) and m.dtype == bool
        assert int(m.sum()) == round(ratio * 196)
        assert covered_by_rectangles(m, MIN_PATCHES)


def test_covered_by_rectangles_rejects_a_lone_patch() -> None:
    m = block_mask((14, 14), 0.4, np.random.default_rng(0))
    lone = m.copy()
    free = np.argwhere(~m)
    # a hidden patch with no hidden neighbours cannot lie in a 16-patch rectangle
    for y, x in free:
        nb = m[max(0, y - 1) : y + 2, max(0, x - 1) : x + 2]
        if not nb.any():
            lone[y, x] = True
            break
    assert not covered_by_rectangles(lone)


def test_block_masks_are_deterministic_per_seed_and_vary_across_seeds() -> None:
    a = block_mask((14, 14), 0.4, np.random.default_rng(3))
    b = block_mask((14, 14), 0.4, np.random.default_rng(3))
    c = block_mask((14, 14), 0.4, np.random.default_rng(4))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_invalid_ratios_raise() -> None:
    with pytest.raises(ValueError):
        block_mask((14, 14), 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="at least 16"):
        block_mask((14, 14), 0.05, np.random.default_rng(0))
    assert not block_mask((14, 14), 0.0, np.random.default_rng(0)).any()


def test_random_patch_mask_count() -> None:
    m = random_patch_mask((14, 14), 0.4, np.random.default_rng(0))
    assert int(m.sum()) == round(0.4 * 196)
