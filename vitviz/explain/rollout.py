"""Maths on captured attention: head fusion, attention rollout, mean attention distance,
mass regions. Pure numpy on ``(L, H, T, T)`` arrays and a :class:`~vitviz.explain.layout.TokenLayout`.
"""

from __future__ import annotations

import numpy as np

from .layout import TokenLayout

#: How heads are fused into one matrix per layer before rollout.
HEAD_FUSIONS: tuple[str, ...] = ("mean", "max", "min")
#: Largest discard ratio accepted by :func:`rollout_matrix`.
MAX_DISCARD = 0.99


def check_fusion(head_fusion: str) -> str:
    """Validate a head-fusion name (``mean``, ``max``, ``min``)."""
    if head_fusion not in HEAD_FUSIONS:
        raise ValueError(f"unknown head fusion {head_fusion!r}; choose one of {', '.join(HEAD_FUSIONS)}")
    return head_fusion


def check_discard(discard_ratio: float) -> float:
    """Validate a discard ratio in ``[0, 0.99]``."""
    try:
        r = float(discard_ratio)
    except (TypeError, ValueError):
        raise ValueError(f"discard ratio must be a number, got {discard_ratio!r}") from None
    if not np.isfinite(r) or r < 0 or r > MAX_DISCARD + 1e-9:
        raise ValueError(f"discard ratio must be between 0 and {MAX_DISCARD}, got {discard_ratio!r}")
    return min(r, MAX_DISCARD)


def fuse_heads(attn: np.ndarray, head_fusion: str = "mean") -> np.ndarray:
    """One layer's heads fused into one matrix: ``(H, T, T)`` -> ``(T, T)`` float64."""
    a = np.asarray(attn, dtype=np.float64)
    how = check_fusion(head_fusion)
    return a.mean(axis=0) if how == "mean" else a.max(axis=0) if how == "max" else a.min(axis=0)


def discard_lowest(a: np.ndarray, discard_ratio: float) -> np.ndarray:
    """Zero the weakest attention of each row, never the diagonal.

    In every query row, the ``floor(ratio * (T - 1))`` smallest *off-diagonal*
    entries are set to 0 (ties broken by column index). The diagonal (each token's
    attention to itself, including the class token's to itself) is always kept, and
    the residual identity added afterwards makes every row sum positive, so the row
    renormalisation that follows is always defined.

    Args:
        a: ``(T, T)`` fused attention.
        discard_ratio: in ``[0, 0.99]``.

    Returns:
        ``(T, T)`` float64 copy.
    """
    out = np.array(a, dtype=np.float64, copy=True)
    t = out.shape[0]
    n = int(np.floor(check_discard(discard_ratio) * (t - 1) + 1e-9))
    if n <= 0:
        return out
    keyed = out.copy()
    np.fill_diagonal(keyed, np.inf)
    drop = np.argsort(keyed, axis=1, kind="stable")[:, :n]
    np.put_along_axis(out, drop, 0.0, axis=1)
    return out


def rollout_matrix(attentions: np.ndarray, head_fusion: str = "mean", discard_ratio: float = 0.0) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema, 2020) through every layer.

    Per layer: fuse the heads (:func:`fuse_heads`), optionally discard the weakest
    entries of each row (:func:`discard_lowest`), add the identity for the residual
    connection, and renormalise every row to sum 1 (``A / A.sum(-1, keepdims=True)``).
    For mean fusion without discarding this is the paper's ``0.5 A + 0.5 I``. The
    layers are then multiplied, last layer on the left: ``R = Â_L ... Â_2 Â_1``.

    Args:
        attentions: ``(L, H, T, T)``.

    Returns:
        ``(T, T)`` float64; every row sums to 1. Row ``i`` says how much each input
        token contributes to output token ``i``.
    """
    a = np.asarray(attentions, dtype=np.float64)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attentions must be (layers, heads, T, T), got {a.shape}")
    check_fusion(head_fusion)
    t = a.shape[-1]
    eye = np.eye(t)
    result = eye.copy()
    for layer in a:
        fused = discard_lowest(fuse_heads(layer, head_fusion), discard_ratio) + eye
        fused /= fused.sum(axis=-1, keepdims=True)
        result = fused @ result
    return result


def mean_attention_distance(attentions: np.ndarray, layout: TokenLayout) -> np.ndarray:
    """Mean attention distance per head, in input pixels (Dosovitskiy et al., 2021, fig. 7).

    For every patch query, the distance between patch centres weighted by its
    attention over the *patch* keys (renormalised to sum 1 over patches, so the share
    given to prefix tokens, which have no position, does not shrink the distance),
    averaged over the patch queries of the sequence.

    Args:
        attentions: ``(L, H, T, T)``.
        layout: the sequence's layout (distances use each token's grid position).

    Returns:
        ``(L, H)`` float64 pixels.
    """
    a = np.asarray(attentions, dtype=np.float64)
    p0 = layout.num_prefix
    pp = a[..., p0:, p0:]  # (L, H, P, P)
    pp = pp / np.clip(pp.sum(axis=-1, keepdims=True), 1e-30, None)
    rc = layout.patch_rc.astype(np.float64)
    dist = np.sqrt(((rc[:, None, :] - rc[None, :, :]) ** 2).sum(-1)) * layout.patch_size  # (P, P)
    return (pp * dist).sum(axis=-1).mean(axis=-1)


def uniform_distance(layout: TokenLayout) -> float:
    """Mean attention distance, in pixels, of a head that attends to every patch token equally.

    The reference against which :func:`mean_attention_distance` reads as local (below)
    or global (near it); a random-weight model sits close to it.
    """
    rc = layout.patch_rc.astype(np.float64)
    dist = np.sqrt(((rc[:, None, :] - rc[None, :, :]) ** 2).sum(-1)) * layout.patch_size
    return float(dist.mean())


def mass_region(heat: np.ndarray, keep: float = 0.6) -> np.ndarray:
    """The smallest set of cells holding ``keep`` of the total weight (DINO's visualisation).

    Cells are taken from the largest weight down until their sum reaches ``keep`` of the
    total. NaN cells (no token) are never in the region.

    Args:
        heat: ``(gh, gw)`` non-negative weights.
        keep: share of the mass, in (0, 1].

    Returns:
        ``(gh, gw)`` bool.
    """
    if not 0.0 < float(keep) <= 1.0:
        raise ValueError(f"keep must be in (0, 1], got {keep!r}")
    h = np.nan_to_num(np.asarray(heat, dtype=np.float64), nan=0.0).clip(min=0)
    flat = h.reshape(-1)
    total = flat.sum()
    out = np.zeros(flat.shape, dtype=bool)
    if total <= 0:
        return out.reshape(h.shape)
    order = np.argsort(-flat, kind="stable")
    csum = np.cumsum(flat[order])
    n = int(np.searchsorted(csum, keep * total - 1e-12 * total)) + 1
    out[order[:n]] = True
    return out.reshape(h.shape)
