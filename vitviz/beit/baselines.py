"""Baselines the BEiT models must beat.

* :func:`kmeans_codebook` / :func:`kmeans_roundtrip`: a k-means codebook of raw
  16x16 patches with as many codes as the tokenizer; each patch is replaced by its
  nearest centroid (the tokenizer's round trip must beat it in MSE).
* :func:`most_frequent_prediction` and :func:`nearest_visible_prediction`: token
  guesses without a model (beit-tiny's top-1 accuracy must beat both).
"""

from __future__ import annotations

import torch


def kmeans_codebook(patches: torch.Tensor, k: int, iters: int, g: torch.Generator) -> torch.Tensor:
    """Lloyd's k-means with k-means++-lite init (random distinct patches); empty clusters re-seeded.

    Args:
        patches: ``(M, P)`` float patch vectors (e.g. ``P = 16*16*3`` in [0, 1]).
        k: number of centroids.
        iters: Lloyd iterations.
        g: generator for the initial choice and re-seeding.

    Returns:
        ``(k, P)`` centroids.
    """
    m = patches.shape[0]
    cent = patches[torch.randperm(m, generator=g)[:k]].clone()
    sq = patches.pow(2).sum(1, keepdim=True)
    for _ in range(iters):
        assign = nearest_centroid(patches, cent, sq)
        sums = torch.zeros_like(cent).index_add_(0, assign, patches)
        counts = torch.bincount(assign, minlength=k).float()
        empty = counts == 0
        cent = torch.where(empty[:, None], cent, sums / counts.clamp(min=1)[:, None])
        if bool(empty.any()):
            cent[empty] = patches[torch.randint(0, m, (int(empty.sum()),), generator=g)]
    return cent


def nearest_centroid(patches: torch.Tensor, cent: torch.Tensor, sq: torch.Tensor | None = None,
                     chunk: int = 8192) -> torch.Tensor:
    """``(M, P)`` patches, ``(K, P)`` centroids -> ``(M,)`` int64 index of the nearest (L2)."""
    csq = cent.pow(2).sum(1)
    out = []
    for i in range(0, patches.shape[0], chunk):
        p = patches[i : i + chunk]
        d = csq[None, :] - 2.0 * p @ cent.t()  # |p|^2 is constant per row
        out.append(d.argmin(1))
    return torch.cat(out)


def kmeans_roundtrip(img: torch.Tensor, cent: torch.Tensor, patch: int) -> torch.Tensor:
    """Replace each patch of ``img`` by its nearest centroid.

    Args:
        img: ``(3, H, W)`` in [0, 1], ``H, W`` multiples of ``patch``.
        cent: ``(K, 3*patch*patch)`` centroids in the layout of :func:`patch_rows`.

    Returns:
        ``(3, H, W)`` the quantised image.
    """
    rows = patch_rows(img, patch)
    q = cent[nearest_centroid(rows, cent)]
    _, h, w = img.shape
    gh, gw = h // patch, w // patch
    return q.view(gh, gw, 3, patch, patch).permute(2, 0, 3, 1, 4).reshape(3, h, w)


def patch_rows(img: torch.Tensor, patch: int) -> torch.Tensor:
    """``(3, H, W)`` -> ``(gh*gw, 3*patch*patch)`` one row per patch, row-major grid."""
    c, h, w = img.shape
    gh, gw = h // patch, w // patch
    return img.view(c, gh, patch, gw, patch).permute(1, 3, 0, 2, 4).reshape(gh * gw, c * patch * patch)


def most_frequent_prediction(mask: torch.Tensor, code: int) -> torch.Tensor:
    """Predict one code everywhere: ``(gh, gw)`` mask -> ``(gh, gw)`` int64 filled with ``code``."""
    return torch.full(mask.shape, int(code), dtype=torch.int64)


def nearest_visible_prediction(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each hidden patch takes the code of the nearest visible patch (Euclidean on the grid).

    Ties go to the first visible patch in row-major order. Visible patches keep their code.

    Args:
        ids: ``(gh, gw)`` int64 true codes.
        mask: ``(gh, gw)`` bool, True = hidden. At least one patch must be visible.

    Returns:
        ``(gh, gw)`` int64.
    """
    gh, gw = mask.shape
    yy, xx = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    pos = torch.stack([yy.flatten(), xx.flatten()], 1).float()  # (L, 2)
    vis = (~mask).flatten().nonzero().flatten()
    if vis.numel() == 0:
        raise ValueError("nearest_visible_prediction needs at least one visible patch")
    d = torch.cdist(pos, pos[vis])  # (L, V)
    src = vis[d.argmin(1)]
    return ids.flatten()[src].view(gh, gw)
