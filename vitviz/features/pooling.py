"""Class token vs average pooling: how alike they are by layer, and what a head reads from each.

A ViT classifier summarises an image in one vector before its head: the class token
(ViT, DeiT, DINO) or the average of the patch tokens (global average pooling, GAP).
Per layer, :func:`cls_gap_cosine` says how close the two summaries are; at the last
layer, :func:`pooled_logits` sends both through the *same* head. The head was trained
on one of them, so the other is read by a head that never saw it.

Shapes: ``L`` layers, ``T`` tokens (``prefix`` leading non-patch tokens, then the
patches), ``D`` channels, ``C`` classes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch


def _check(tokens: np.ndarray, num_prefix: int) -> np.ndarray:
    t = np.asarray(tokens, dtype=np.float64)
    if t.ndim < 2 or not 1 <= int(num_prefix) < t.shape[-2]:
        raise ValueError(f"tokens must be (..., T, D) with a class token and patches; got {t.shape}, "
                         f"prefix {num_prefix}")
    return t


def gap(tokens: np.ndarray, num_prefix: int) -> np.ndarray:
    """Average of the patch tokens: ``(..., T, D)`` -> ``(..., D)`` float64."""
    return _check(tokens, num_prefix)[..., int(num_prefix):, :].mean(axis=-2)


def cls_gap_cosine(tokens: np.ndarray, num_prefix: int) -> np.ndarray:
    """Cosine between the class token (row 0) and the mean of the patch tokens.

    Args:
        tokens: ``(L, T, D)`` (or ``(T, D)``) tokens of every layer.
        num_prefix: leading non-patch tokens (class token first).

    Returns:
        ``(L,)`` (or scalar array) float64 in [-1, 1]; 0 where a vector is zero.
    """
    t = _check(tokens, num_prefix)
    c = t[..., 0, :]
    g = gap(t, num_prefix)
    den = np.linalg.norm(c, axis=-1) * np.linalg.norm(g, axis=-1)
    num = (c * g).sum(axis=-1)
    return np.clip(np.where(den > 1e-12, num / np.where(den > 1e-12, den, 1.0), 0.0), -1.0, 1.0)


def pooled_logits(final_tokens: torch.Tensor, num_prefix: int,
                  head: Callable[[torch.Tensor], torch.Tensor]) -> tuple[np.ndarray, np.ndarray]:
    """Logits of the class token and of the patch average through one head.

    Args:
        final_tokens: ``(T, D)`` the last layer's tokens after the final norm (what
            timm's ``forward_features`` returns for one image).
        num_prefix: leading non-patch tokens; row 0 is the class token.
        head: ``(B, D) -> (B, C)``, e.g. ``lambda v: model.head(model.fc_norm(v))``.

    Returns:
        ``(cls_logits, gap_logits)``, each ``(C,)`` float32.
    """
    t = torch.as_tensor(final_tokens)
    if t.ndim != 2 or not 1 <= int(num_prefix) < t.shape[0]:
        raise ValueError(f"final tokens must be (T, D) with a class token and patches, got {tuple(t.shape)}")
    pooled = torch.stack([t[0], t[int(num_prefix):].mean(dim=0)])
    with torch.inference_mode():
        out = head(pooled).float().cpu().numpy()
    return out[0], out[1]


def uniform_weights(num_patches: int) -> np.ndarray:
    """The weights average pooling gives the patches: ``(P,)`` float64, each ``1 / P``."""
    if int(num_patches) < 1:
        raise ValueError(f"need at least one patch, got {num_patches}")
    return np.full(int(num_patches), 1.0 / int(num_patches))


def topk_overlap(a: np.ndarray, b: np.ndarray, k: int = 5) -> int:
    """How many of the top-``k`` classes of two ``(C,)`` logit vectors agree (as sets)."""
    ia = set(np.argsort(-np.asarray(a), kind="stable")[: int(k)].tolist())
    ib = set(np.argsort(-np.asarray(b), kind="stable")[: int(k)].tolist())
    return len(ia & ib)
