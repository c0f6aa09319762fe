"""The model an intervention works on: which kind it is, its blocks, and how its encoder runs on a photo.

Three kinds, each with what a change is measured by:

* ``classifier``: a timm ``VisionTransformer`` with a head (ViT, DeiT, dinov2-small-lab8): its class
  probabilities.
* ``mae``: vitviz's :class:`~vitviz.models.mae.MaskedAutoencoderViT`, the encoder under a seeded
  mask: its reconstruction and hidden-patch error.
* ``backbone``: a timm ``VisionTransformer`` without a head (DINO, DINOv2): its final class-token
  feature.

Swin (windowed attention, merged patches) and BEiT are not taken: their blocks do not keep one
token sequence with timm's ``Attention``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..core.masking import check_mask, make_mask, mask_to_ids, validate_ratio
from ..explain.layout import TokenLayout, mae_layout, vit_layout
from ..models.loading import LoadedModel
from ..models.mae import MaskedAutoencoderViT

#: What an intervention can work on.
KINDS: tuple[str, ...] = ("classifier", "mae", "backbone")
#: The MAE mask used when none is given: 75% of the patches hidden, random pattern, seed 0.
MAE_RATIO = 0.75


@dataclass(frozen=True, eq=False)
class Subject:
    """A model prepared for interventions.

    Attributes:
        model: the loaded model.
        kind: one of :data:`KINDS`.
        blocks: the encoder's transformer blocks.
        layout: the token layout of the encoder's sequence (an MAE's under ``mask``).
        mask: MAE only: ``(gh, gw)`` bool, True = hidden from the encoder; None otherwise.
    """

    model: LoadedModel
    kind: str
    blocks: tuple[nn.Module, ...]
    layout: TokenLayout
    mask: torch.Tensor | None = None

    @property
    def depth(self) -> int:
        """Encoder blocks ``L``."""
        return len(self.blocks)

    @property
    def num_heads(self) -> int:
        """Heads per block ``H``."""
        return int(self.blocks[0].attn.num_heads)

    def ids(self) -> torch.Tensor:
        """MAE only: ``(K,)`` indices of the visible patches, on the model's device."""
        assert self.mask is not None
        return mask_to_ids(self.mask).to(self.model.device)

    def encoder_run(self, x: torch.Tensor) -> Callable[[], Any]:
        """The encoder's forward on ``x`` ``(B, 3, S, S)``, as a callable (for hooks and captures).

        A classifier or backbone returns the model's output (logits or pooled feature); an MAE
        its latent ``(B, 1+K, D)`` after the final norm.
        """
        module: Any = self.model.module
        if self.kind == "mae":
            ids = self.ids()
            return lambda: module.encode_tokens(module.embed_patches(x), ids)
        return lambda: module(x)


def _timm_vit(module: nn.Module) -> bool:
    from timm.models.vision_transformer import VisionTransformer

    return isinstance(module, VisionTransformer)


def mae_mask(model: LoadedModel, mask: np.ndarray | torch.Tensor | None = None, mask_ratio: float = MAE_RATIO,
             seed: int = 0) -> torch.Tensor:
    """An MAE's ``(gh, gw)`` bool mask: ``mask`` checked, else a random one (``mask_ratio``, ``seed``)."""
    grid = model.architecture.config.grid
    if mask is not None:
        return check_mask(mask, grid)
    return make_mask(grid, validate_ratio(mask_ratio), seed, "random")


def subject_of(model: LoadedModel, mask: np.ndarray | torch.Tensor | None = None, mask_ratio: float = MAE_RATIO,
               seed: int = 0) -> Subject:
    """The :class:`Subject` of a loaded model.

    Args:
        mask, mask_ratio, seed: MAE only: the mask of the encoder (see :func:`mae_mask`).

    Raises:
        ValueError: a model that is not a ViT, DeiT, DINO, DINOv2 or MAE, or a mask for another model.
    """
    module: Any = model.architecture  # the structure: blocks and tokens (the weights are read where the model runs)
    if isinstance(module, MaskedAutoencoderViT):
        m = mae_mask(model, mask, mask_ratio, seed)
        return Subject(model, "mae", tuple(module.blocks), mae_layout(module, m, "encoder"), m)
    if mask is not None:
        raise ValueError(f"{model.name} is not a masked autoencoder; masks apply to MAE models only")
    if _timm_vit(module):
        kind = "classifier" if int(getattr(module, "num_classes", 0) or 0) > 0 else "backbone"
        return Subject(model, kind, tuple(module.blocks), vit_layout(module))
    raise ValueError(f"{model.name} ({type(module).__name__}) cannot be ablated here: pick a ViT, DeiT, DINO, "
                     "DINOv2 or MAE model (Swin's windowed attention and BEiT are not supported)")
