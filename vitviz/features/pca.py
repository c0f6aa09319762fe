"""Joint PCA of patch tokens to RGB (DINOv2-style feature maps) and a foreground split.

The patch tokens of one layer, from one or several images, are centred on their joint
mean and projected on the first three principal components of the joint set. Each
component is scaled to [0, 1] by robust bounds (percentiles) of the joint projections
and used as one colour channel, so the same colour means the same direction in every
image fitted together.

Determinism: eigenvectors are defined up to sign; each component is flipped so that
its largest-magnitude loading is positive (the convention of scikit-learn's
``svd_flip``). The mean, covariance, percentile bounds and this sign rule depend only
on the *set* of tokens, so the basis and every image's colours do not depend on the
order in which the images are given (up to floating-point rounding).

Shapes: ``D`` channels, ``N`` tokens, ``k`` components (3 for colour).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Percentiles of the joint projections mapped to 0 and 1 in each colour channel.
DEFAULT_CLIP: tuple[float, float] = (1.0, 99.0)


@dataclass(frozen=True, eq=False)
class PCABasis:
    """Principal directions of a joint set of tokens.

    Attributes:
        mean: ``(D,)`` float64 joint mean token.
        components: ``(k, D)`` float64 unit rows, largest variance first, sign-fixed
            (largest-magnitude loading positive). Rows beyond the data's rank are zero.
        variance: ``(k,)`` float64 variance of the joint projections on each component.
        explained: ``(k,)`` float64 share of the total variance each component holds.
        low: ``(k,)`` float64 projection mapped to colour 0 (lower percentile).
        high: ``(k,)`` float64 projection mapped to colour 1 (upper percentile).
        num_tokens: ``N``, tokens fitted.
    """

    mean: np.ndarray
    components: np.ndarray
    variance: np.ndarray
    explained: np.ndarray
    low: np.ndarray
    high: np.ndarray
    num_tokens: int

    @property
    def dim(self) -> int:
        """Token width ``D``."""
        return int(self.mean.shape[0])

    def project(self, tokens: np.ndarray) -> np.ndarray:
        """Coordinates on the components: ``(..., D)`` -> ``(..., k)`` float64 (centred on the joint mean)."""
        t = np.asarray(tokens, dtype=np.float64)
        if t.shape[-1] != self.dim:
            raise ValueError(f"tokens have width {t.shape[-1]}, the basis was fitted on width {self.dim}")
        return (t - self.mean) @ self.components.T

    def to_unit(self, tokens: np.ndarray) -> np.ndarray:
        """Projections scaled by the joint percentile bounds and clipped: ``(..., D)`` -> ``(..., k)`` in [0, 1].

        A component without spread (``high == low``) maps to 0.5.
        """
        z = self.project(tokens)
        span = self.high - self.low
        safe = np.where(span > 0, span, 1.0)
        return np.where(span > 0, np.clip((z - self.low) / safe, 0.0, 1.0), 0.5)

    def to_rgb(self, tokens: np.ndarray) -> np.ndarray:
        """First three components as colour: ``(..., D)`` -> ``(..., 3)`` float64 in [0, 1]."""
        if self.components.shape[0] < 3:
            raise ValueError(f"colour needs 3 components, this basis has {self.components.shape[0]}")
        return self.to_unit(tokens)[..., :3]


def _as_sets(token_sets: Sequence[np.ndarray]) -> list[np.ndarray]:
    if len(token_sets) == 0:
        raise ValueError("joint PCA needs at least one set of tokens")
    sets = [np.asarray(t, dtype=np.float64) for t in token_sets]
    widths = {t.shape[-1] for t in sets}
    if any(t.ndim != 2 for t in sets) or len(widths) != 1:
        raise ValueError(f"each token set must be (N_i, D) with one D, got {[t.shape for t in sets]}")
    if not all(np.isfinite(t).all() for t in sets):
        raise ValueError("tokens must be finite")
    return sets


def sign_fix(components: np.ndarray) -> np.ndarray:
    """Flip each row so that its largest-magnitude entry is positive: ``(k, D)`` -> ``(k, D)``.

    Ties in magnitude go to the lowest index; all-zero rows stay zero.
    """
    c = np.array(components, dtype=np.float64, copy=True)
    if c.size == 0:
        return c
    idx = np.argmax(np.abs(c), axis=1)
    signs = np.sign(c[np.arange(c.shape[0]), idx])
    signs[signs == 0] = 1.0
    return c * signs[:, None]


def fit_pca(token_sets: Sequence[np.ndarray], k: int = 3, clip: tuple[float, float] = DEFAULT_CLIP) -> PCABasis:
    """Fit a PCA jointly over several sets of tokens (e.g. one set per image).

    The covariance is the sum of every set's centred outer products over ``N - 1``
    (eigen-decomposed in float64), so it is the same for any order of the sets.

    Args:
        token_sets: ``[(N_i, D), ...]`` tokens, one array per image.
        k: components to keep (at least 1; rows past ``min(N - 1, D)`` are zero).
        clip: percentiles of the joint projections mapped to colour 0 and 1.

    Returns:
        :class:`PCABasis`.

    Raises:
        ValueError: no sets, mixed widths, non-finite tokens, ``k < 1`` or bad percentiles.
    """
    if int(k) < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    lo_p, hi_p = (float(v) for v in clip)
    if not 0.0 <= lo_p < hi_p <= 100.0:
        raise ValueError(f"clip must be percentiles 0 <= low < high <= 100, got {clip}")
    sets = _as_sets(token_sets)
    n = sum(t.shape[0] for t in sets)
    d = sets[0].shape[1]
    if n == 0:
        raise ValueError("joint PCA needs at least one token")
    mean = sum(t.sum(axis=0) for t in sets) / n
    cov = np.zeros((d, d))
    for t in sets:
        c = t - mean
        cov += c.T @ c
    cov /= max(n - 1, 1)
    evals, evecs = np.linalg.eigh(cov)  # ascending
    order = np.argsort(-evals, kind="stable")
    evals = np.clip(evals[order], 0.0, None)
    comps = evecs[:, order].T  # (D, D) rows
    rank = min(n - 1, d)
    kk = int(k)
    out = np.zeros((kk, d))
    var = np.zeros(kk)
    m = min(kk, rank, d)
    out[:m] = comps[:m]
    var[:m] = evals[:m]
    scale = sum(float((t ** 2).sum()) for t in sets) / (n * d)  # mean squared entry: rounding noise is below it
    tiny = max(evals[0] if evals.size else 0.0, scale) * 1e-12
    keep = var > tiny
    out[~keep] = 0.0
    var[~keep] = 0.0
    out = sign_fix(out)
    total = float(evals.sum())
    explained = var / total if total > 0 else np.zeros(kk)
    proj = np.concatenate([(t - mean) @ out.T for t in sets], axis=0)  # (N, k)
    low = np.percentile(proj, lo_p, axis=0)
    high = np.percentile(proj, hi_p, axis=0)
    return PCABasis(mean, out, var, explained, low, high, n)


@dataclass(frozen=True, eq=False)
class PCAMaps:
    """Joint PCA colours of several images' patch grids.

    Attributes:
        basis: the joint :class:`PCABasis`.
        rgb: per image, ``(gh, gw, 3)`` float64 in [0, 1].
        pc1: per image, ``(gh, gw)`` float64 projection on the first component.
    """

    basis: PCABasis
    rgb: tuple[np.ndarray, ...]
    pc1: tuple[np.ndarray, ...]


def joint_pca_maps(token_grids: Sequence[np.ndarray], clip: tuple[float, float] = DEFAULT_CLIP) -> PCAMaps:
    """PCA feature maps of several images with one joint basis.

    Args:
        token_grids: per image, ``(gh, gw, D)`` patch tokens on the patch grid (grids may
            differ between images; ``D`` may not).
        clip: percentiles mapped to colour 0 and 1 (see :func:`fit_pca`).

    Returns:
        :class:`PCAMaps`, images in the order given.
    """
    grids = [np.asarray(g, dtype=np.float64) for g in token_grids]
    if any(g.ndim != 3 for g in grids):
        raise ValueError(f"each token grid must be (gh, gw, D), got {[g.shape for g in grids]}")
    basis = fit_pca([g.reshape(-1, g.shape[-1]) for g in grids], k=3, clip=clip)
    rgb = tuple(basis.to_rgb(g) for g in grids)
    pc1 = tuple(basis.project(g)[..., 0] for g in grids)
    return PCAMaps(basis, rgb, pc1)


def foreground_mask(pc1: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """Split a patch grid in two by thresholding its first principal component.

    The side of the threshold that touches the image border less is called foreground
    (backgrounds usually surround the subject); on a tie the side above the threshold
    is foreground. The sign of a component is a convention (:func:`sign_fix`), so this
    rule, not the sign, decides which side is which.

    Args:
        pc1: ``(gh, gw)`` projections on the first component (centred: 0 = joint mean).
        threshold: cut, in the same units as ``pc1``.

    Returns:
        ``(gh, gw)`` bool, True = foreground.
    """
    p = np.asarray(pc1, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"pc1 must be (gh, gw), got {p.shape}")
    above = p > float(threshold)
    border = np.zeros_like(above)
    border[0, :] = border[-1, :] = border[:, 0] = border[:, -1] = True
    nb = int(border.sum())
    share_above = (above & border).sum() / nb
    share_below = (~above & border).sum() / nb
    return ~above if share_above > share_below else above


def foreground_pca_maps(token_grids: Sequence[np.ndarray], threshold: float = 0.0,
                        clip: tuple[float, float] = DEFAULT_CLIP) -> tuple[PCAMaps, tuple[np.ndarray, ...]]:
    """DINOv2's two-step view: split every image on the joint first component, then colour
    the foreground only, with a joint PCA refitted on the foreground tokens of all images.

    Args:
        token_grids: per image, ``(gh, gw, D)`` patch tokens.
        threshold: cut on the first component (:func:`foreground_mask`).
        clip: percentiles mapped to colour 0 and 1.

    Returns:
        ``(maps, masks)``: ``maps.rgb`` is black on the background; ``maps.pc1`` is the
        first step's component; ``masks`` per image ``(gh, gw)`` bool, True = foreground.
    """
    first = joint_pca_maps(token_grids, clip)
    masks = tuple(foreground_mask(p, threshold) for p in first.pc1)
    grids = [np.asarray(g, dtype=np.float64) for g in token_grids]
    fg = [g[m] for g, m in zip(grids, masks)]
    if sum(len(f) for f in fg) < 2:
        return PCAMaps(first.basis, tuple(np.zeros_like(r) for r in first.rgb), first.pc1), masks
    basis = fit_pca(fg, k=3, clip=clip)
    rgb = tuple(np.where(m[..., None], basis.to_rgb(g), 0.0) for g, m in zip(grids, masks))
    return PCAMaps(basis, rgb, first.pc1), masks
