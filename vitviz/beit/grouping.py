"""Do a tokenizer's codes group by what is in the picture? Class purity of codes over labelled photos.

For each code, count its occurrences in the photos of each class; a code's *purity* is the share of
its occurrences that fall in its most frequent class. The figure for a tokenizer is the purity
averaged over codes weighted by occurrences (= the share of all tokens that sit in their code's
majority class). Rare codes look pure by chance (a code seen in one photo is pure), and classes of
different sizes shift the figure, so it is compared with the same figure after shuffling the
photos' labels (:func:`shuffled_purity`): what purity the code frequencies alone give.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def class_counts(ids: Sequence[np.ndarray], labels: Sequence[int], codebook_size: int, n_classes: int) -> np.ndarray:
    """Occurrences of each code in each class.

    Args:
        ids: one ``(gh, gw)`` int array of token ids per photo.
        labels: the class index of each photo.

    Returns:
        ``(K, C)`` int64.
    """
    out = np.zeros((codebook_size, n_classes), dtype=np.int64)
    for grid, label in zip(ids, labels):
        out[:, int(label)] += np.bincount(np.asarray(grid).reshape(-1), minlength=codebook_size)
    return out


def purity(counts: np.ndarray) -> float:
    """Share of all tokens that sit in their code's most frequent class (``counts``: ``(K, C)``)."""
    total = counts.sum()
    return float(counts.max(axis=1).sum() / total) if total else float("nan")


def shuffled_purity(ids: Sequence[np.ndarray], labels: Sequence[int], codebook_size: int, n_classes: int,
                    seeds: Sequence[int] = tuple(range(20))) -> float:
    """Mean :func:`purity` over label shuffles (``numpy.random.default_rng(seed).permutation`` of the photos' labels)."""
    per_photo = np.stack([np.bincount(np.asarray(g).reshape(-1), minlength=codebook_size) for g in ids])  # (N, K)
    lab = np.asarray(labels, dtype=np.int64)
    vals = []
    for seed in seeds:
        perm = np.random.default_rng(seed).permutation(lab)
        counts = np.zeros((codebook_size, n_classes), dtype=np.int64)
        np.add.at(counts.T, perm, per_photo)
        vals.append(purity(counts))
    return float(np.mean(vals))


def grouping_summary(ids: Sequence[np.ndarray], labels: Sequence[int], codebook_size: int, n_classes: int) -> dict:
    """Purity, the shuffled-label purity, codes used, and their ratio (purity / shuffled)."""
    p = purity(class_counts(ids, labels, codebook_size, n_classes))
    s = shuffled_purity(ids, labels, codebook_size, n_classes)
    used = int((np.bincount(np.concatenate([np.asarray(g).reshape(-1) for g in ids]), minlength=codebook_size) > 0).sum())
    return {"purity": p, "shuffled_purity": s, "ratio": p / s if s else float("nan"), "codes_used": used,
            "photos": len(ids), "tokens": int(sum(np.asarray(g).size for g in ids))}
