"""Definitions of the held-out measures (vitviz.training.measures) on synthetic inputs."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.training.measures import mosaic_factor, most_local_head


def _smooth(size: int = 64) -> np.ndarray:
    """A smooth ramp with no structure tied to the patch grid: (size, size, 3)."""
    y, x = np.mgrid[0:size, 0:size].astype(np.float64)
    return np.stack([x * 2.0, y * 3.0, (x + y) * 1.5], axis=-1)


def test_a_smooth_image_scores_one() -> None:
    hidden = np.zeros((4, 4), dtype=bool)
    hidden[1:3, 1:3] = True
    assert mosaic_factor(_smooth(), hidden, 16) == pytest.approx(1.0)


def test_flat_tiles_score_infinite_and_tiles_with_slopes_score_the_hand_ratio() -> None:
    hidden = np.ones((2, 2), dtype=bool)
    tiles = np.kron(np.array([[0.0, 10.0], [20.0, 30.0]]), np.ones((4, 4)))
    assert mosaic_factor(tiles, hidden, 4) == float("inf")
    # Add a slope of 1 per pixel along x inside every tile: inside pairs differ by 1 (x) or 0 (y).
    ramp = tiles + np.tile(np.arange(4.0), (8, 2))
    # Horizontal pairs: per row 6 inside (|1|) and 1 border (|10 - 3| = 7); vertical: 8*3 inside (0)
    # per column pair... computed by hand over the 8x8 image:
    h_inside, h_border = 8 * 6 * 1.0, 8 * 1 * 7.0
    v_inside, v_border = 0.0, 8 * 1 * 20.0
    expected = ((h_border + v_border) / (8 + 8)) / ((h_inside + v_inside) / (8 * 6 + 8 * 6))
    assert mosaic_factor(ramp, hidden, 4) == pytest.approx(expected)


def test_only_pairs_touching_hidden_patches_count() -> None:
    hidden = np.zeros((2, 2), dtype=bool)
    hidden[0, 0] = True
    img = _smooth(8)
    img[4:, 4:] += 100.0  # a jump around the visible bottom-right patch only
    assert mosaic_factor(img, hidden, 4) == pytest.approx(1.0)
    assert np.isnan(mosaic_factor(img, np.zeros((2, 2), dtype=bool), 4))


def test_mosaic_factor_rejects_a_size_mismatch() -> None:
    with pytest.raises(ValueError, match="does not match"):
        mosaic_factor(np.zeros((10, 10, 3)), np.ones((2, 2), dtype=bool), 4)


def test_most_local_head_is_the_minimum_of_the_first_layers_over_uniform() -> None:
    dist = np.array([[90.0, 60.0, 100.0], [80.0, 95.0, 50.0], [10.0, 10.0, 10.0]])
    assert most_local_head(dist, 100.0) == pytest.approx(0.5)
    assert most_local_head(dist, 100.0, layers=(0,)) == pytest.approx(0.6)
    with pytest.raises(ValueError, match="out of range"):
        most_local_head(dist, 100.0, layers=(3,))
