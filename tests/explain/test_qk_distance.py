"""How well 2-D nearness tracks the logit in the query-key picture (issue 33, item 8)."""

from __future__ import annotations

import numpy as np

from vitviz.explain.qk import QueryKeySpace


def _space(q: np.ndarray, k: np.ndarray, qxy: np.ndarray, kxy: np.ndarray) -> QueryKeySpace:
    return QueryKeySpace("m", 0, 0, q.astype(np.float32), k.astype(np.float32), 1.0, qxy, kxy,
                         np.array([0.5, 0.5]), None, np.zeros((1, 1, 3), np.uint8))  # type: ignore[arg-type]


def test_equal_norms_drawn_faithfully_correlate_and_a_flipped_picture_anticorrelates() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 2 * np.pi, 20), rng.uniform(0, 2 * np.pi, 20)
    q, k = np.c_[np.cos(a), np.sin(a)], np.c_[np.cos(b), np.sin(b)]  # unit vectors: |q-k|^2 = 2 - 2 q.k
    assert _space(q, k, q, k).distance_logit_correlation() > 0.95
    assert _space(q, k, q, -k).distance_logit_correlation() < -0.95


def test_unequal_key_norms_break_the_proxy() -> None:
    rng = np.random.default_rng(1)
    q = rng.normal(size=(30, 2))
    k = rng.normal(size=(30, 2)) * rng.uniform(0.1, 10.0, (30, 1))  # very different lengths
    faithful = _space(q, k / np.linalg.norm(k, axis=1, keepdims=True), q, k / np.linalg.norm(k, axis=1, keepdims=True))
    assert _space(q, k, q, k).distance_logit_correlation() < faithful.distance_logit_correlation()
