"""Joint PCA feature maps: colours, order invariance, sign convention, foreground split."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.features.pca import fit_pca, foreground_mask, foreground_pca_maps, joint_pca_maps, sign_fix


def _halves(rng: np.random.Generator, gh: int = 6, gw: int = 6, d: int = 16, noise: float = 0.05) -> np.ndarray:
    """``(gh, gw, d)`` tokens: one direction on the left half, another on the right, plus noise."""
    a, b = rng.normal(size=d), rng.normal(size=d)
    grid = np.empty((gh, gw, d))
    grid[:, : gw // 2] = a
    grid[:, gw // 2:] = b
    return grid + noise * rng.normal(size=grid.shape)


def test_left_and_right_halves_get_two_distinct_colours(rng):
    maps = joint_pca_maps([_halves(rng)])
    rgb = maps.rgb[0]
    left, right = rgb[:, :3].reshape(-1, 3), rgb[:, 3:].reshape(-1, 3)
    cl, cr = left.mean(0), right.mean(0)
    assert np.linalg.norm(cl - cr) > 0.5  # on a [0, 1] colour cube
    # every patch is nearer its own half's colour than the other half's
    assert (np.linalg.norm(left - cl, axis=1) < np.linalg.norm(left - cr, axis=1)).all()
    assert (np.linalg.norm(right - cr, axis=1) < np.linalg.norm(right - cl, axis=1)).all()
    # the first component (red) alone separates the halves
    assert left[:, 0].max() < right[:, 0].min() or right[:, 0].max() < left[:, 0].min()
    assert ((rgb >= 0) & (rgb <= 1)).all()


def test_joint_pca_is_invariant_to_image_order(rng):
    grids = [rng.normal(size=(4, 5, 12)) + i for i in range(4)]
    a = joint_pca_maps(grids)
    perm = [2, 0, 3, 1]
    b = joint_pca_maps([grids[i] for i in perm])
    np.testing.assert_allclose(a.basis.components, b.basis.components, atol=1e-9)
    for j, i in enumerate(perm):
        np.testing.assert_allclose(b.rgb[j], a.rgb[i], atol=1e-9)
        np.testing.assert_allclose(b.pc1[j], a.pc1[i], atol=1e-9)


def test_components_are_orthonormal_and_sign_fixed(rng):
    basis = fit_pca([rng.normal(size=(50, 8)) * np.arange(1, 9)], k=3)
    c = basis.components
    np.testing.assert_allclose(c @ c.T, np.eye(3), atol=1e-10)
    big = np.argmax(np.abs(c), axis=1)
    assert (c[np.arange(3), big] > 0).all()
    assert (np.diff(basis.variance) <= 0).all()
    np.testing.assert_allclose(sign_fix(-c), c)


def test_pca_is_deterministic_and_flipped_tokens_keep_their_colours(rng):
    x = rng.normal(size=(40, 6))
    a, b = fit_pca([x]), fit_pca([x.copy()])
    np.testing.assert_array_equal(a.components, b.components)
    assert np.array_equal(a.to_rgb(x), b.to_rgb(x))


def test_rank_deficient_tokens_give_zero_components_and_grey(rng):
    basis = fit_pca([np.tile(rng.normal(size=5), (10, 1))])
    assert not basis.components.any()
    np.testing.assert_allclose(basis.to_rgb(np.zeros(5)), 0.5)


def test_bad_inputs_raise():
    with pytest.raises(ValueError):
        fit_pca([])
    with pytest.raises(ValueError):
        fit_pca([np.zeros((3, 4)), np.zeros((3, 5))])
    with pytest.raises(ValueError):
        fit_pca([np.full((3, 4), np.nan)])


def test_foreground_is_the_side_away_from_the_border():
    pc1 = np.full((8, 8), 1.0)
    pc1[2:6, 2:6] = -1.0  # the blob sits below the threshold
    fg = foreground_mask(pc1)
    assert fg[2:6, 2:6].all() and fg.sum() == 16
    assert np.array_equal(foreground_mask(-pc1), fg)


def test_foreground_maps_colour_the_subject_and_blacken_the_rest(rng):
    grids = []
    for _ in range(2):
        g = rng.normal(size=(8, 8, 12)) * 0.05 + 1.0
        g[2:6, 2:6] += rng.normal(size=(4, 4, 12)) * 0.3 + 4.0  # a distinct subject in the middle
        grids.append(g)
    maps, masks = foreground_pca_maps(grids)
    for rgb, m in zip(maps.rgb, masks):
        assert m[2:6, 2:6].all() and m.sum() == 16
        assert not rgb[~m].any()
        assert rgb[m].max() > 0
