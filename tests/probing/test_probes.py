"""Linear probes: exact labels are read perfectly, shuffled labels give chance, curves come from cached features."""

from __future__ import annotations

import numpy as np
import pytest

import vitviz
from vitviz.errors import ModelUnavailable
from vitviz.probing import features as feats
from vitviz.probing.features import FeatureSet, load, quantise, save
from vitviz.probing.linear import check_k, draw, probe_curve


def _set(x: np.ndarray, labels: np.ndarray, split: np.ndarray) -> FeatureSet:
    """A one-layer feature set holding ``x`` (N, D) as both poolings."""
    f = np.stack([x, x])[None].astype(np.float32)  # (1, 2, N, D)
    classes = tuple(f"c{i}" for i in range(int(labels.max()) + 1))
    return FeatureSet("fake", False, (1,), 1, f, labels, split, tuple(f"p{i}" for i in range(len(labels))), classes, "d")


def _labels(rng: np.random.Generator, n_class: int = 8, per: int = 24) -> tuple[np.ndarray, np.ndarray]:
    labels = np.repeat(np.arange(n_class), per)
    split = np.array((["test"] * 8 + ["val"] * 4 + ["train"] * (per - 12)) * n_class)
    return labels, split


def test_features_that_carry_the_label_exactly_reach_100_percent():
    rng = np.random.default_rng(0)
    labels, split = _labels(rng)
    x = np.concatenate([np.eye(8)[labels], np.ones((len(labels), 2))], axis=1)  # the label, and constant channels
    curve = probe_curve(_set(x, labels, split), layer=-1, pooling="cls", labels_per_class=(1, 5, "all"), seeds=(0, 1, 2))
    assert np.all(curve.accuracy == 1.0)
    assert curve.chance == 1 / 8 and curve.n_test == 64


def test_shuffled_labels_stay_near_chance():
    rng = np.random.default_rng(1)
    labels, split = _labels(rng)
    x = np.eye(8)[labels] + 0.1 * rng.normal(size=(len(labels), 8))
    shuffled = rng.permutation(labels)
    curve = probe_curve(_set(x, labels, split), labels_per_class=(5, "all"), seeds=tuple(range(10)), labels=shuffled)
    assert abs(float(curve.accuracy.mean()) - 1 / 8) < 0.07


def test_draw_takes_k_per_class_from_the_pool_only():
    labels = np.repeat(np.arange(3), 10)
    pool = np.arange(30)[np.arange(30) % 10 >= 4]
    idx = draw(labels, pool, 2, np.random.default_rng(0))
    assert len(idx) == 6 and set(idx) <= set(pool) and np.all(np.bincount(labels[idx]) == 2)
    assert len(draw(labels, pool, 50, np.random.default_rng(0))) == len(pool)
    with pytest.raises(ValueError, match="whole numbers"):
        check_k(["x"])


def test_quantised_file_round_trip_is_close(tmp_path):
    rng = np.random.default_rng(2)
    labels, split = _labels(rng)
    x = rng.normal(size=(len(labels), 16)).astype(np.float32)
    fs = _set(x, labels, split)
    save(fs, tmp_path / "fake.npz")
    back = load(tmp_path / "fake.npz")
    q, scale, _ = quantise(fs.features)
    assert np.abs(back.features - fs.features).max() <= scale.max() * 0.51
    assert back.ids == fs.ids and np.array_equal(back.labels, labels) and list(back.split) == list(split)


def test_shipped_curve_comes_from_cached_features_without_running_the_encoder(monkeypatch):
    def no_encoder(*_a, **_k):
        raise AssertionError("the encoder ran")

    monkeypatch.setattr(vitviz.models.loading, "load_model", no_encoder)
    monkeypatch.setattr(feats, "extract", no_encoder)
    manifest = feats.load_manifest()
    for key in ("mae-tiny", "beit-tiny"):
        for random_init in (False, True):
            fs = feats.find_features(key, random_init)
            assert fs is not None and fs.digest == feats.manifest_digest(manifest)
            assert fs.ids == tuple(p["id"] for p in manifest["photos"])
    curve = vitviz.linear_probe("mae-tiny", layer=-1, pooling="avg", labels_per_class=(1, 5, "all"), seeds=(0, 1))
    assert curve.accuracy.shape == (3, 2) and np.all((curve.accuracy >= 0) & (curve.accuracy <= 1))
    assert curve.n_fit[0].tolist() == [8, 8] and curve.layer == 8


def test_missing_features_and_bad_layers_say_what_exists():
    with pytest.raises(ModelUnavailable, match="probe-features"):
        vitviz.linear_probe("vit-base")
    with pytest.raises(ValueError, match="layers"):
        vitviz.linear_probe("mae-tiny", layer=40)
    with pytest.raises(ValueError, match="pooling"):
        vitviz.linear_probe("mae-tiny", pooling="max")
