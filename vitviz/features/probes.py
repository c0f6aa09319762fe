"""Linear probes by depth: closed-form ridge regression from patch tokens to label-free targets.

For every layer, a ridge probe maps each patch token to targets that need no labels
(:mod:`vitviz.features.targets`). The probe is fitted on the patches of some images
and scored, as out-of-sample R^2, on the patches of *other* images (:class:`ProbeSplit`),
so a probe that memorises its fitting images scores nothing. The R^2 baseline is the
fitting patches' mean (:func:`r2_score`): 0 = no better than that average. The ridge strength is chosen
per layer and target by cross-validation on the fitting images only: leave one
fitting image out when there are two or more, otherwise interleaved folds of patches.

Ridge, with tokens standardised on the fitting patches (mean 0, variance 1 per
channel) and targets centred::

    W(lam) = (X^T X + lam I)^-1 X^T Y = V diag(s / (s^2 + lam)) U^T Y      (X = U S V^T)

``lam = alpha * mean(s^2)``: ``alpha`` is relative to the mean eigenvalue of
``X^T X``, so one grid serves every layer and width. Fits work from sums over rows
(:class:`Moments`), so every cross-validation fold costs one ``D x D``
eigendecomposition and no pass over the data.

Shapes: ``n`` images, ``L`` layers, ``P_i`` patches of image ``i``, ``D`` channels,
``k`` target columns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..cache import LRU
from ..models.runner import pause_point

#: Ridge strengths tried by cross-validation, relative to the mean eigenvalue of X^T X.
DEFAULT_ALPHAS: tuple[float, ...] = tuple(float(a) for a in 10.0 ** np.arange(-4, 3))
#: Interleaved patch folds used when there is only one fitting image.
PATCH_FOLDS = 5


@dataclass(frozen=True)
class ProbeSplit:
    """Which images fit the probes and which score them (disjoint, both non-empty).

    Attributes:
        fit: indices of the fitting images.
        score: indices of the scoring (held-out) images.
        names: optional readable name of every image, by index.
    """

    fit: tuple[int, ...]
    score: tuple[int, ...]
    names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.fit or not self.score:
            raise ValueError(f"a probe split needs fitting and scoring images, got fit={self.fit} score={self.score}")
        both = sorted(set(self.fit) & set(self.score))
        if both:
            raise ValueError(f"fitting and scoring images must differ; both hold {both}")
        if len(set(self.fit)) != len(self.fit) or len(set(self.score)) != len(self.score):
            raise ValueError("an image is listed twice in the probe split")

    def _name(self, i: int) -> str:
        return self.names[i] if i < len(self.names) else f"image {i}"

    def describe(self) -> str:
        """One sentence stating the split."""
        fit = ", ".join(self._name(i) for i in self.fit)
        score = ", ".join(self._name(i) for i in self.score)
        return (f"fitted on {len(self.fit)} image{'s' * (len(self.fit) != 1)} ({fit}); "
                f"R^2 on {len(self.score)} other image{'s' * (len(self.score) != 1)} ({score})")


def holdout_split(n_images: int, score: Sequence[int] | None = None, names: Sequence[str] = ()) -> ProbeSplit:
    """Score on ``score`` (default: the last third of the images, at least one), fit on the rest.

    Raises:
        ValueError: fewer than two images, or indices outside ``0..n_images-1``.
    """
    n = int(n_images)
    if n < 2:
        raise ValueError(f"probes need at least two images (some to fit, others to score), got {n}")
    held = tuple(int(i) for i in score) if score is not None else tuple(range(n - max(1, n // 3), n))
    if any(not 0 <= i < n for i in held):
        raise ValueError(f"scoring images must be 0..{n - 1}, got {held}")
    return ProbeSplit(tuple(i for i in range(n) if i not in held), held, tuple(names))


def r2_score(y: np.ndarray, pred: np.ndarray, baseline: np.ndarray | None = None) -> float:
    """Coefficient of determination, averaged over target columns.

    ``1 - sum((y - pred)^2) / sum((y - baseline)^2)`` per column. ``baseline`` defaults
    to the mean of ``y`` itself (the textbook R^2); probes pass the mean of the
    *fitting* targets (out-of-sample R^2), so 0 means "no better than predicting the
    fitting patches' average" and a probe that guesses scores about 0, not below.
    Columns without spread around the baseline are left out; NaN when every column is.

    Args:
        y, pred: ``(N, k)``.
        baseline: optional ``(k,)``.
    """
    p = np.asarray(pred, dtype=np.float64)
    return float(r2_scores(y, (p[:, None] if p.ndim == 1 else p)[None], baseline)[0])


def r2_scores(y: np.ndarray, preds: np.ndarray, baseline: np.ndarray | None = None) -> np.ndarray:
    """:func:`r2_score` of ``(A, N, k)`` predictions of the same ``(N, k)`` targets at once -> ``(A,)`` float64."""
    y = np.asarray(y, dtype=np.float64)
    y = y[:, None] if y.ndim == 1 else y
    p = np.asarray(preds, dtype=np.float64)
    ref = y.mean(axis=0) if baseline is None else np.asarray(baseline, dtype=np.float64).reshape(-1)
    ss_tot = ((y - ref) ** 2).sum(axis=0)
    ok = ss_tot > 1e-12 * max(1.0, float(np.abs(y).max(initial=0.0)) ** 2)
    if not ok.any():
        return np.full(p.shape[0], np.nan)
    ss_res = ((y[None] - p) ** 2).sum(axis=1)  # (A, k)
    return np.mean(1.0 - ss_res[:, ok] / ss_tot[ok], axis=1)


@dataclass(frozen=True, eq=False)
class RidgePath:
    """Ridge solutions for a grid of strengths on one standardised design.

    Attributes:
        x_mean, x_scale: ``(D,)`` standardisation of the tokens.
        y_mean: ``(k,)`` target means.
        weights: ``(A, D, k)`` one solution per ``alpha``.
        alphas: ``(A,)`` relative strengths.
    """

    x_mean: np.ndarray
    x_scale: np.ndarray
    y_mean: np.ndarray
    weights: np.ndarray
    alphas: np.ndarray

    def predict(self, x: np.ndarray) -> np.ndarray:
        """``(N, D)`` tokens -> ``(A, N, k)`` predictions, one per strength."""
        z = (np.asarray(x, dtype=np.float64) - self.x_mean) / self.x_scale
        return np.matmul(z[None], self.weights) + self.y_mean


@dataclass(frozen=True, eq=False)
class Moments:
    """Sufficient statistics of a ridge fit: sums over rows, so folds are differences.

    Attributes:
        n: rows.
        sx: ``(D,)`` sum of tokens.  sy: ``(k,)`` sum of targets.
        gxx: ``(D, D)`` sum of ``x x^T``.  gxy: ``(D, k)`` sum of ``x y^T``.
    """

    n: int
    sx: np.ndarray
    sy: np.ndarray
    gxx: np.ndarray
    gxy: np.ndarray

    @staticmethod
    def of(x: np.ndarray, y: np.ndarray) -> "Moments":
        """Moments of ``(N, D)`` tokens and ``(N, k)`` targets (float64)."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        y = y[:, None] if y.ndim == 1 else y
        if x.ndim != 2 or y.shape[0] != x.shape[0]:
            raise ValueError(f"ridge needs x (N, D) and y (N, k), got {x.shape} and {y.shape}")
        return Moments(x.shape[0], x.sum(0), y.sum(0), x.T @ x, x.T @ y)

    def __add__(self, other: "Moments") -> "Moments":
        return Moments(self.n + other.n, self.sx + other.sx, self.sy + other.sy, self.gxx + other.gxx,
                       self.gxy + other.gxy)

    def __sub__(self, other: "Moments") -> "Moments":
        return Moments(self.n - other.n, self.sx - other.sx, self.sy - other.sy, self.gxx - other.gxx,
                       self.gxy - other.gxy)


#: The token side of ridge fits (:func:`_design`), by the content of their moments: the same fitting photos give
#: the same decomposition whatever the targets, so a new photo's probes (fitted on the example photos, their
#: shuffled control's targets changing with the photo) reuse it. Sized for two fitting sets of a 13-layer model
#: (cross-validation folds and the full fit); the bytes count against ``VITVIZ_CACHE_BUDGET``.
_DESIGNS: LRU[tuple, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = LRU(160, name="ridge designs")


def _design(m: Moments) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The token side of :func:`solve_ridge`, cached by the moments' content: ``(D,)`` token means, ``(D,)``
    scales, and the eigendecomposition ``(D,)`` eigenvalues (clipped at 0), ``(D, D)`` eigenvectors of the
    standardised ``Z^T Z``."""
    digest = hashlib.blake2b(np.ascontiguousarray(m.gxx).tobytes(), digest_size=16)
    digest.update(np.ascontiguousarray(m.sx).tobytes())
    key = (m.n, m.gxx.shape, m.gxx.dtype.str, digest.hexdigest())

    def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        mean = m.sx / m.n
        gc = m.gxx - m.n * np.outer(mean, mean)
        var = np.clip(np.diag(gc) / m.n, 0.0, None)
        scale = np.where(var > 1e-12 * max(1.0, float(var.max(initial=0.0))), np.sqrt(var), 1.0)
        zz = gc / np.outer(scale, scale)
        e, q = np.linalg.eigh((zz + zz.T) / 2)
        out = mean, scale, np.clip(e, 0.0, None), q
        for a in out:
            a.flags.writeable = False  # shared by every fit on these tokens
        return out

    return _DESIGNS.get_or_compute(key, compute)


def solve_ridge(m: Moments, alphas: Sequence[float] = DEFAULT_ALPHAS) -> RidgePath:
    """Ridge regression for every strength at once, from moments (one eigendecomposition).

    With ``Z`` the standardised tokens and ``Yc`` the centred targets,
    ``Z^T Z = Q diag(e) Q^T`` and ``W(lam) = Q diag(1 / (e + lam)) Q^T Z^T Yc``,
    ``lam = alpha * mean(e)``.

    Args:
        m: moments of the fitting rows (at least 2).
        alphas: strengths relative to the mean eigenvalue of ``Z^T Z`` (positive).

    Returns:
        :class:`RidgePath`.
    """
    a = np.asarray(alphas, dtype=np.float64)
    if a.ndim != 1 or a.size == 0 or (a <= 0).any():
        raise ValueError(f"alphas must be positive numbers, got {alphas}")
    if m.n < 2:
        raise ValueError(f"ridge needs at least 2 rows, got {m.n}")
    mean, scale, e, q = _design(m)
    y_mean = m.sy / m.n
    cc = m.gxy - m.n * np.outer(mean, y_mean)
    zy = cc / scale[:, None]
    lam = a * max(float(e.sum()) / e.size, 1e-12)
    qy = q.T @ zy  # (D, k)
    weights = np.matmul(q[None], qy[None] / (e[None, :, None] + lam[:, None, None]))  # (A, D, k)
    return RidgePath(mean, scale, y_mean, weights, a)


def ridge_path(x: np.ndarray, y: np.ndarray, alphas: Sequence[float] = DEFAULT_ALPHAS) -> RidgePath:
    """Fit ridge regression of ``(N, k)`` targets on ``(N, D)`` tokens for every strength (:func:`solve_ridge`)."""
    return solve_ridge(Moments.of(x, y), alphas)


def _folds(groups: np.ndarray) -> list[np.ndarray]:
    """Held-out masks: one per fitting image, or interleaved patch folds when there is one image."""
    ids = np.unique(groups)
    if ids.size >= 2:
        return [groups == g for g in ids]
    n = groups.shape[0]
    k = min(PATCH_FOLDS, n // 2)
    if k < 2:
        raise ValueError(f"cross-validation needs at least 4 fitting patches, got {n}")
    return [np.arange(n) % k == f for f in range(k)]


@dataclass(frozen=True, eq=False)
class ProbeScores:
    """One layer's probes.

    Attributes:
        r2: ``{target: out-of-sample R^2 on the scoring images}`` (baseline: the fitting mean).
        alpha: ``{target: strength chosen by cross-validation}``.
        cv_r2: ``{target: (A,) mean cross-validated R^2 per strength}``.
    """

    r2: dict[str, float]
    alpha: dict[str, float]
    cv_r2: dict[str, np.ndarray]


def _stack(rows: Sequence[np.ndarray], idx: Sequence[int]) -> np.ndarray:
    return np.concatenate([np.asarray(rows[i], dtype=np.float64) for i in idx], axis=0)


def probe_layer(features: Sequence[np.ndarray], targets: Sequence[Mapping[str, np.ndarray]], split: ProbeSplit,
                alphas: Sequence[float] = DEFAULT_ALPHAS) -> ProbeScores:
    """Fit and score one layer's probes for every target.

    Args:
        features: per image, ``(P_i, D)`` patch tokens of this layer.
        targets: per image, ``{name: (P_i, k)}`` (same names for every image).
        split: which images fit and which score.
        alphas: strengths tried by cross-validation on the fitting images.

    Returns:
        :class:`ProbeScores`.
    """
    n = len(features)
    if len(targets) != n or any(i >= n for i in split.fit + split.score):
        raise ValueError(f"{n} feature sets, {len(targets)} target sets, split uses images {split.fit + split.score}")
    names = list(targets[0])
    cols = {}
    start = 0
    for name in names:
        k = np.asarray(targets[0][name]).reshape(np.shape(targets[0][name])[0], -1).shape[1]
        cols[name] = slice(start, start + k)
        start += k
    ys = [np.concatenate([np.asarray(t[name], dtype=np.float64).reshape(len(f), -1) for name in names], axis=1)
          for f, t in zip(features, targets)]
    x_fit, y_fit = _stack(features, split.fit), _stack(ys, split.fit)
    groups = np.concatenate([np.full(len(features[i]), i) for i in split.fit])
    folds = _folds(groups)
    parts = [Moments.of(x_fit[held], y_fit[held]) for held in folds]
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    cv = {name: np.zeros(len(alphas)) for name in names}
    for held, part in zip(folds, parts):
        pause_point()  # a shared host may let a quick view run first (vitviz.models.runner)
        rest = total - part
        pred = solve_ridge(rest, alphas).predict(x_fit[held])  # (A, n_held, K)
        y_held = y_fit[held]
        for name in names:
            sl = cols[name]
            cv[name] += np.nan_to_num(r2_scores(y_held[:, sl], pred[:, :, sl], rest.sy[sl] / rest.n),
                                      nan=-np.inf) / len(folds)
    full = solve_ridge(total, alphas)
    x_score, y_score = _stack(features, split.score), _stack(ys, split.score)
    pred = full.predict(x_score)
    r2, alpha = {}, {}
    for name in names:
        best = int(np.argmax(cv[name]))
        alpha[name] = float(full.alphas[best])
        r2[name] = r2_score(y_score[:, cols[name]], pred[best][:, cols[name]], full.y_mean[cols[name]])
    return ProbeScores(r2, alpha, cv)


def shuffle_targets(targets: Sequence[Mapping[str, np.ndarray]], seed: int) -> list[dict[str, np.ndarray]]:
    """The control task: every target's rows permuted across all patches of all images.

    One permutation per target of the pooled rows, dealt back to the images in their
    sizes: a value no longer belongs to its patch *or* its image, so a probe can only
    score by chance (about 0, or below when it overfits).
    """
    gen = np.random.default_rng(int(seed))
    sizes = [len(next(iter(t.values()))) for t in targets]
    cuts = np.cumsum(sizes)[:-1]
    out: list[dict[str, np.ndarray]] = [{} for _ in targets]
    for name in targets[0]:
        pooled = np.concatenate([np.asarray(t[name]) for t in targets], axis=0)
        for i, part in enumerate(np.split(pooled[gen.permutation(len(pooled))], cuts)):
            out[i][name] = part
    return out


@dataclass(frozen=True, eq=False)
class ProbeTable:
    """Probe R^2 by layer for every target.

    Attributes:
        layers: ``(L,)`` names of the layers, in depth order.
        targets: target names, in column order.
        r2: ``(L, len(targets))`` float64 R^2 on the scoring images.
        alpha: ``(L, len(targets))`` float64 strength chosen per cell.
        split: the images used to fit and to score.
        fit_patches, score_patches: patch counts on each side.
        shuffled: True for the shuffled-target control.
    """

    layers: tuple[str, ...]
    targets: tuple[str, ...]
    r2: np.ndarray
    alpha: np.ndarray
    split: ProbeSplit
    fit_patches: int
    score_patches: int
    shuffled: bool = False

    def column(self, target: str) -> np.ndarray:
        """``(L,)`` R^2 of one target by layer."""
        if target not in self.targets:
            raise ValueError(f"unknown probe target {target!r}; choose one of {', '.join(self.targets)}")
        return self.r2[:, self.targets.index(target)]

    def rows(self) -> list[dict[str, object]]:
        """One dict per layer: ``{"layer": name, target: R^2, ...}`` for a table."""
        return [{"layer": name, **{t: float(self.r2[i, j]) for j, t in enumerate(self.targets)}}
                for i, name in enumerate(self.layers)]

    def describe(self) -> str:
        """The probe data and split, in words."""
        kind = "shuffled targets (control), " if self.shuffled else ""
        return (f"Closed-form ridge probes on patch tokens, {kind}{self.split.describe()}: "
                f"{self.fit_patches} fitting patches, {self.score_patches} scored; ridge strength chosen per cell "
                "by cross-validation on the fitting images.")


def layer_probes(features: Sequence[np.ndarray], targets: Sequence[Mapping[str, np.ndarray]], split: ProbeSplit,
                 layers: Sequence[str] | None = None, alphas: Sequence[float] = DEFAULT_ALPHAS,
                 shuffle_seed: int | None = None) -> ProbeTable:
    """Probes for every layer.

    Args:
        features: per image, ``(L, P_i, D)`` patch tokens of every layer.
        targets: per image, ``{name: (P_i, k)}``.
        split: fitting and scoring images.
        layers: names of the ``L`` layers (default ``layer 0``...).
        alphas: ridge strengths tried.
        shuffle_seed: when given, the control task: targets shuffled within each image
            (:func:`shuffle_targets`) before fitting and scoring.

    Returns:
        :class:`ProbeTable`.
    """
    feats = [np.asarray(f) for f in features]
    if not feats or any(f.ndim != 3 for f in feats) or len({f.shape[0] for f in feats}) != 1:
        raise ValueError(f"features must be one (L, P_i, D) array per image with one L, got {[f.shape for f in feats]}")
    n_layers = feats[0].shape[0]
    names = tuple(layers) if layers is not None else tuple(f"layer {i}" for i in range(n_layers))
    if len(names) != n_layers:
        raise ValueError(f"{len(names)} layer names for {n_layers} layers")
    tgt = shuffle_targets(targets, shuffle_seed) if shuffle_seed is not None else list(targets)
    target_names = tuple(tgt[0])
    r2 = np.zeros((n_layers, len(target_names)))
    alpha = np.zeros_like(r2)
    for li in range(n_layers):
        s = probe_layer([f[li] for f in feats], tgt, split, alphas)
        r2[li] = [s.r2[t] for t in target_names]
        alpha[li] = [s.alpha[t] for t in target_names]
    fit_n = sum(feats[i].shape[1] for i in split.fit)
    score_n = sum(feats[i].shape[1] for i in split.score)
    return ProbeTable(names, target_names, r2, alpha, split, fit_n, score_n, shuffle_seed is not None)


CONTROL_SUFFIX = " (shuffled)"


def layer_probes_with_control(features: Sequence[np.ndarray], targets: Sequence[Mapping[str, np.ndarray]],
                              split: ProbeSplit, shuffle_seed: int, layers: Sequence[str] | None = None,
                              alphas: Sequence[float] = DEFAULT_ALPHAS) -> tuple[ProbeTable, ProbeTable]:
    """:func:`layer_probes` and its shuffled-target control in one pass.

    The control's targets ride along as extra columns of the same regressions, so both
    tables share every fit's decomposition (the tokens are the same); each target still
    gets its own cross-validated strength.

    Returns:
        ``(table, control)``; ``control.shuffled`` is True.
    """
    shuffled = shuffle_targets(targets, shuffle_seed)
    both = [{**t, **{name + CONTROL_SUFFIX: v for name, v in c.items()}} for t, c in zip(targets, shuffled)]
    table = layer_probes(features, both, split, layers, alphas)
    names = tuple(targets[0])
    real = [table.targets.index(n) for n in names]
    ctrl = [table.targets.index(n + CONTROL_SUFFIX) for n in names]
    make = lambda cols, flag: ProbeTable(table.layers, names, table.r2[:, cols], table.alpha[:, cols],  # noqa: E731
                                         table.split, table.fit_patches, table.score_patches, flag)
    return make(real, False), make(ctrl, True)
