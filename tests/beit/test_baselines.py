"""Token and pixel baselines: nearest visible code, most frequent code, k-means round trip."""

from __future__ import annotations

import numpy as np
import torch

from vitviz.beit.baselines import (kmeans_codebook, kmeans_roundtrip, most_frequent_prediction,
                                   nearest_visible_prediction, patch_rows)


def test_nearest_visible_copies_the_closest_visible_code() -> None:
    ids = torch.arange(16).view(4, 4)
    mask = torch.zeros(4, 4, dtype=torch.bool)
    mask[1:3, 1:3] = True
    pred = nearest_visible_prediction(ids, mask)
    assert torch.equal(pred[~mask], ids[~mask])
    assert int(pred[1, 1]) == int(ids[0, 1])  # distance 1 up and left; first in row-major order wins
    assert int(pred[2, 2]) == int(ids[2, 3])  # (2, 3) precedes (3, 2) in row-major order
    for y, x in [(1, 1), (1, 2), (2, 1), (2, 2)]:
        src = int(pred[y, x])
        sy, sx = divmod(src, 4)
        assert not bool(mask[sy, sx]) and (sy - y) ** 2 + (sx - x) ** 2 == 1


def test_most_frequent_fills_one_code() -> None:
    out = most_frequent_prediction(torch.zeros(3, 5, dtype=torch.bool), 7)
    assert out.shape == (3, 5) and bool((out == 7).all()) and out.dtype == torch.int64


def test_kmeans_round_trip_is_exact_when_every_patch_is_a_centroid() -> None:
    g = torch.Generator().manual_seed(0)
    img = torch.rand(3, 32, 32, generator=g)
    rows = patch_rows(img, 16)
    assert rows.shape == (4, 768)
    cent = kmeans_codebook(rows, 4, 3, g)
    assert torch.allclose(kmeans_roundtrip(img, cent, 16), img, atol=1e-6)


def test_kmeans_lowers_error_against_a_single_centroid() -> None:
    g = torch.Generator().manual_seed(1)
    rows = torch.cat([torch.rand(50, 12, generator=g) * 0.1, 0.9 + torch.rand(50, 12, generator=g) * 0.1])
    one = kmeans_codebook(rows, 1, 5, g)
    two = kmeans_codebook(rows, 2, 5, g)
    err = lambda c: float((rows[:, None] - c[None]).pow(2).sum(-1).min(1).values.mean())  # noqa: E731
    assert err(two) < 0.1 * err(one)
    assert np.isfinite(err(two))
