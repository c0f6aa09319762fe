"""The Masked Autoencoder (He et al., 2021) built from timm blocks.

Parameter names match facebookresearch/mae ``models_mae.py`` exactly
(``cls_token``, ``pos_embed``, ``patch_embed.proj.*``, ``blocks.{i}.*``, ``norm.*``,
``decoder_embed.*``, ``mask_token``, ``decoder_pos_embed``, ``decoder_blocks.{j}.*``,
``decoder_norm.*``, ``decoder_pred.*``), so the official checkpoints load strictly.

Unlike the reference, masking is not done inside the model: the caller passes the
indices of the visible patches (``ids_keep``), produced by :mod:`vitviz.core.masking`
from a seeded generator. The encoder runs on those tokens only (the MAE asymmetry);
the decoder places mask tokens at every hidden position.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from timm.layers import PatchEmbed
from timm.models.vision_transformer import Block

from ..core.patches import SquarePatchGrid
from ..core.pos_embed import sincos_pos_embed


@dataclass(frozen=True)
class MAEConfig(SquarePatchGrid):
    """Architecture of an MAE. Defaults are MAE ViT-Base/16 with the 512x8 decoder."""

    img_size: int = 224
    patch_size: int = 16
    in_chans: int = 3
    embed_dim: int = 768
    depth: int = 12
    num_heads: int = 12
    decoder_embed_dim: int = 512
    decoder_depth: int = 8
    decoder_num_heads: int = 16
    mlp_ratio: float = 4.0
    norm_pix_loss: bool = False

    def to_dict(self) -> dict:
        """Plain dict (for safetensors metadata and model cards)."""
        return asdict(self)


#: The three published MAE architectures (facebookresearch/mae ``models_mae.py``:
#: ``mae_vit_{base_patch16,large_patch16,huge_patch14}``), all with the 512-wide,
#: 8-block, 16-head decoder.
MAE_BASE_CONFIG = MAEConfig(patch_size=16, embed_dim=768, depth=12, num_heads=12)
MAE_LARGE_CONFIG = MAEConfig(patch_size=16, embed_dim=1024, depth=24, num_heads=16)
MAE_HUGE_CONFIG = MAEConfig(patch_size=14, embed_dim=1280, depth=32, num_heads=16)


def _packed_attention(qkv: torch.Tensor, lengths: list[int], num_heads: int) -> torch.Tensor:
    """Self-attention of sequences packed end to end, each attending only to itself.

    Args:
        qkv: ``(T, 3 * C)`` packed query/key/value projections (``T = sum(lengths)``).
        lengths: tokens per sequence.
        num_heads: attention heads ``h`` (head width ``C / h``).

    Returns:
        ``(T, C)`` attention outputs, heads concatenated, before the output projection.
    """
    t, c3 = qkv.shape
    c = c3 // 3
    heads = qkv.reshape(t, 3, num_heads, c // num_heads).permute(1, 2, 0, 3)  # (3, h, T, d)
    out = torch.empty(t, c, dtype=qkv.dtype, device=qkv.device)
    start = 0
    for n in lengths:
        q, k, v = heads[:, :, start:start + n].unsqueeze(1).unbind(0)  # (1, h, n, d) each
        out[start:start + n] = F.scaled_dot_product_attention(q, k, v)[0].transpose(0, 1).reshape(n, c)
        start += n
    return out


def init_like_mae(module: nn.Module, *tokens: nn.Parameter) -> None:
    """MAE's reference initialisation (``models_mae.initialize_weights``) of a ViT-like module.

    In this order (the draws from torch's RNG are those of the reference): the patch
    projection xavier-uniform as a ``(D, 3*P*P)`` matrix, each token ``N(0, 0.02)``,
    every ``Linear`` xavier-uniform with zero bias, every ``LayerNorm`` 1 and 0. Used by
    the MAE and by the classifier fine-tuned from its encoder (``training.finetune``).
    """
    w = module.patch_embed.proj.weight.data
    nn.init.xavier_uniform_(w.view([w.shape[0], -1]))
    for t in tokens:
        nn.init.normal_(t, std=0.02)
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


class MaskedAutoencoderViT(nn.Module):
    """MAE with a ViT encoder and a light ViT decoder.

    Shapes (N images, L patches, K visible patches, p patch size, D/Dd widths):
        imgs ``(N, 3, H, W)`` -> encoder tokens ``(N, 1+K, D)`` -> prediction ``(N, L, p*p*3)``.
    Predictions are in the space of the normalised input (or per-patch normalised
    pixels when ``norm_pix_loss``), exactly as the reference.
    """

    def __init__(self, config: MAEConfig = MAEConfig()) -> None:
        super().__init__()
        c = config
        self.config = c
        norm_layer = partial(nn.LayerNorm, eps=1e-6)
        self.patch_embed = PatchEmbed(c.img_size, c.patch_size, c.in_chans, c.embed_dim)
        n = c.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, c.embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, n + 1, c.embed_dim), requires_grad=False)
        self.blocks = nn.ModuleList(
            [Block(c.embed_dim, c.num_heads, c.mlp_ratio, qkv_bias=True, norm_layer=norm_layer) for _ in range(c.depth)]
        )
        self.norm = norm_layer(c.embed_dim)
        self.decoder_embed = nn.Linear(c.embed_dim, c.decoder_embed_dim, bias=True)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, c.decoder_embed_dim))
        self.decoder_pos_embed = nn.Parameter(torch.zeros(1, n + 1, c.decoder_embed_dim), requires_grad=False)
        self.decoder_blocks = nn.ModuleList(
            [
                Block(c.decoder_embed_dim, c.decoder_num_heads, c.mlp_ratio, qkv_bias=True, norm_layer=norm_layer)
                for _ in range(c.decoder_depth)
            ]
        )
        self.decoder_norm = norm_layer(c.decoder_embed_dim)
        self.decoder_pred = nn.Linear(c.decoder_embed_dim, c.patch_size**2 * c.in_chans, bias=True)
        self.initialize_weights()

    def initialize_weights(self) -> None:
        """Reference initialisation: fixed sin-cos positions, xavier linears, normal tokens."""
        c = self.config
        self.pos_embed.data.copy_(torch.from_numpy(sincos_pos_embed(c.embed_dim, c.grid)).unsqueeze(0))
        self.decoder_pos_embed.data.copy_(
            torch.from_numpy(sincos_pos_embed(c.decoder_embed_dim, c.grid)).unsqueeze(0)
        )
        init_like_mae(self, self.cls_token, self.mask_token)

    @property
    def patch_size(self) -> int:
        """Side of a patch in pixels."""
        return self.config.patch_size

    def embed_patches(self, imgs: torch.Tensor) -> torch.Tensor:
        """Patch embedding plus position embedding, all patches.

        Args:
            imgs: ``(N, 3, H, W)`` normalised images.

        Returns:
            ``(N, L, D)`` patch tokens (no class token).
        """
        return self.patch_embed(imgs) + self.pos_embed[:, 1:, :]

    def encode_tokens(self, tokens: torch.Tensor, ids_keep: torch.Tensor,
                      valid: torch.Tensor | None = None) -> torch.Tensor:
        """Run the encoder on the visible tokens only.

        Args:
            tokens: ``(N, L, D)`` from :meth:`embed_patches`.
            ids_keep: ``(N, K)`` or ``(K,)`` indices of visible patches.
            valid: optional ``(N, K)`` bool; False marks padding (so that masks with
                different visible counts can share a batch). Padded tokens are ignored
                as attention keys; their own outputs are meaningless.

        Returns:
            ``(N, 1+K, D)`` encoded class + visible tokens (after the final norm).
        """
        n, _, d = tokens.shape
        if ids_keep.dim() == 1:
            ids_keep = ids_keep.unsqueeze(0).expand(n, -1)
        x = torch.gather(tokens, 1, ids_keep.unsqueeze(-1).expand(-1, -1, d))
        cls = (self.cls_token + self.pos_embed[:, :1, :]).expand(n, -1, -1)
        x = torch.cat([cls, x], dim=1)
        attn_mask = None
        if valid is not None and not bool(valid.all()):
            keys = torch.cat([valid.new_ones(n, 1), valid], dim=1)  # (N, 1+K), True = attend
            attn_mask = keys[:, None, None, :]
        for blk in self.blocks:
            x = blk(x, attn_mask=attn_mask)
        return self.norm(x)

    def forward_encoder(self, imgs: torch.Tensor, ids_keep: torch.Tensor) -> torch.Tensor:
        """``(N, 3, H, W)`` images, ``(N, K)`` visible ids -> ``(N, 1+K, D)`` latent."""
        return self.encode_tokens(self.embed_patches(imgs), ids_keep)

    def forward_decoder(self, latent: torch.Tensor, ids_keep: torch.Tensor,
                        valid: torch.Tensor | None = None) -> torch.Tensor:
        """Decode a full image from the encoded visible tokens.

        Args:
            latent: ``(N, 1+K, D)`` encoder output.
            ids_keep: ``(N, K)`` or ``(K,)`` positions of the visible tokens.
            valid: optional ``(N, K)`` bool, False = padding (dropped here).

        Returns:
            ``(N, L, p*p*3)`` per-patch pixel predictions.
        """
        x = self.decoder_embed(latent)
        n, _, dd = x.shape
        length = self.decoder_pos_embed.shape[1] - 1
        if ids_keep.dim() == 1:
            ids_keep = ids_keep.unsqueeze(0).expand(n, -1)
        if valid is not None:
            ids_keep = torch.where(valid, ids_keep, torch.full_like(ids_keep, length))  # padding -> spare slot
        full = self.mask_token.to(x.dtype).expand(n, length + 1, dd).clone()
        full.scatter_(1, ids_keep.unsqueeze(-1).expand(-1, -1, dd), x[:, 1:, :])
        x = torch.cat([x[:, :1, :], full[:, :length]], dim=1) + self.decoder_pos_embed
        for blk in self.decoder_blocks:
            x = blk(x)
        x = self.decoder_norm(x)
        return self.decoder_pred(x)[:, 1:, :]

    def _plain_blocks(self, blocks: nn.ModuleList) -> bool:
        """True when every block is a plain pre-norm ViT block (what :meth:`encode_packed` re-implements)."""
        same = (nn.Identity,)
        for blk in blocks:
            a = blk.attn
            if not all(isinstance(m, same) for m in (blk.ls1, blk.ls2, blk.drop_path1, blk.drop_path2,
                                                      a.q_norm, a.k_norm, a.norm)):
                return False
            if getattr(a, "gate", None) is not None or a.attn_dim != a.num_heads * a.head_dim:
                return False
        return True

    def encode_packed(self, tokens: torch.Tensor, ids: list[torch.Tensor]) -> torch.Tensor:
        """Encode several visible sets of one image's tokens, packed end to end without padding.

        Every linear layer, norm and MLP runs once on all sequences' tokens together (one
        large matrix product instead of one per mask); attention runs per sequence, so
        each result equals :meth:`encode_tokens` on that sequence alone (to float rounding).

        Args:
            tokens: ``(1, L, D)`` from :meth:`embed_patches`.
            ids: B tensors ``(K_i,)`` of visible patch indices.

        Returns:
            ``(T, D)`` with ``T = sum(1 + K_i)``: sequence ``i`` is rows
            ``offsets[i] : offsets[i] + 1 + K_i`` (class token first), after the final norm.
        """
        if not self._plain_blocks(self.blocks):
            raise NotImplementedError("packed encoding needs plain ViT blocks")
        d = tokens.shape[-1]
        cls = (self.cls_token + self.pos_embed[:, :1, :]).reshape(1, d).to(tokens.dtype)
        x = torch.cat([t for i in ids for t in (cls, tokens[0, i])], dim=0)  # (T, D)
        lengths = [1 + int(i.numel()) for i in ids]
        for blk in self.blocks:
            x = x + blk.attn.proj(_packed_attention(blk.attn.qkv(blk.norm1(x)), lengths, blk.attn.num_heads))
            x = x + blk.mlp(blk.norm2(x))
        return self.norm(x)

    def decode_packed(self, latent: torch.Tensor, ids: list[torch.Tensor]) -> torch.Tensor:
        """Decode the output of :meth:`encode_packed` for every sequence in one batch.

        Args:
            latent: ``(T, D)`` packed encoder output.
            ids: the same B index tensors ``(K_i,)``.

        Returns:
            ``(B, L, p*p*3)`` predictions, row ``i`` equal to :meth:`forward_decoder` of sequence ``i``.
        """
        x = self.decoder_embed(latent)  # (T, Dd)
        b, dd = len(ids), x.shape[-1]
        length = self.decoder_pos_embed.shape[1] - 1
        rows = torch.cat([torch.full((1 + i.numel(),), k, dtype=torch.long, device=x.device) for k, i in enumerate(ids)])
        slots = torch.cat([torch.cat([i.new_zeros(1), i.to(torch.long) + 1]) for i in ids]).to(x.device)
        full = self.mask_token.to(x.dtype).reshape(1, 1, dd).repeat(b, length + 1, 1)
        full[rows, slots] = x
        x = full + self.decoder_pos_embed
        for blk in self.decoder_blocks:
            x = blk(x)
        return self.decoder_pred(self.decoder_norm(x))[:, 1:, :]

    def forward(self, imgs: torch.Tensor, ids_keep: torch.Tensor) -> torch.Tensor:
        """``(N, 3, H, W)``, ``(N, K)`` -> ``(N, L, p*p*3)`` predictions."""
        return self.forward_decoder(self.forward_encoder(imgs, ids_keep), ids_keep)
