"""Closed-form FLOP and parameter counts: global vs windowed attention, ViT, Swin, MAE.

Conventions (they match ``torch.utils.flop_counter.FlopCounterMode``, which the
tests compare against):

* **One multiply-add is 2 FLOPs.** Papers often quote multiply-adds: the Swin paper's
  ``4hwC^2 + 2(hw)^2C`` and "Swin-T 4.5G", the ViT-B "17.6G", are multiply-adds, so
  they are half of the numbers here (Swin-T is 9.0 GFLOPs here).
* Only matrix products are counted: linear layers, the patch-embedding convolution
  (a linear map on each patch) and the two attention products ``QK^T`` and ``AV``.
  Softmax, LayerNorm, GELU, bias and residual additions, relative-position-bias and
  mask additions are elementwise, ``O(N C)``, and are left out (as the counter does).
* Batch size 1; ``N`` tokens, ``C`` (or ``D``) channels, ``h`` heads of width
  ``d = C / h``, windows of ``M x M`` tokens.

All functions are pure: numbers in, numbers out. Tables of these numbers are in
:mod:`vitviz.compute.tables`; measurements in :mod:`vitviz.compute.measure`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Union

from ..core.masking import num_hidden
from ..core.patches import SquarePatchGrid
from ..core.windows import StageGeometry, effective_window, padded_size, stage_geometry
from ..models.mae import MAEConfig
from ..models.registry import MAE_BASE_CONFIG, MAE_HUGE_CONFIG, MAE_LARGE_CONFIG, MAE_TINY_CONFIG

Grid = Union[int, tuple[int, int]]


def _grid(grid: Grid) -> tuple[int, int]:
    if isinstance(grid, int):
        grid = (grid, grid)
    h, w = int(grid[0]), int(grid[1])
    if h < 1 or w < 1:
        raise ValueError(f"a token grid must be at least 1x1, got {grid!r}")
    return h, w


# --------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------


def linear_flops(tokens: int, d_in: int, d_out: int) -> int:
    """FLOPs of a linear layer ``(tokens, d_in) @ (d_in, d_out)``.

    Derivation: each of the ``tokens * d_out`` outputs is a dot product of length
    ``d_in``: ``d_in`` multiply-adds, ``2 d_in`` FLOPs. Total ``2 * tokens * d_in * d_out``.
    The bias addition is not counted. A ``p x p`` patch-embedding convolution with
    stride ``p`` is the same map applied to each flattened patch (``d_in = 3 p^2``).
    """
    return 2 * tokens * d_in * d_out


def attention_products_flops(queries: int, keys: int, dim: int) -> int:
    """FLOPs of the two attention products, ``Q K^T`` and ``A V``, summed over heads.

    Derivation: with ``h`` heads of width ``d = dim / h``, one head's ``Q K^T`` is a
    ``(queries x d) @ (d x keys)`` product: ``queries * keys * d`` multiply-adds; its
    ``A V`` is ``(queries x keys) @ (keys x d)``: the same count. Over ``h`` heads that is
    ``2 * queries * keys * dim`` multiply-adds = ``4 * queries * keys * dim`` FLOPs,
    independent of the number of heads.
    """
    return 4 * queries * keys * dim


def global_attention_flops(tokens: int, dim: int) -> int:
    """Attention products of global attention over ``tokens`` tokens: ``4 N^2 C`` FLOPs.

    Every token attends to all ``N`` tokens: :func:`attention_products_flops` with
    ``queries = keys = N``. Quadratic in ``N``: doubling the image side multiplies
    ``N`` by 4 and this term by 16. (The Swin paper's ``2 (hw)^2 C`` multiply-adds.)
    """
    return attention_products_flops(tokens, tokens, dim)


def window_count(grid: Grid, window: int) -> tuple[int, int]:
    """``(num_windows, tokens_per_window)`` for a token grid, as timm's Swin lays it out.

    The window is clamped to the grid along short axes and the grid is padded at the
    bottom/right to whole windows (:func:`vitviz.core.windows.effective_window`,
    :func:`vitviz.core.windows.padded_size`).
    """
    h, w = _grid(grid)
    (mh, mw), _ = effective_window((h, w), window)
    hp, wp = padded_size((h, w), (mh, mw))
    return (hp // mh) * (wp // mw), mh * mw


def windowed_attention_flops(grid: Grid, dim: int, window: int) -> int:
    """Attention products of windowed attention (Swin's W-MSA or SW-MSA).

    Derivation: the ``h x w`` grid is cut into ``hw / M^2`` windows of ``A = M^2``
    tokens and each window is an independent attention: ``4 A^2 C`` FLOPs
    (:func:`attention_products_flops` with ``queries = keys = A``). Total
    ``(hw / M^2) * 4 M^4 C = 4 hw M^2 C``: *linear* in ``N = hw`` (the Swin paper's
    ``2 M^2 hw C`` multiply-adds). The shift changes which tokens share a window, not
    the count. Grids that are not whole windows are padded as timm pads them, and the
    padding tokens are counted because timm computes them.

    FLOP ratio of the products alone: ``4 N^2 C / (4 N M^2 C) = N / M^2`` when ``M``
    divides the grid (:func:`whole_windows`); with ``M = 7``,
    ``N = 196, 784, 3136, 12544`` gives exactly 4, 16, 64 and 256 (:func:`classic_table`).
    """
    n_win, area = window_count(grid, window)
    return n_win * attention_products_flops(area, area, dim)


@dataclass(frozen=True)
class AttentionLayerFlops:
    """FLOPs of one multi-head self-attention layer.

    Attributes:
        qkv: the ``C -> 3C`` projection, ``6 N C^2``.
        products: ``Q K^T`` plus ``A V``.
        proj: the ``C -> C`` output projection, ``2 N C^2``.
    """

    qkv: int
    products: int
    proj: int

    @property
    def total(self) -> int:
        """``qkv + products + proj``."""
        return self.qkv + self.products + self.proj


def attention_layer_flops(grid: Grid, dim: int, window: int | None = None) -> AttentionLayerFlops:
    """One attention layer with its projections: global (``window=None``) or windowed.

    Derivation: the projections are per-token linear maps, ``linear(N, C, 3C) +
    linear(N, C, C) = 8 N C^2``, linear in ``N`` either way; only the products differ
    (:func:`global_attention_flops` vs :func:`windowed_attention_flops`). In the Swin
    paper's multiply-adds: ``4hwC^2 + 2(hw)^2C`` vs ``4hwC^2 + 2M^2hwC``. For a
    windowed layer the projections run on the padded grid, as in timm.
    """
    h, w = _grid(grid)
    if window is None:
        n = h * w
        return AttentionLayerFlops(linear_flops(n, dim, 3 * dim), global_attention_flops(n, dim),
                                   linear_flops(n, dim, dim))
    (mh, mw), _ = effective_window((h, w), window)
    hp, wp = padded_size((h, w), (mh, mw))
    n = hp * wp
    return AttentionLayerFlops(linear_flops(n, dim, 3 * dim), windowed_attention_flops((h, w), dim, window),
                               linear_flops(n, dim, dim))


def mlp_flops(tokens: int, dim: int, hidden: int) -> int:
    """Transformer MLP ``C -> hidden -> C``: ``4 N C hidden`` FLOPs (``16 N C^2`` at ratio 4)."""
    return linear_flops(tokens, dim, hidden) + linear_flops(tokens, hidden, dim)


def vit_block_flops(tokens: int, dim: int, mlp_ratio: float = 4.0) -> int:
    """One pre-norm ViT block (global attention + MLP) on ``tokens`` tokens.

    Derivation: ``8 N D^2`` (projections) ``+ 4 N^2 D`` (products) ``+ 4 N D H``
    (MLP with ``H = int(D * mlp_ratio)``, as timm rounds); at ratio 4 that is
    ``24 N D^2 + 4 N^2 D``.
    """
    hidden = int(dim * mlp_ratio)
    return attention_layer_flops((tokens, 1), dim).total + mlp_flops(tokens, dim, hidden)


def flop_ratio(global_flops: int, windowed_flops: int) -> Fraction:
    """Exact FLOP ratio ``global / windowed`` (a ``Fraction``; ``float()`` it for plots).

    A ratio of counted FLOPs, not a wall-time speed-up (see :mod:`vitviz.compute.measure`).
    """
    return Fraction(global_flops, windowed_flops)


def whole_windows(grid: Grid, window: int) -> bool:
    """Whether ``M x M`` windows tile the grid exactly: ``M`` divides both sides.

    Only then is the FLOP ratio of the products exactly ``N / M^2`` (and ``N >= M^2``).
    Otherwise timm clamps the window to a smaller grid and pads the grid at the
    bottom/right to whole windows, and the padding tokens are computed too
    (:func:`windowed_attention_flops`).
    """
    h, w = _grid(grid)
    return window >= 1 and h % window == 0 and w % window == 0


def quadratic_crossover_tokens(dim: int, mlp_ratio: float = 4.0) -> int:
    """Sequence length at which a ViT block's attention products equal the rest of the block.

    Derivation: the products cost ``4 N^2 D`` and the linear parts ``8 N D^2 + 4 N D H``
    (:func:`vit_block_flops`); they are equal at ``N = 2 D + H``, i.e. ``6 D`` at MLP
    ratio 4 (4608 tokens for ViT-B, ``D = 768``). Below it the quadratic term is the
    smaller part.
    """
    return 2 * dim + int(dim * mlp_ratio)


# --------------------------------------------------------------------------------------
# ViT
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ViTConfig(SquarePatchGrid):
    """A plain ViT (timm ``VisionTransformer`` defaults: class token, token pooling)."""

    img_size: int = 224
    patch_size: int = 16
    in_chans: int = 3
    embed_dim: int = 768
    depth: int = 12
    num_heads: int = 12
    mlp_ratio: float = 4.0
    num_classes: int = 1000
    class_token: bool = True

    @property
    def seq_len(self) -> int:
        """Tokens through the blocks: patches plus the class token."""
        return self.num_patches + int(self.class_token)


#: Standard ViT sizes (Dosovitskiy et al.; DeiT for Ti/S).
VIT_CONFIGS: dict[str, ViTConfig] = {
    "ViT-Ti/16": ViTConfig(embed_dim=192, depth=12, num_heads=3),
    "ViT-S/16": ViTConfig(embed_dim=384, depth=12, num_heads=6),
    "ViT-B/16": ViTConfig(),
    "ViT-L/16": ViTConfig(embed_dim=1024, depth=24, num_heads=16),
    "ViT-H/14": ViTConfig(patch_size=14, embed_dim=1280, depth=32, num_heads=16),
}


def vit_flops(cfg: ViTConfig) -> dict[str, int]:
    """FLOPs of a ViT forward pass on one image, by part.

    Derivation: patch embedding ``linear(L, 3p^2, D)`` on the ``L`` patches; ``depth``
    blocks of :func:`vit_block_flops` on ``N = L + 1`` tokens, split here into the
    projections (``8 N D^2``), the products (``4 N^2 D``) and the MLP; the classifier
    ``linear(1, D, classes)`` on the pooled token.

    Returns:
        ``{"patch_embed", "attn_proj", "attn_products", "mlp", "head", "total"}``.
    """
    n, d = cfg.seq_len, cfg.embed_dim
    layer = attention_layer_flops((n, 1), d)
    parts = {
        "patch_embed": linear_flops(cfg.num_patches, cfg.in_chans * cfg.patch_size**2, d),
        "attn_proj": cfg.depth * (layer.qkv + layer.proj),
        "attn_products": cfg.depth * layer.products,
        "mlp": cfg.depth * mlp_flops(n, d, int(d * cfg.mlp_ratio)),
        "head": linear_flops(1, d, cfg.num_classes) if cfg.num_classes else 0,
    }
    parts["total"] = sum(parts.values())
    return parts


def vit_params(cfg: ViTConfig) -> int:
    """Parameters of a timm ViT.

    Derivation: patch embedding ``3p^2 D + D``; class token ``D``; position embedding
    ``N D``; per block ``4 D^2 + 2 D H + 9 D + H`` (two LayerNorms ``4D``, qkv
    ``3D^2 + 3D``, proj ``D^2 + D``, fc1 ``DH + H``, fc2 ``HD + D``), i.e.
    ``12 D^2 + 13 D`` at ratio 4; final norm ``2D``; head ``D K + K``.
    """
    d, hdn = cfg.embed_dim, int(cfg.embed_dim * cfg.mlp_ratio)
    block = 4 * d * d + 2 * d * hdn + 9 * d + hdn
    head = d * cfg.num_classes + cfg.num_classes if cfg.num_classes else 0
    return (cfg.in_chans * cfg.patch_size**2 * d + d) + int(cfg.class_token) * d + cfg.seq_len * d \
        + cfg.depth * block + 2 * d + head


# --------------------------------------------------------------------------------------
# Swin
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SwinConfig:
    """A Swin Transformer (timm ``SwinTransformer`` defaults = Swin-T)."""

    img_size: int = 224
    patch_size: int = 4
    in_chans: int = 3
    embed_dim: int = 96
    depths: tuple[int, ...] = (2, 2, 6, 2)
    num_heads: tuple[int, ...] = (3, 6, 12, 24)
    window_size: int = 7
    mlp_ratio: float = 4.0
    num_classes: int = 1000


SWIN_T = SwinConfig()


def _swin_stages(cfg: SwinConfig) -> list[StageGeometry]:
    return stage_geometry(cfg.img_size, cfg.patch_size, cfg.window_size, cfg.embed_dim, cfg.depths, cfg.num_heads)


def swin_flops(cfg: SwinConfig = SWIN_T) -> dict[str, int]:
    """FLOPs of a Swin forward pass on one image, by part.

    Derivation, per stage with grid ``h x w`` and ``C`` channels:

    * patch merging before stages 2..4: the ``2x2`` neighbours are concatenated and
      mapped ``4C -> 2C`` on the ``h w`` tokens of the new stage: ``16 h w C^2``;
    * each block: :func:`attention_layer_flops` with the window (projections on the
      padded grid, products ``4 h w M^2 C``) and the MLP ``16 h w C^2`` at ratio 4;
    * plus the ``4x4`` patch embedding ``linear(H/4 * W/4, 48, C)`` and the classifier
      on the pooled vector.

    Swin-T at 224 is 4.5 G multiply-adds = 9.0 GFLOPs.

    Returns:
        ``{"patch_embed", "attn_proj", "attn_products", "mlp", "patch_merging", "head", "total"}``.
    """
    stages = _swin_stages(cfg)
    g0 = stages[0].grid
    parts = dict.fromkeys(("patch_embed", "attn_proj", "attn_products", "mlp", "patch_merging", "head"), 0)
    parts["patch_embed"] = linear_flops(g0[0] * g0[1], cfg.in_chans * cfg.patch_size**2, cfg.embed_dim)
    for st in stages:
        c, n = st.dim, st.num_tokens
        if st.stage > 1:
            parts["patch_merging"] += linear_flops(n, 2 * c, c)  # 4 * (C/2) -> C
        layer = attention_layer_flops(st.grid, c, cfg.window_size)
        parts["attn_proj"] += st.depth * (layer.qkv + layer.proj)
        parts["attn_products"] += st.depth * layer.products
        parts["mlp"] += st.depth * mlp_flops(n, c, int(c * cfg.mlp_ratio))
    if cfg.num_classes:
        parts["head"] = linear_flops(1, stages[-1].dim, cfg.num_classes)
    parts["total"] = sum(parts.values())
    return parts


def swin_params(cfg: SwinConfig = SWIN_T) -> int:
    """Parameters of a timm Swin.

    Derivation: patch embedding ``48 C + C`` plus its LayerNorm ``2C``; per block
    ``12 C^2 + 13 C`` (as a ViT block) plus the relative-position-bias table
    ``(2Mh - 1)(2Mw - 1) * heads``; per patch merging a LayerNorm on ``4C`` (``8C``,
    ``C`` the previous stage's width) and a bias-free ``4C -> 2C`` map (``8 C^2``);
    final norm ``2C``; head ``C K + K``.
    """
    stages = _swin_stages(cfg)
    c0 = cfg.embed_dim
    total = cfg.in_chans * cfg.patch_size**2 * c0 + c0 + 2 * c0
    for st in stages:
        c, hdn = st.dim, int(st.dim * cfg.mlp_ratio)
        if st.stage > 1:
            prev = c // 2
            total += 8 * prev + 8 * prev * prev
        block = 4 * c * c + 2 * c * hdn + 9 * c + hdn
        table = (2 * st.window[0] - 1) * (2 * st.window[1] - 1) * st.num_heads
        total += st.depth * (block + table)
    c_last = stages[-1].dim
    total += 2 * c_last
    if cfg.num_classes:
        total += c_last * cfg.num_classes + cfg.num_classes
    return total


# --------------------------------------------------------------------------------------
# MAE
# --------------------------------------------------------------------------------------


def mae_configs() -> dict[str, MAEConfig]:
    """The MAE architectures of the paper (decoder 512 wide, 8 blocks, 16 heads) and vitviz's mae-tiny."""
    return {
        "MAE ViT-B/16": MAE_BASE_CONFIG,
        "MAE ViT-L/16": MAE_LARGE_CONFIG,
        "MAE ViT-H/14": MAE_HUGE_CONFIG,
        "mae-tiny": MAE_TINY_CONFIG,
    }


def mae_visible_tokens(config: MAEConfig, mask_ratio: float) -> int:
    """Patches the encoder sees: ``L - round(ratio * L)`` (at least one), as :mod:`vitviz.core.masking`."""
    return config.num_patches - num_hidden(config.num_patches, mask_ratio)


def mae_flops(config: MAEConfig, mask_ratio: float) -> dict[str, int]:
    """FLOPs of one MAE forward pass (encoder on visible patches, decoder on all).

    Derivation, with ``L`` patches, ``K`` visible (:func:`mae_visible_tokens`), encoder
    width ``D``, decoder width ``Dd``, patch pixels ``P = 3 p^2``:

    * encoder: the patch embedding runs on all ``L`` patches (``linear(L, P, D)``, as in
      the reference code, which masks after embedding); then ``depth`` ViT blocks on
      the ``1 + K`` visible tokens plus class token (:func:`vit_block_flops`).
    * decoder: ``linear(1 + K, D, Dd)`` embeds the encoder output, mask tokens fill the
      hidden positions, ``decoder_depth`` blocks run on ``1 + L`` tokens, and
      ``linear(1 + L, Dd, P)`` predicts pixels (the class token's row is computed and
      dropped).

    The encoder's block cost falls roughly in proportion to ``K`` (a little faster,
    since the products are quadratic); the decoder's cost does not depend on the ratio
    except through its small input embedding.

    Returns:
        ``{"encoder", "decoder", "total"}`` FLOPs.
    """
    c = config
    big_l, k = c.num_patches, mae_visible_tokens(c, mask_ratio)
    pix = c.in_chans * c.patch_size**2
    encoder = linear_flops(big_l, pix, c.embed_dim) + c.depth * vit_block_flops(1 + k, c.embed_dim, c.mlp_ratio)
    decoder = (
        linear_flops(1 + k, c.embed_dim, c.decoder_embed_dim)
        + c.decoder_depth * vit_block_flops(1 + big_l, c.decoder_embed_dim, c.mlp_ratio)
        + linear_flops(1 + big_l, c.decoder_embed_dim, pix)
    )
    return {"encoder": encoder, "decoder": decoder, "total": encoder + decoder}


def encoder_flops_ratio(config: MAEConfig, mask_ratio: float) -> float:
    """How many times fewer encoder FLOPs than an unmasked encoder: ``enc(0) / enc(ratio)``.

    For MAE ViT-B/16 at 0.75 (49 of 196 patches visible) this is about 4.0: blocks on
    50 instead of 197 tokens, while the patch embedding still runs on all 196.
    """
    return mae_flops(config, 0.0)["encoder"] / mae_flops(config, mask_ratio)["encoder"]
