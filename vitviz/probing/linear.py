"""Linear probes on frozen features: accuracy against the number of labelled photos per class.

The protocol of linear evaluation (ViT, Dosovitskiy et al. 2021 §4.2 and fig. 3-4 use
few-shot linear classifiers on frozen features; MAE, He et al. 2021 §4.1 and fig. 9; DINOv2,
Oquab et al. 2023 §7 linear evaluation): the encoder is frozen, and only a linear
classifier  is fitted on its features of a few labelled photos.

For ``k`` labels per class and a seed, ``k`` train photos of every class are drawn
(``np.random.default_rng(seed)``; a class with fewer train photos gives all it has);
a linear classifier is fitted on their features by regularised least squares to
{-1, 1} target vectors, in closed form (ViT's few-shot protocol, Dosovitskiy et al. 2021
§4.1 "Metrics"; channels standardised with the statistics of *every* train photo, labels
unused, as a BatchNorm without affine parameters would) and scored on the test photos. Nothing here is chosen on the test photos: :data:`L2` was fixed on the
validation split (see ``assets/labelled/README.md``).

Shapes: ``n`` fitting photos, ``D`` channels, ``C`` classes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .features import POOLINGS, FeatureSet

#: Labels per class of the standard curve ("all" = every train photo).
LABELS_PER_CLASS: tuple[int | str, ...] = (1, 2, 5, 10, "all")
SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)
#: Ridge penalty, relative to the feature width (:func:`fit_ridge`), on standardised features.
L2 = 0.1


def fit_ridge(x: np.ndarray, y: np.ndarray, num_classes: int, l2: float = L2) -> tuple[np.ndarray, np.ndarray]:
    """Regularised least squares from features to {-1, 1} targets (ViT's few-shot linear probe), closed form.

    Solved in the dual (``n`` is small): ``W = Xc^T (Xc Xc^T + lam n I)^-1 Yc`` with centred
    ``Xc``, ``Yc``; ``lam = l2 * D`` so the penalty is relative to the feature width.

    Args:
        x: ``(n, D)`` standardised features. y: ``(n,)`` int labels in ``0..C-1``.

    Returns:
        ``(W (D, C), b (C,))`` float64; the prediction is ``argmax(x @ W + b)``.
    """
    x = np.asarray(x, np.float64)
    t = -np.ones((len(y), num_classes))
    t[np.arange(len(y)), np.asarray(y, np.int64)] = 1.0
    xm, tm = x.mean(axis=0), t.mean(axis=0)
    xc, tc = x - xm, t - tm
    n, d = xc.shape
    gram = xc @ xc.T + float(l2) * d * n * np.eye(n) / max(n, 1)
    w = xc.T @ np.linalg.solve(gram, tc)
    return w, tm - xm @ w


def standardiser(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mean (D,), std (D,))`` of ``(n, D)`` features (std floored, so constant channels stay 0)."""
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    return mean, np.where(std > 1e-6 * max(1.0, float(std.max(initial=0.0))), std, np.inf)


def draw(labels: np.ndarray, pool: np.ndarray, k: int | str, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``k`` photos per class among ``pool`` (``"all"``: every one), sorted.

    Args:
        labels: ``(N,)`` class of every photo. pool: indices allowed (the train photos).
    """
    if k == "all":
        return np.sort(pool)
    k = int(k)
    if k < 1:
        raise ValueError(f"labels per class must be at least 1 or 'all', got {k}")
    out = []
    for c in np.unique(labels[pool]):
        mine = pool[labels[pool] == c]
        out.append(rng.choice(mine, size=min(k, len(mine)), replace=False))
    return np.sort(np.concatenate(out))


def check_k(values: Sequence[int | str]) -> tuple[int | str, ...]:
    """Validate labels-per-class values (positive whole numbers or ``"all"``)."""
    out: list[int | str] = []
    for v in values:
        if isinstance(v, str) and v.strip().lower() == "all":
            out.append("all")
            continue
        try:
            iv = int(v)
        except (TypeError, ValueError):
            raise ValueError(f"labels per class must be whole numbers or 'all', got {v!r}") from None
        if iv < 1 or iv != float(v):
            raise ValueError(f"labels per class must be whole numbers of at least 1 or 'all', got {v!r}")
        out.append(iv)
    if not out:
        raise ValueError("give at least one labels-per-class value")
    return tuple(out)


@dataclass(frozen=True)
class ProbeCurve:
    """Test accuracy of linear probes by labels per class and seed, for one encoder, layer and pooling.

    Attributes:
        key: the encoder (``mae-tiny``, ``mae-tiny-random``...). layer: the layer probed
            (0 = embedding, depth = last block). pooling: ``cls`` or ``avg``.
        labels_per_class: the ``k`` values. seeds: the seeds.
        accuracy: ``(len(k), len(seeds))`` test accuracy in [0, 1].
        val_accuracy: the same on the validation photos.
        n_fit: ``(len(k), len(seeds))`` photos each probe was fitted on.
        chance: 1 / number of classes. n_test: test photos.
    """

    key: str
    layer: int
    pooling: str
    labels_per_class: tuple[int | str, ...]
    seeds: tuple[int, ...]
    accuracy: np.ndarray
    val_accuracy: np.ndarray
    n_fit: np.ndarray
    chance: float
    n_test: int

    def mean(self) -> np.ndarray:
        """``(len(k),)`` mean test accuracy over seeds."""
        return self.accuracy.mean(axis=1)

    def spread(self) -> np.ndarray:
        """``(len(k),)`` standard deviation over seeds (0 for one seed)."""
        return self.accuracy.std(axis=1)

    def at(self, k: int | str) -> tuple[float, float]:
        """``(mean, spread)`` of the test accuracy at ``k`` labels per class."""
        i = self.labels_per_class.index(k)
        return float(self.mean()[i]), float(self.spread()[i])

    def to_dict(self) -> dict:
        """Plain data for the API and the page."""
        return {"encoder": self.key, "layer": self.layer, "pooling": self.pooling,
                "labels_per_class": list(self.labels_per_class), "seeds": list(self.seeds),
                "test_accuracy": self.accuracy.round(6).tolist(), "val_accuracy": self.val_accuracy.round(6).tolist(),
                "mean": self.mean().round(6).tolist(), "spread": self.spread().round(6).tolist(),
                "n_fit": self.n_fit.tolist(), "chance": self.chance, "n_test": self.n_test}


def probe_curve(fs: FeatureSet, layer: int = -1, pooling: str = "cls",
                labels_per_class: Sequence[int | str] = LABELS_PER_CLASS, seeds: Sequence[int] = SEEDS,
                l2: float = L2, progress: Callable[[int, int], None] | None = None,
                labels: np.ndarray | None = None) -> ProbeCurve:
    """Fit and score every probe of a curve from cached features (the encoder is not run).

    Args:
        fs: the encoder's features (:func:`vitviz.probing.features.find_features`).
        layer: layer index, ``-1`` = last block. pooling: ``cls`` or ``avg``.
        labels: optional ``(N,)`` labels replacing the true ones (tests: shuffled labels).
        progress: optional ``callable(done, total)`` after each probe.
    """
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
    ks = check_k(labels_per_class)
    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise ValueError("give at least one seed")
    x = fs.vectors(layer, pooling).astype(np.float64)
    y = fs.labels if labels is None else np.asarray(labels, np.int64)
    train = np.flatnonzero(fs.split == "train")
    val, test = np.flatnonzero(fs.split == "val"), np.flatnonzero(fs.split == "test")
    mean, std = standardiser(x[train])
    z = (x - mean) / std
    c = len(fs.classes)
    acc = np.zeros((len(ks), len(seeds)))
    vacc = np.zeros_like(acc)
    n_fit = np.zeros(acc.shape, np.int64)
    done = 0
    for i, k in enumerate(ks):
        for j, seed in enumerate(seeds):
            if k == "all" and j > 0:  # every seed draws the same photos: one fit
                acc[i, j], vacc[i, j], n_fit[i, j] = acc[i, 0], vacc[i, 0], n_fit[i, 0]
            else:
                idx = draw(y, train, k, np.random.default_rng(seed))
                w, b = fit_ridge(z[idx], y[idx], c, l2)
                acc[i, j] = float(((z[test] @ w + b).argmax(1) == y[test]).mean())
                vacc[i, j] = float(((z[val] @ w + b).argmax(1) == y[val]).mean())
                n_fit[i, j] = len(idx)
            done += 1
            if progress is not None:
                progress(done, len(ks) * len(seeds))
    layer_index = fs.layers[fs.check_layer(layer)]
    return ProbeCurve(fs.key, layer_index, pooling, ks, seeds, acc, vacc, n_fit, 1.0 / c, len(test))
