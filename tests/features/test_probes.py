"""Ridge probes by depth: closed form, cross-validation, held-out scoring, control task."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.features.probes import (
    ProbeSplit,
    holdout_split,
    layer_probes,
    layer_probes_with_control,
    probe_layer,
    r2_score,
    r2_scores,
    ridge_path,
    shuffle_targets,
)
from vitviz.features.targets import patch_targets


def test_ridge_path_matches_the_normal_equations(rng):
    x = rng.normal(size=(30, 5)) * [1, 2, 3, 4, 5] + 7
    y = rng.normal(size=(30, 2))
    path = ridge_path(x, y, alphas=(0.1, 10.0))
    z = (x - x.mean(0)) / x.std(0)
    mean_eig = (np.linalg.svd(z, compute_uv=False) ** 2).sum() / 5
    for a, w in zip(path.alphas, path.weights):
        ref = np.linalg.solve(z.T @ z + a * mean_eig * np.eye(5), z.T @ (y - y.mean(0)))
        np.testing.assert_allclose(w, ref, atol=1e-10)


def test_r2_is_one_for_a_perfect_fit_and_zero_for_the_mean(rng):
    y = rng.normal(size=(20, 3))
    assert r2_score(y, y) == pytest.approx(1.0)
    assert r2_score(y, np.tile(y.mean(0), (20, 1))) == pytest.approx(0.0)
    assert np.isnan(r2_score(np.ones((5, 1)), np.zeros((5, 1))))
    # out of sample: predicting the fitting mean scores 0 against that baseline, whatever y's own mean
    base = y.mean(0) + 1.0
    assert r2_score(y, np.tile(base, (20, 1)), base) == pytest.approx(0.0)


def test_r2_of_many_predictions_at_once_equals_each_alone(rng):
    y = rng.normal(size=(40, 3))
    preds = y[None] + rng.normal(size=(6, 40, 3)) * np.linspace(0.1, 3.0, 6)[:, None, None]
    base = y.mean(0) + 0.2
    scores = r2_scores(y, preds, base)
    assert scores.shape == (6,)
    np.testing.assert_allclose(scores, [r2_score(y, p, base) for p in preds], rtol=1e-12)
    assert np.diff(scores).max() < 0  # more noise, lower R^2
    assert np.isnan(r2_scores(np.ones((5, 1)), np.zeros((2, 5, 1)))).all()


def test_split_refuses_overlap_and_states_itself():
    with pytest.raises(ValueError, match="differ"):
        ProbeSplit((0, 1), (1, 2))
    with pytest.raises(ValueError):
        holdout_split(1)
    s = holdout_split(6, names=[f"p{i}" for i in range(6)])
    assert set(s.fit).isdisjoint(s.score) and set(s.fit) | set(s.score) == set(range(6))
    assert "p5" in s.describe() and "fitted on 4 images" in s.describe()


def test_probes_are_scored_on_images_they_were_not_fitted_on(rng):
    """Tokens that identify each patch of each image (a lookup table) fit their own images
    perfectly but say nothing about another image: the held-out R^2 is low."""
    n_img, p, d = 4, 16, 200
    feats = [rng.normal(size=(1, p, d)) for _ in range(n_img)]
    targets = [{"t": rng.normal(size=(p, 1))} for _ in range(n_img)]
    split = holdout_split(n_img)
    table = layer_probes(feats, targets, split)
    assert set(table.split.fit).isdisjoint(table.split.score)
    assert table.fit_patches == p * len(split.fit) and table.score_patches == p * len(split.score)
    in_sample = ridge_path(np.concatenate([feats[i][0] for i in split.fit]),
                           np.concatenate([targets[i]["t"] for i in split.fit]), alphas=(1e-4,))
    fitted = in_sample.predict(np.concatenate([feats[i][0] for i in split.fit]))[0]
    assert r2_score(np.concatenate([targets[i]["t"] for i in split.fit]), fitted) > 0.99
    assert table.column("t")[0] < 0.2


def test_a_linear_target_is_found_on_held_out_images_and_lost_when_shuffled(rng):
    d, p = 12, 25
    w = rng.normal(size=(d, 1))
    feats, targets = [], []
    for _ in range(5):
        x = rng.normal(size=(2, p, d))
        x[1] = rng.normal(size=(p, d))  # layer 1: unrelated to the target
        feats.append(x)
        targets.append({"lin": x[0] @ w + 0.01 * rng.normal(size=(p, 1))})
    split = holdout_split(5)
    table = layer_probes(feats, targets, split, layers=["good", "noise"])
    assert table.column("lin")[0] > 0.95
    assert table.column("lin")[1] < 0.3
    control = layer_probes(feats, targets, split, shuffle_seed=0)
    assert control.shuffled and control.column("lin")[0] < 0.3
    assert "shuffled" in control.describe()
    assert [r["layer"] for r in table.rows()] == ["good", "noise"]


def test_one_fitting_image_cross_validates_over_patches(rng):
    x = rng.normal(size=(40, 4))
    feats = [x[:20], x[20:]]
    targets = [{"y": x[:20, :1] * 2.0}, {"y": x[20:, :1] * 2.0}]
    s = probe_layer(feats, targets, ProbeSplit((0,), (1,)))
    assert s.r2["y"] > 0.99 and s.cv_r2["y"].shape == (7,)


def test_shuffled_targets_are_a_permutation_of_the_pooled_rows(rng):
    t = [{"a": np.arange(10.0)[:, None]}, {"a": np.arange(10.0, 16.0)[:, None]}]
    s = shuffle_targets(t, seed=1)
    assert [len(x["a"]) for x in s] == [10, 6]
    assert sorted(np.concatenate([x["a"] for x in s]).ravel()) == list(np.arange(16.0))
    assert not all(np.array_equal(o["a"], n["a"]) for o, n in zip(t, s))
    assert all(np.array_equal(a["a"], b["a"]) for a, b in zip(s, shuffle_targets(t, seed=1)))


def test_patch_targets_by_hand():
    img = np.zeros((8, 12, 3), np.uint8)
    img[:4, :4] = (255, 0, 0)  # patch (0, 0) red
    img[4:, 8:, :] = np.arange(4, dtype=np.uint8)[None, :, None] * 60  # patch (1, 2): a horizontal ramp
    t = patch_targets(img, 4)
    assert t["row"].ravel().tolist() == [0, 0, 0, 1, 1, 1]
    assert t["column"].ravel().tolist() == [0, 0.5, 1, 0, 0.5, 1]
    np.testing.assert_allclose(t["colour"][0], [1, 0, 0])
    np.testing.assert_allclose(t["colour"][5], np.full(3, 90 / 255))
    assert t["edges"][4, 0] == pytest.approx(np.log(1e-3)) and t["edges"][5, 0] > t["edges"][4, 0]
    with pytest.raises(ValueError):
        patch_targets(img, 5)


def test_control_in_one_pass_equals_two_separate_runs(rng):
    feats = [rng.normal(size=(2, 20, 6)) for _ in range(4)]
    targets = [{"a": f[0, :, :1] * 2 + 0.1 * rng.normal(size=(20, 1)), "b": rng.normal(size=(20, 2))}
               for f in feats]
    split = holdout_split(4)
    table, control = layer_probes_with_control(feats, targets, split, shuffle_seed=3)
    np.testing.assert_allclose(table.r2, layer_probes(feats, targets, split).r2, atol=1e-10)
    np.testing.assert_allclose(control.r2, layer_probes(feats, targets, split, shuffle_seed=3).r2, atol=1e-10)
    assert control.shuffled and not table.shuffled and table.targets == ("a", "b")


def test_fits_on_the_same_tokens_reuse_one_decomposition_and_give_the_same_numbers(rng):
    """The token side of a fit (standardisation and eigendecomposition) is kept by content: a second fit on the
    same fitting tokens with other targets (a new photo's shuffled control) equals a fit computed from scratch."""
    from vitviz.features import probes

    x = rng.normal(size=(3, 40, 6))
    first = [{"t": rng.normal(size=(40, 2))} for _ in range(3)]
    second = [{"t": rng.normal(size=(40, 2))} for _ in range(3)]
    split = ProbeSplit((0, 1), (2,))
    probes._DESIGNS.clear()
    cold = probe_layer(list(x), second, split)
    probe_layer(list(x), first, split)  # fills the cache with these tokens' decompositions
    held = len(probes._DESIGNS)
    warm = probe_layer(list(x), second, split)
    assert held == 3 and len(probes._DESIGNS) == held  # two folds and the full fit, found again
    assert warm.r2 == cold.r2 and warm.alpha == cold.alpha
    assert all(np.array_equal(warm.cv_r2[t], cold.cv_r2[t]) for t in cold.cv_r2)
    assert not next(iter(probes._DESIGNS._data.values()))[3].flags.writeable  # shared: read-only
