"""The shuffle demonstration: without position embeddings the encoder is
permutation-equivariant; with them it is not."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..core.images import DataConfig
from ..core.patches import grid_size
from ..core.pos_embed import interpolate_pos_embed
from ..models.runner import runs_model
from .sequence import module_device, prefix_token_vectors, view_tensor, encode, patch_tokens, position_embeddings


@dataclass(frozen=True)
class ShuffleResult:
    """The encoder on the patches in their place and shuffled, with and without positions.

    ``perm[i]`` is the patch whose content sits at sequence position ``i`` after the
    shuffle; patch ``j`` therefore moves to position ``where[j]``. Differences compare
    the output of the *same patch content* in its old and new place.

    Attributes:
        perm: ``(L,)`` int64.
        where: ``(L,)`` int64, the inverse permutation.
        diff_without: ``(L,)`` float32 max abs output difference per patch, no positions.
        diff_with: ``(L,)`` float32, the same with the model's position embeddings.
        prefix_diff_without: max abs difference of the prefix tokens' outputs ([CLS]), no positions.
        prefix_diff_with: the same with positions.
        output_scale: mean abs value of the outputs (scale for the differences).
        grid: ``(gh, gw)``.
    """

    perm: np.ndarray
    where: np.ndarray
    diff_without: np.ndarray
    diff_with: np.ndarray
    prefix_diff_without: float
    prefix_diff_with: float
    output_scale: float
    grid: tuple[int, int]

    @property
    def max_diff_without(self) -> float:
        """Largest difference over all patches, no positions (float rounding only)."""
        return float(self.diff_without.max())

    @property
    def max_diff_with(self) -> float:
        """Largest difference over all patches, with positions."""
        return float(self.diff_with.max())


def random_permutation(length: int, seed: int) -> torch.Tensor:
    """A seeded permutation of ``range(length)`` (own generator, never the global RNG)."""
    return torch.randperm(length, generator=torch.Generator().manual_seed(int(seed)))


@runs_model
@torch.inference_mode()
def shuffle_demo(module: nn.Module, cfg: DataConfig, view: np.ndarray, seed: int = 0,
                 perm: torch.Tensor | None = None) -> ShuffleResult:
    """Permute the patch tokens (without their positions) and compare encoder outputs.

    Without position embeddings the encoder is permutation-equivariant: every patch's
    output is the same wherever it sits (to float rounding), and [CLS]'s is unchanged.
    With them, the position rows stay in place while the contents move, so outputs change.

    Args:
        module: an MAE or timm ViT.
        cfg: its normalisation.
        view: ``(S, S, 3)`` uint8 at the model's native side.
        seed: seed of the permutation (ignored when ``perm`` is given).
        perm: optional ``(L,)`` permutation.

    Returns:
        A :class:`ShuffleResult`.
    """
    x = view_tensor(view, cfg, module_device(module))
    tokens = patch_tokens(module, x)  # (1, L, D)
    length = tokens.shape[1]
    p = random_permutation(length, seed) if perm is None else torch.as_tensor(perm, dtype=torch.long)
    if sorted(p.tolist()) != list(range(length)):
        raise ValueError(f"perm must be a permutation of 0..{length - 1}")
    p = p.to(tokens.device)
    where = torch.argsort(p)
    grid = grid_size(x.shape[2], x.shape[3], int(module.patch_embed.proj.kernel_size[0]))
    pos = interpolate_pos_embed(position_embeddings(module), grid)  # the stored ones at the native size
    k = prefix_token_vectors(module).shape[1]
    diffs, prefix_diffs, scale = [], [], 0.0
    for use in (None, pos):
        a = encode(module, tokens, use)
        b = encode(module, tokens[:, p], use)
        # b[k + where[j]] is patch j's output in its new place; a[k + j] in its old one.
        moved = b[:, k + where]
        diffs.append((moved - a[:, k:]).abs().amax(dim=(0, 2)).float().cpu().numpy())
        prefix_diffs.append(float((b[:, :k] - a[:, :k]).abs().max()) if k else 0.0)
        scale = float(a.abs().mean())
    return ShuffleResult(p.cpu().numpy(), where.cpu().numpy(), diffs[0], diffs[1], prefix_diffs[0],
                         prefix_diffs[1], scale, grid)
