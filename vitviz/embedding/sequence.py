"""The token sequence of a ViT or an MAE: patch embeddings ``E x + b``, prefix tokens,
the model's position embeddings, and the encoder run on a full sequence.

Works for vitviz's MAE and timm ``VisionTransformer`` models (anything with
``patch_embed.proj`` and ``blocks``). Grid arithmetic is in :mod:`vitviz.core.patches`,
position-embedding arrays in :mod:`vitviz.core.pos_embed`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..core.images import DataConfig, model_input
from ..core.patches import patchify
from ..core.pos_embed import PositionEmbeddings
from ..models.mae import MaskedAutoencoderViT
from ..models.runner import runs_model

#: Families with absolute position embeddings this module understands.
POS_FAMILIES: tuple[str, ...] = ("mae", "vit", "deit", "dino", "dinov2")


def module_device(module: nn.Module) -> torch.device:
    return next(module.parameters()).device


def view_tensor(view: np.ndarray, cfg: DataConfig, device: torch.device) -> torch.Tensor:
    """``(S, S, 3)`` uint8 -> ``(1, 3, S, S)`` normalised float on ``device``."""
    return model_input(view, cfg, device)


def projection_matrix(module: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    """The patch projection as a matrix acting on flattened patches.

    The convolution ``patch_embed.proj`` (kernel = stride = ``P``) applies one linear map
    to every patch; reordering its weight ``(D, 3, P, P)`` to ``(D, P, P, 3)`` gives the
    matrix ``E`` of shape ``(D, P*P*3)`` for :func:`~vitviz.patches.patchify`'s pixel order.

    Returns:
        ``(E, b)``: ``(D, P*P*3)`` and ``(D,)``.
    """
    proj = module.patch_embed.proj
    w = proj.weight.detach()
    e = w.permute(0, 2, 3, 1).reshape(w.shape[0], -1)
    b = proj.bias.detach() if proj.bias is not None else torch.zeros(w.shape[0], device=w.device)
    return e, b


@runs_model
@torch.inference_mode()
def patch_embedding(module: nn.Module, cfg: DataConfig, view: np.ndarray, index: int) -> np.ndarray:
    """The embedding ``E x + b`` of one patch (no position embedding).

    Args:
        module: an MAE or timm ViT (anything with ``patch_embed.proj``).
        cfg: its normalisation.
        view: ``(S, S, 3)`` uint8 with ``S`` a multiple of the model's patch size.
        index: raster index of the patch at the model's patch size.

    Returns:
        ``(D,)`` float32, equal to the output of ``patch_embed`` for that patch.
    """
    p = int(module.patch_embed.proj.kernel_size[0])
    x = patchify(view_tensor(view, cfg, module_device(module)), p)[0]  # (N, P*P*3)
    if not 0 <= index < x.shape[0]:
        raise ValueError(f"the patch index must be in 0..{x.shape[0] - 1}, got {index}")
    e, b = projection_matrix(module)
    out = e @ x[index] + b
    norm = getattr(module.patch_embed, "norm", None)
    if norm is not None:
        out = norm(out)
    return out.float().cpu().numpy()


def class_token_embedding(module: nn.Module) -> np.ndarray:
    """The learned [CLS] vector ``(D,)`` float32 (before its position embedding is added)."""
    cls = getattr(module, "cls_token", None)
    if not isinstance(cls, torch.Tensor):
        raise ValueError("this model has no class token")
    return cls.detach().reshape(-1).float().cpu().numpy()


def position_embeddings(module: nn.Module) -> PositionEmbeddings:
    """The position embeddings of an MAE or a timm ViT.

    Raises:
        ValueError: the model has no absolute position embedding (Swin, relative-position models).
    """
    pos = getattr(module, "pos_embed", None)
    if not isinstance(pos, torch.Tensor):
        raise ValueError("this model has no absolute position embedding (pos_embed)")
    if isinstance(module, MaskedAutoencoderViT):
        grid = module.config.grid
    else:
        grid = tuple(int(g) for g in module.patch_embed.grid_size)
    k = pos.shape[1] - grid[0] * grid[1]
    if k < 0:
        raise ValueError(f"pos_embed has {pos.shape[1]} rows, fewer than the {grid[0]}x{grid[1]} patches")
    return PositionEmbeddings(pos.detach(), (int(grid[0]), int(grid[1])), int(k))


def prefix_token_vectors(module: nn.Module) -> torch.Tensor:
    """``(1, k, D)``: class token, then DeiT's distillation token / register tokens if any."""
    parts = [t for t in (getattr(module, "cls_token", None), getattr(module, "dist_token", None),
                         getattr(module, "reg_token", None)) if isinstance(t, torch.Tensor)]
    if not parts:
        d = module.patch_embed.proj.out_channels
        return torch.zeros(1, 0, d, device=module_device(module))
    return torch.cat(parts, dim=1)


def patch_tokens(module: nn.Module, imgs: torch.Tensor) -> torch.Tensor:
    """``(N, 3, H, W)`` normalised images -> ``(N, gh*gw, D)`` patch embeddings ``E x + b`` (no positions).

    Works at any ``H, W`` that are multiples of the patch size (the projection is a
    convolution; the module's own size check is bypassed).
    """
    x = module.patch_embed.proj(imgs).flatten(2).transpose(1, 2)
    norm = getattr(module.patch_embed, "norm", None)
    return norm(x) if norm is not None else x


@torch.inference_mode()
def encode(module: nn.Module, tokens: torch.Tensor, pos: PositionEmbeddings | None) -> torch.Tensor:
    """Run the encoder on a full sequence of patch tokens.

    Args:
        module: an MAE or a timm ViT.
        tokens: ``(N, L, D)`` patch embeddings (from :func:`patch_tokens`, possibly permuted).
        pos: position embeddings for ``L`` patches, or None to add no position at all
            (prefix tokens included).

    Returns:
        ``(N, k + L, D)`` after the final norm; ``k`` prefix tokens first. Equals the
        model's own ``forward_features`` (timm) or ``encode_tokens`` with every patch
        kept (MAE) when ``pos`` is the model's.
    """
    n = tokens.shape[0]
    prefix = prefix_token_vectors(module).expand(n, -1, -1)
    k = prefix.shape[1]
    if pos is None:
        x = torch.cat([prefix, tokens], dim=1)
    elif pos.num_prefix == k:
        x = torch.cat([prefix, tokens], dim=1) + pos.full
    elif pos.num_prefix == 0:
        x = torch.cat([prefix, tokens + pos.full], dim=1)
    else:
        raise ValueError(f"the position embedding covers {pos.num_prefix} prefix tokens, the model has {k}")
    if not isinstance(module, MaskedAutoencoderViT):
        x = module.norm_pre(module.patch_drop(module.pos_drop(x)))
    for blk in module.blocks:
        x = blk(x)
    return module.norm(x)
