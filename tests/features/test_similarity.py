"""Patch correspondence: cosine maps and best matches."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.features.similarity import best_match, correspondence, cosine_similarity


def test_a_patch_is_fully_similar_to_itself_and_maps_stay_in_range(rng):
    a = rng.normal(size=(5, 6, 10))
    b = rng.normal(size=(4, 4, 10))
    c = correspondence(a, 2, 3, b)
    assert c.same[2, 3] == pytest.approx(1.0, abs=1e-12)
    assert c.same.shape == (5, 6) and c.other.shape == (4, 4)
    for m in (c.same, c.other):
        assert (m >= -1).all() and (m <= 1).all()
    assert c.best_score == pytest.approx(c.other.max())


def test_best_match_finds_a_planted_copy(rng):
    a = rng.normal(size=(4, 4, 32))
    b = rng.normal(size=(3, 5, 32))
    b[1, 4] = 3.0 * a[0, 2]  # same direction, another length
    c = correspondence(a, 0, 2, b, center=False)
    assert c.best == (1, 4)
    assert c.best_score == pytest.approx(1.0)


def test_cosine_of_opposite_and_zero_vectors():
    q = np.array([1.0, 2.0, 0.0])
    s = cosine_similarity(q, np.stack([-q, np.zeros(3), q]))
    np.testing.assert_allclose(s, [-1.0, 0.0, 1.0])


def test_outside_patch_and_mismatched_widths_raise(rng):
    a = rng.normal(size=(2, 2, 3))
    with pytest.raises(ValueError, match="outside"):
        correspondence(a, 2, 0, a)
    with pytest.raises(ValueError):
        correspondence(a, 0, 0, rng.normal(size=(2, 2, 4)))
    with pytest.raises(ValueError):
        best_match(np.full((2, 2), np.nan))


def test_centring_removes_a_shared_direction(rng):
    shared = 50.0 * rng.normal(size=16)
    a = rng.normal(size=(4, 4, 16)) + shared
    b = rng.normal(size=(4, 4, 16)) + shared
    raw = correspondence(a, 1, 1, b, center=False)
    centred = correspondence(a, 1, 1, b)
    assert raw.other.min() > 0.9  # everything looks alike
    assert centred.other.min() < 0.5 and centred.same[1, 1] == pytest.approx(1.0)
