"""Class purity of codes (vitviz.beit.grouping) on hand-made token grids."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.beit.grouping import class_counts, grouping_summary, purity, shuffled_purity


def test_codes_that_follow_the_class_are_pure_and_mixed_codes_are_not():
    # four photos, two classes: code 0 only in class 0, code 1 only in class 1, code 2 everywhere
    ids = [np.array([[0, 0], [2, 2]]), np.array([[0, 2], [0, 2]]), np.array([[1, 1], [2, 2]]),
           np.array([[1, 2], [1, 2]])]
    labels = [0, 0, 1, 1]
    counts = class_counts(ids, labels, 3, 2)
    assert counts.tolist() == [[4, 0], [0, 4], [4, 4]]
    assert purity(counts) == pytest.approx((4 + 4 + 4) / 16)


def test_shuffled_labels_remove_the_grouping():
    rng = np.random.default_rng(0)
    labels = [i % 4 for i in range(40)]
    grouped = [np.full((3, 3), 10 * lab + rng.integers(0, 10)) for lab in labels]  # codes by class
    s = grouping_summary(grouped, labels, 40, 4)
    assert s["purity"] == pytest.approx(1.0)
    assert s["shuffled_purity"] < 0.8 and s["ratio"] > 1.2
    # codes that ignore the class: purity near the shuffled figure
    random_ids = [rng.integers(0, 40, (3, 3)) for _ in labels]
    r = grouping_summary(random_ids, labels, 40, 4)
    assert abs(r["purity"] - r["shuffled_purity"]) < 0.08
    assert shuffled_purity(grouped, labels, 40, 4, seeds=(0,)) == shuffled_purity(grouped, labels, 40, 4, seeds=(0,))
