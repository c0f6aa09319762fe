"""Layer-wise learning-rate decay (BEiT, MAE fine-tuning).

When a pretrained ViT is fine-tuned, every parameter gets a layer id (0 for the patch
embedding, class token and position embedding; ``i`` for block ``i - 1``; ``depth + 1``
for the final norm and head) and its learning rate is multiplied by::

    decay ** (L - i)        with L = depth + 1

so the head learns at the base rate and each layer below at ``decay`` times the one
above. Lower layers hold general features (edges, colours, position) that
pretraining already made useful; moving them less keeps those while the top adapts.
This is the convention of facebookresearch/mae ``util/lr_decay.py`` (from BEiT).
"""

from __future__ import annotations

import re

import numpy as np
from torch import nn

#: Decays the tab compares, and the depths (ViT-B, ViT-L).
DECAYS: tuple[float, ...] = (0.65, 0.75, 0.9)
DEPTHS: tuple[int, ...] = (12, 24)
#: The formula, in words the UI can show.
FORMULA = "multiplier(i) = decay ** (L - i),  L = depth + 1,  i = 0 (embeddings), 1..depth (blocks), depth + 1 (head)"

_EMBED = ("cls_token", "dist_token", "reg_token", "pos_embed", "mask_token")


def check_decay(decay: float) -> float:
    """Validate a decay in (0, 1]."""
    try:
        d = float(decay)
    except (TypeError, ValueError):
        raise ValueError(f"decay must be a number in (0, 1], got {decay!r}") from None
    if not (np.isfinite(d) and 0.0 < d <= 1.0):
        raise ValueError(f"decay must be in (0, 1], got {decay!r}")
    return d


def llrd_multipliers(depth: int, decay: float) -> np.ndarray:
    """Learning-rate multiplier of every layer id.

    Args:
        depth: number of transformer blocks.
        decay: in (0, 1]; 1 means no decay.

    Returns:
        ``(depth + 2,)`` float64: index ``i`` is layer id ``i`` (0 embeddings, 1..depth
        blocks, depth + 1 head), value ``decay ** (depth + 1 - i)``.
    """
    if int(depth) < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    d = check_decay(decay)
    top = int(depth) + 1
    return d ** (top - np.arange(top + 1, dtype=np.float64))


def layer_id(name: str, depth: int) -> int:
    """Layer id of a ViT parameter, by name (MAE/BEiT convention).

    ``cls_token``, ``pos_embed``, ``patch_embed.*`` (and other prefix tokens) -> 0;
    ``blocks.{j}.*`` -> ``j + 1``; everything else (final norm, head) -> ``depth + 1``.
    """
    base = name.split(".")[0]
    if base in _EMBED or base.startswith("patch_embed"):
        return 0
    m = re.match(r"blocks\.(\d+)\.", name)
    if m:
        return int(m.group(1)) + 1
    return int(depth) + 1


def param_groups(model: nn.Module, base_lr: float, decay: float) -> list[dict]:
    """Optimizer parameter groups with layer-wise decayed learning rates.

    Args:
        model: a ViT with ``blocks`` (timm ``VisionTransformer`` or vitviz's MAE encoder).
        base_lr: learning rate of the head.
        decay: in (0, 1].

    Returns:
        One group per layer id that has trainable parameters:
        ``{"params": [...], "lr": base_lr * multiplier, "layer_id": i, "names": [...]}``.
    """
    depth = len(getattr(model, "blocks"))
    mult = llrd_multipliers(depth, decay)
    groups: dict[int, dict] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        i = layer_id(name, depth)
        g = groups.setdefault(i, {"params": [], "names": [], "layer_id": i, "lr": float(base_lr) * float(mult[i])})
        g["params"].append(p)
        g["names"].append(name)
    return [groups[i] for i in sorted(groups)]
