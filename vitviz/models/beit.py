"""``beit-tiny``: a ViT encoder pre-trained BEiT-style (Bao et al., 2021).

A ViT sees every patch, but the hidden ones are replaced by one learned
``mask_token`` before the position embeddings are added. A linear ``lm_head`` over
the tokenizer's codebook classifies each position into a visual token id; the loss
is cross-entropy on the hidden positions only (:func:`mim_loss`).

Parameter names follow the BEiT reference (``cls_token``, ``mask_token``,
``pos_embed``, ``patch_embed.proj``, ``blocks.{i}``, ``norm``, ``lm_head``). The
embedded ``beit-tiny`` uses absolute position embeddings (initialised as 2-D
sine-cosine, then learned) and plain pre-norm timm ViT blocks. The published BEiT
checkpoints need what the reference adds, each behind a config field whose default
leaves ``beit-tiny``'s keys and file metadata unchanged (:data:`BEIT_OPTIONS`):

* ``rel_pos_bias``: ``"shared"`` (one ``rel_pos_bias.relative_position_bias_table``
  ``((2gh-1)(2gw-1)+3, heads)`` for every block, as in BEiT's pretraining) or
  ``"layer"`` (``blocks.{i}.attn.relative_position_bias_table`` each);
* ``layer_scale``: LayerScale ``blocks.{i}.gamma_1`` / ``gamma_2`` ``(D,)``;
* ``qv_bias``: ``blocks.{i}.attn.q_bias`` and ``v_bias`` ``(D,)``, no key bias;
* ``abs_pos_embed=False``: no ``pos_embed``.

With any of them the blocks are timm's BEiT blocks (``timm.models.beit.Block``, the
reference's layout and names; the relative position *index* is computed, not stored).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from timm.models.beit import Block as BEiTBlock
from timm.models.beit import RelativePositionBias
from timm.models.vision_transformer import Block

from ..core.patches import SquarePatchGrid
from .own_file import export_fp16, load_own_file

BEIT_FORMAT = "vitviz-beit"
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: Config fields added for the published BEiT checkpoints, with the defaults that keep
#: ``beit-tiny``'s plain blocks; :meth:`BEiTConfig.to_dict` writes them only when set.
BEIT_OPTIONS: dict[str, object] = {"abs_pos_embed": True, "rel_pos_bias": "none", "layer_scale": 0.0,
                                   "qv_bias": False}
REL_POS_BIAS = ("none", "shared", "layer")


@dataclass(frozen=True)
class BEiTConfig(SquarePatchGrid):
    """Architecture of a BEiT masked-image-modeling model (defaults: ViT-Tiny width, 8 blocks)."""

    img_size: int = 224
    patch_size: int = 16
    embed_dim: int = 192
    depth: int = 8
    num_heads: int = 3
    mlp_ratio: float = 4.0
    vocab_size: int = 512
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    abs_pos_embed: bool = True
    rel_pos_bias: str = "none"
    layer_scale: float = 0.0
    qv_bias: bool = False

    def __post_init__(self) -> None:
        if self.rel_pos_bias not in REL_POS_BIAS:
            raise ValueError(f"rel_pos_bias must be one of {', '.join(REL_POS_BIAS)}, got {self.rel_pos_bias!r}")

    @property
    def beit_blocks(self) -> bool:
        """True when the blocks are BEiT's (relative position bias, layer scale or q/v biases)."""
        return self.rel_pos_bias != "none" or self.layer_scale > 0 or self.qv_bias

    def to_dict(self) -> dict:
        """Plain dict for safetensors metadata."""
        d = asdict(self)
        d["mean"], d["std"] = list(self.mean), list(self.std)
        for key, default in BEIT_OPTIONS.items():  # beit-tiny's metadata stays as it was
            if d[key] == default:
                del d[key]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "BEiTConfig":
        """Inverse of :meth:`to_dict`."""
        d = dict(d)
        d["mean"], d["std"] = tuple(d["mean"]), tuple(d["std"])
        return cls(**d)


def _sincos_2d(dim: int, grid: tuple[int, int]) -> torch.Tensor:
    """``(gh*gw, dim)`` 2-D sine-cosine position table (half the channels per axis)."""
    gh, gw = grid
    quarter = dim // 4
    omega = 1.0 / 10000 ** (np.arange(quarter, dtype=np.float64) / quarter)
    yy, xx = np.meshgrid(np.arange(gh, dtype=np.float64), np.arange(gw, dtype=np.float64), indexing="ij")
    parts = []
    for pos in (yy.reshape(-1), xx.reshape(-1)):
        out = np.einsum("m,d->md", pos, omega)
        parts += [np.sin(out), np.cos(out)]
    return torch.from_numpy(np.concatenate(parts, axis=1)).float()


class BEiTForMIM(nn.Module):
    """ViT encoder + mask token + linear head over the visual-token vocabulary.

    Shapes: images ``(N, 3, H, W)`` normalised with ``config.mean/std``; ``mask``
    ``(N, L)`` bool (True = hidden) -> logits ``(N, L, V)``.
    """

    def __init__(self, config: BEiTConfig = BEiTConfig()) -> None:
        super().__init__()
        c = config
        self.config = c
        norm_layer = partial(nn.LayerNorm, eps=1e-6)
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv2d(3, c.embed_dim, c.patch_size, c.patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, c.embed_dim))
        self.mask_token = nn.Parameter(torch.zeros(1, 1, c.embed_dim))
        if c.abs_pos_embed:
            self.pos_embed = nn.Parameter(torch.zeros(1, c.num_patches + 1, c.embed_dim))
        else:
            self.pos_embed = None
        if c.rel_pos_bias == "shared":
            self.rel_pos_bias = RelativePositionBias(window_size=c.grid, num_heads=c.num_heads)
        else:
            self.rel_pos_bias = None
        if c.beit_blocks:
            self.blocks = nn.ModuleList(
                [BEiTBlock(c.embed_dim, c.num_heads, qkv_bias=c.qv_bias, mlp_ratio=c.mlp_ratio,
                           init_values=c.layer_scale or None, norm_layer=norm_layer,
                           window_size=c.grid if c.rel_pos_bias == "layer" else None) for _ in range(c.depth)]
            )
            for blk in self.blocks:  # call the qkv layer, then add the q/0/v bias: works on packed or int8 layers
                blk.attn.qkv_bias_separate = True
        else:
            self.blocks = nn.ModuleList(
                [Block(c.embed_dim, c.num_heads, c.mlp_ratio, qkv_bias=True, norm_layer=norm_layer)
                 for _ in range(c.depth)]
            )
        self.norm = norm_layer(c.embed_dim)
        self.lm_head = nn.Linear(c.embed_dim, c.vocab_size)
        self._init_weights()

    def _init_weights(self) -> None:
        if self.pos_embed is not None:
            self.pos_embed.data[0, 1:] = _sincos_2d(self.config.embed_dim, self.config.grid)
        for p in (self.cls_token, self.mask_token):
            nn.init.trunc_normal_(p, std=0.02)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        w = self.patch_embed.proj.weight.data
        nn.init.xavier_uniform_(w.view(w.shape[0], -1))

    @property
    def patch_size(self) -> int:
        """Pixels per patch side."""
        return self.config.patch_size

    def features(self, imgs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Encoder output for every patch.

        Args:
            imgs: ``(N, 3, H, W)`` normalised.
            mask: ``(N, L)`` bool, True = replaced by the mask token.

        Returns:
            ``(N, L, D)`` after the final norm (class token dropped).
        """
        x = self.patch_embed.proj(imgs).flatten(2).transpose(1, 2)  # (N, L, D)
        w = mask.unsqueeze(-1).to(x.dtype)
        x = x * (1.0 - w) + self.mask_token.to(x.dtype) * w
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1)
        if self.pos_embed is not None:
            x = x + self.pos_embed
        if self.config.beit_blocks:
            shared = self.rel_pos_bias() if self.rel_pos_bias is not None else None  # (heads, L+1, L+1)
            for blk in self.blocks:
                x = blk(x, shared_rel_pos_bias=shared)
        else:
            for blk in self.blocks:
                x = blk(x)
        return self.norm(x)[:, 1:]

    def forward(self, imgs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``(N, 3, H, W)`` normalised, ``(N, L)`` bool -> logits ``(N, L, V)``."""
        return self.lm_head(self.features(imgs, mask))


def mim_loss(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over hidden positions only.

    Args:
        logits: ``(N, L, V)``.
        targets: ``(N, L)`` int64 token ids (visible positions are ignored).
        mask: ``(N, L)`` bool, True = hidden (the only positions scored).

    Returns:
        Scalar mean over all hidden positions of the batch.
    """
    return F.cross_entropy(logits[mask], targets[mask])


def normalize(x01: torch.Tensor, config: BEiTConfig) -> torch.Tensor:
    """``(N, 3, H, W)`` in [0, 1] -> normalised with the model's mean/std."""
    mean = torch.tensor(config.mean, dtype=x01.dtype).view(1, 3, 1, 1)
    std = torch.tensor(config.std, dtype=x01.dtype).view(1, 3, 1, 1)
    return (x01 - mean) / std


def export_beit(model: BEiTForMIM, path: Path, extra: dict[str, str] | None = None) -> None:
    """Write the model as fp16 safetensors with its config in the metadata (atomic; :func:`export_fp16`)."""
    export_fp16(model, path, BEIT_FORMAT, extra)


def load_beit_file(path: Path) -> tuple[BEiTForMIM, dict[str, str]]:
    """Build a model from a vitviz-beit safetensors file, strictly (fp32, eval mode).

    Raises:
        ValueError: not a vitviz-beit file.
        RuntimeError: keys or shapes do not match the config in its metadata.
    """
    return load_own_file(path, BEIT_FORMAT, lambda d: BEiTForMIM(BEiTConfig.from_dict(d)))
