"""Closed-form FLOP and parameter counts (global vs windowed attention, ViT, Swin, MAE),
and a routine that times attention on this machine.

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

All functions are pure: numbers in, numbers out. The timing routine
(:func:`measure_attention_scaling`) keeps no state between calls.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Union

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from .masking import num_hidden
from .models.mae import MAEConfig
from .models.registry import MAE_TINY_CONFIG
from .swin import StageGeometry, effective_window, padded_size, stage_geometry

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
    bottom/right to whole windows (:func:`vitviz.swin.effective_window`,
    :func:`vitviz.swin.padded_size`).
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

    Speed-up of the products alone: ``4 N^2 C / (4 N M^2 C) = N / M^2``; with ``M = 7``,
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


def speedup(global_flops: int, windowed_flops: int) -> Fraction:
    """Exact ratio ``global / windowed`` (a ``Fraction``; ``float()`` it for plots)."""
    return Fraction(global_flops, windowed_flops)


# --------------------------------------------------------------------------------------
# ViT
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ViTConfig:
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
    def grid(self) -> tuple[int, int]:
        """Patch grid; the stride-``p`` convolution drops any remainder pixels."""
        g = self.img_size // self.patch_size
        return g, g

    @property
    def num_patches(self) -> int:
        """``(img // p)^2``."""
        return self.grid[0] * self.grid[1]

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
        "MAE ViT-B/16": MAEConfig(),
        "MAE ViT-L/16": MAEConfig(embed_dim=1024, depth=24, num_heads=16),
        "MAE ViT-H/14": MAEConfig(patch_size=14, embed_dim=1280, depth=32, num_heads=16),
        "mae-tiny": MAE_TINY_CONFIG,
    }


def mae_visible_tokens(config: MAEConfig, mask_ratio: float) -> int:
    """Patches the encoder sees: ``L - round(ratio * L)`` (at least one), as :mod:`vitviz.masking`."""
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


# --------------------------------------------------------------------------------------
# Tables (rows of plain numbers; plots and CSV downloads use these)
# --------------------------------------------------------------------------------------

#: Grid sides of the classic table: 196, 784, 3136 and 12544 tokens.
CLASSIC_SIDES: tuple[int, ...] = (14, 28, 56, 112)


def classic_table(dim: int = 96, window: int = 7, sides: Sequence[int] = CLASSIC_SIDES) -> list[dict]:
    """Global vs windowed attention products for square grids (the classic table).

    With ``C = 96`` and ``M = 7``: 196, 784, 3136, 12544 tokens give speed-ups of
    exactly 4, 16, 64 and 256 (``N / M^2``), see :func:`windowed_attention_flops`.

    Returns:
        One dict per side: ``grid``, ``tokens``, ``global_products_flops``,
        ``windowed_products_flops``, ``products_speedup`` (exact ``Fraction``),
        ``global_layer_flops``, ``windowed_layer_flops``, ``layer_speedup`` (float).
    """
    rows = []
    for s in sides:
        g, wnd = global_attention_flops(s * s, dim), windowed_attention_flops(s, dim, window)
        lg, lw = attention_layer_flops(s, dim).total, attention_layer_flops(s, dim, window).total
        rows.append({
            "grid": s,
            "tokens": s * s,
            "global_products_flops": g,
            "windowed_products_flops": wnd,
            "products_speedup": speedup(g, wnd),
            "global_layer_flops": lg,
            "windowed_layer_flops": lw,
            "layer_speedup": lg / lw,
        })
    return rows


def attention_scaling_rows(dim: int = 96, window: int = 7, sides: Sequence[int] | None = None) -> list[dict]:
    """:func:`classic_table` over many grid sides (default ``window .. 32*window``) for the chart.

    ``products_speedup`` is converted to ``float`` here.
    """
    if dim < 1 or window < 1:
        raise ValueError(f"dim and window must be positive, got dim={dim}, window={window}")
    if sides is None:
        sides = sorted({window * k for k in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)} | set(CLASSIC_SIDES))
    rows = classic_table(dim, window, sides)
    for r in rows:
        r["products_speedup"] = float(r["products_speedup"])
    return rows


def model_scaling_rows(resolutions: Sequence[int] = (224, 320, 448, 640, 896, 1120, 1344)) -> list[dict]:
    """Whole-model FLOPs of ViT-B/16 and Swin-T (window 7) as the input resolution grows.

    ViT-B/16 runs global attention on ``(R/16)^2 + 1`` tokens, so its products grow as
    ``R^4``; Swin-T's stays ``~R^2`` (windows), so the ratio widens with resolution.

    Returns:
        Dicts with ``resolution``, ``vit_b16_tokens``, ``vit_b16_flops``,
        ``vit_b16_attn_products_flops``, ``swin_t_tokens`` (stage 1), ``swin_t_flops``,
        ``swin_t_attn_products_flops``, ``vit_over_swin``.
    """
    rows = []
    for r in resolutions:
        if r < 32:
            raise ValueError(f"resolution must be at least 32 px, got {r}")
        v = ViTConfig(img_size=int(r))
        s = SwinConfig(img_size=int(r))
        fv, fs = vit_flops(v), swin_flops(s)
        rows.append({
            "resolution": int(r),
            "vit_b16_tokens": v.seq_len,
            "vit_b16_flops": fv["total"],
            "vit_b16_attn_products_flops": fv["attn_products"],
            "swin_t_tokens": (r // 4) ** 2,
            "swin_t_flops": fs["total"],
            "swin_t_attn_products_flops": fs["attn_products"],
            "vit_over_swin": fv["total"] / fs["total"],
        })
    return rows


def patch_size_rows(img_size: int = 224, base: str = "ViT-B/16",
                    patch_sizes: Sequence[int] = (4, 8, 14, 16, 28, 32)) -> list[dict]:
    """Sequence length and FLOPs of one ViT width at several patch sizes.

    Halving the patch side quadruples the sequence length ``L = (R/p)^2``, so the
    linear parts grow 4x and the attention products 16x.

    Args:
        img_size: input resolution ``R`` (px).
        base: a key of :data:`VIT_CONFIGS` giving width, depth and heads.
        patch_sizes: patch sides to compare (sides larger than ``R`` are skipped).

    Returns:
        Dicts with ``patch_size``, ``seq_len``, ``flops``, ``attn_products_flops``,
        ``attn_share`` (products / total), ``params``.
    """
    if base not in VIT_CONFIGS:
        raise ValueError(f"unknown ViT {base!r}; choose one of {', '.join(VIT_CONFIGS)}")
    if img_size < 1:
        raise ValueError(f"resolution must be positive, got {img_size}")
    ref = VIT_CONFIGS[base]
    rows = []
    for p in patch_sizes:
        if p < 1 or p > img_size:
            continue
        cfg = ViTConfig(img_size=img_size, patch_size=int(p), embed_dim=ref.embed_dim, depth=ref.depth,
                        num_heads=ref.num_heads, mlp_ratio=ref.mlp_ratio)
        f = vit_flops(cfg)
        rows.append({
            "patch_size": int(p),
            "seq_len": cfg.seq_len,
            "flops": f["total"],
            "attn_products_flops": f["attn_products"],
            "attn_share": f["attn_products"] / f["total"],
            "params": vit_params(cfg),
        })
    if not rows:
        raise ValueError(f"no patch size fits a {img_size} px image")
    return rows


def mae_ratio_rows(config: MAEConfig, ratios: Sequence[float] | None = None) -> list[dict]:
    """MAE encoder, decoder and total FLOPs over masking ratios.

    Returns:
        Dicts with ``mask_ratio``, ``visible_tokens``, ``num_patches``, ``encoder_flops``,
        ``decoder_flops``, ``total_flops``, ``encoder_speedup`` (:func:`encoder_flops_ratio`).
    """
    if ratios is None:
        ratios = [i / 20 for i in range(20)]  # 0.00 .. 0.95
    base = mae_flops(config, 0.0)["encoder"]
    rows = []
    for r in ratios:
        f = mae_flops(config, r)
        rows.append({
            "mask_ratio": float(r),
            "visible_tokens": mae_visible_tokens(config, r),
            "num_patches": config.num_patches,
            "encoder_flops": f["encoder"],
            "decoder_flops": f["decoder"],
            "total_flops": f["total"],
            "encoder_speedup": base / f["encoder"],
        })
    return rows


# --------------------------------------------------------------------------------------
# Measured: time and peak memory of attention on this machine
# --------------------------------------------------------------------------------------

#: Methods timed by :func:`measure_attention_scaling`.
METHODS: tuple[str, ...] = ("global_sdpa", "global_plain", "windowed")
METHOD_LABELS: dict[str, str] = {
    "global_sdpa": "global, fused scaled_dot_product_attention",
    "global_plain": "global, plain softmax(QK^T)V",
    "windowed": "windowed 7x7, plain softmax(QK^T)V",
}


def _plain_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``softmax(Q K^T / sqrt(d)) V`` with the score matrix formed: ``(..., N, d)`` -> ``(..., N, d)``."""
    attn = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)
    return attn.softmax(dim=-1) @ v


def _windowed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, side: int, window: int) -> torch.Tensor:
    """Attention inside ``window x window`` windows of a ``side x side`` token grid.

    Args:
        q, k, v: ``(B, h, side*side, d)`` in row-major token order.

    Returns:
        ``(B, h, side*side, d)``; partition and reverse copies are part of the cost, as in Swin.
    """
    b, h, _, d = q.shape
    nw = side // window

    def part(x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(b, h, nw, window, nw, window, d).permute(0, 2, 4, 1, 3, 5, 6)
        return x.reshape(b * nw * nw, h, window * window, d)

    out = _plain_attention(part(q), part(k), part(v))
    out = out.reshape(b, nw, nw, h, window, window, d).permute(0, 3, 1, 4, 2, 5, 6)
    return out.reshape(b, h, side * side, d)


class TensorMemoryTracker(TorchDispatchMode):
    """Peak bytes of tensor storages created while active.

    CPU tensors have no allocator statistics, so every operator's outputs are watched
    (weak references to their storages); storages of ``exclude`` tensors (the inputs)
    do not count. Fused kernels' internal scratch is invisible; for CPU flash
    attention it is a few small per-thread blocks.
    """

    def __init__(self, exclude: Sequence[torch.Tensor] = ()) -> None:
        super().__init__()
        from torch.multiprocessing.reductions import StorageWeakRef

        self._ref = StorageWeakRef
        self._exclude = {t.untyped_storage().data_ptr() for t in exclude}
        self._live: dict[int, tuple[object, int]] = {}
        self.current = 0
        self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        out = func(*args, **(kwargs or {}))
        for key, (ref, nbytes) in list(self._live.items()):
            if ref.expired():
                del self._live[key]
                self.current -= nbytes
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                st = t.untyped_storage()
                key = st.data_ptr()
                if key and key not in self._exclude and key not in self._live:
                    self._live[key] = (self._ref(st), st.nbytes())
                    self.current += st.nbytes()
        self.peak = max(self.peak, self.current)
        return out


def predicted_attention_bytes(method: str, tokens: int, dim: int, num_heads: int, window: int,
                              element_size: int = 4) -> int:
    """Closed-form peak of the tensors one attention call allocates (inputs excluded).

    * ``global_plain``: the score matrix and its softmax (``2 h N^2``, alive together)
      and the output (``N C``; the scaled ``Q`` is freed before the softmax). The
      ``h N^2`` terms are what run out.
    * ``global_sdpa``: the output and a ``h N`` log-sum-exp; the fused kernel never
      stores the ``N x N`` matrix.
    * ``windowed``: copies of ``Q, K, V`` in window order (``3 N C``), per-window
      scores and softmax (``2 h N M^2``) and the output (``N C``); the reverse copy
      comes after the scores are freed.

    Returns:
        Bytes (``element_size`` bytes per element; float32 = 4).
    """
    n, c, h, a = tokens, dim, num_heads, window * window
    if method == "global_plain":
        elems = 2 * h * n * n + n * c
    elif method == "global_sdpa":
        elems = n * c + h * n
    elif method == "windowed":
        elems = 2 * h * n * a + 4 * n * c
    else:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    return elems * element_size


def method_products_flops(method: str, tokens: int, dim: int, window: int) -> int:
    """Closed-form ``QK^T`` + ``AV`` FLOPs of a timed method (square grid of ``tokens``)."""
    if method in ("global_sdpa", "global_plain"):
        return global_attention_flops(tokens, dim)
    if method == "windowed":
        side = math.isqrt(tokens)
        return windowed_attention_flops(side, dim, window)
    raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")


@dataclass(frozen=True)
class TimingRow:
    """One measurement.

    Attributes:
        method: one of :data:`METHODS`.
        tokens: ``N`` (a square grid of ``side x side``).
        side: grid side.
        seconds: best wall time of one call over ``repeats`` calls.
        peak_bytes: measured peak of tensors allocated by the call.
        predicted_bytes: :func:`predicted_attention_bytes`.
        flops: :func:`method_products_flops`.
        repeats: timed calls.
    """

    method: str
    tokens: int
    side: int
    seconds: float
    peak_bytes: int
    predicted_bytes: int
    flops: int
    repeats: int

    @property
    def flops_per_second(self) -> float:
        """Achieved rate on the counted products."""
        return self.flops / self.seconds if self.seconds > 0 else float("nan")


@dataclass(frozen=True)
class TimingSweep:
    """Result of :func:`measure_attention_scaling`.

    Attributes:
        rows: measurements in order.
        stop_reason: ``"size"`` (every size up to ``max_tokens`` done), ``"time"``
            (time budget spent) or ``"memory"`` (every method's next size predicted
            over the memory budget).
        elapsed_s: wall time of the sweep.
        threads: ``torch.get_num_threads()`` during the sweep.
        device, dtype, dim, num_heads, window: the setup.
        retired: method -> why it stopped early (``"time"`` or ``"memory"``).
    """

    rows: tuple[TimingRow, ...]
    stop_reason: str
    elapsed_s: float
    threads: int
    device: str
    dtype: str
    dim: int
    num_heads: int
    window: int
    retired: dict[str, str] = field(default_factory=dict)

    def by_method(self, method: str) -> list[TimingRow]:
        """Rows of one method, by token count."""
        return sorted((r for r in self.rows if r.method == method), key=lambda r: r.tokens)

    def crossover(self, global_method: str = "global_sdpa", windowed_method: str = "windowed") -> int | None:
        """Smallest measured token count from which windowed is faster at every larger size.

        Only sizes where both methods were measured count. ``None`` if windowed is not
        faster at the largest common size.
        """
        g = {r.tokens: r.seconds for r in self.by_method(global_method)}
        w = {r.tokens: r.seconds for r in self.by_method(windowed_method)}
        common = sorted(set(g) & set(w))
        best = None
        for n in reversed(common):
            if w[n] < g[n]:
                best = n
            else:
                break
        return best

    def best_flops_per_second(self) -> float:
        """Highest achieved rate over all rows (used to draw the analytic time curves)."""
        rates = [r.flops_per_second for r in self.rows if r.seconds > 0]
        return max(rates) if rates else float("nan")


def default_sides(window: int = 7) -> list[int]:
    """Grid sides for the timing sweep: ``window * k`` for k = 1, 2, 3, 4, 6, 8, 12, 16, 24, 32."""
    return [window * k for k in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)]


def measure_attention_scaling(
    dim: int = 96,
    num_heads: int = 3,
    window: int = 7,
    sides: Sequence[int] | None = None,
    max_tokens: int = 12544,
    time_budget_s: float = 20.0,
    memory_budget_bytes: int = 1 << 30,
    methods: Sequence[str] = METHODS,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
    min_timing_s: float = 0.05,
    max_repeats: int = 10,
    progress: Callable[[float, str], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> TimingSweep:
    """Time global vs windowed attention (products + softmax only) as the grid grows.

    For each square grid of ``side x side`` tokens (``side`` a multiple of ``window``,
    ascending) and each method, random ``Q, K, V`` of shape ``(1, h, N, C/h)`` (from a
    generator seeded with ``seed``) are fed to the method once under a memory tracker
    (the peak; also a warm-up), then timed ``1..max_repeats`` times until about
    ``min_timing_s`` is spent; the best time is kept.

    It stops by itself:

    * **size**: grids with more than ``max_tokens`` tokens are not measured;
    * **time**: no new size starts once ``time_budget_s`` has elapsed, and a method
      whose next call is predicted (from its last time, scaled by the FLOP ratio) to
      overrun the remaining budget is retired;
    * **memory**: a method whose predicted peak (:func:`predicted_attention_bytes`,
      plus the inputs) exceeds ``memory_budget_bytes`` is retired before it runs, so
      the plain ``N x N`` path never runs the machine out of memory.

    Args:
        dim, num_heads, window: attention width, heads and window side (Swin-T stage 1:
            96, 3, 7).
        sides: grid sides (multiples of ``window``); default :func:`default_sides`.
        progress: optional ``callback(fraction_done, message)``.
        clock: a monotonic clock in seconds (injectable for tests).

    Returns:
        A :class:`TimingSweep`; no global state is changed (thread count is read only).
    """
    if dim % num_heads:
        raise ValueError(f"dim {dim} is not divisible by {num_heads} heads")
    if time_budget_s <= 0 or memory_budget_bytes <= 0 or max_tokens < 1:
        raise ValueError("time budget, memory budget and max tokens must be positive")
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"unknown methods {unknown}; choose from {', '.join(METHODS)}")
    sides = sorted(set(default_sides(window) if sides is None else sides))
    if any(s < 1 or s % window for s in sides):
        raise ValueError(f"grid sides must be positive multiples of the window {window}, got {list(sides)}")
    device = torch.device(device)
    elt = torch.empty((), dtype=dtype).element_size()
    gen = torch.Generator(device="cpu").manual_seed(seed)
    d = dim // num_heads
    on_cuda = device.type == "cuda"

    def sync() -> None:
        if on_cuda:
            torch.cuda.synchronize(device)

    def call(method: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, side: int) -> torch.Tensor:
        if method == "global_sdpa":
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)
        if method == "global_plain":
            return _plain_attention(q, k, v)
        return _windowed_attention(q, k, v, side, window)

    rows: list[TimingRow] = []
    retired: dict[str, str] = {}
    last: dict[str, TimingRow] = {}
    start = clock()
    sizes = [s for s in sides if s * s <= max_tokens]
    stop_reason = "size"
    with torch.inference_mode():
        for i, side in enumerate(sizes):
            n = side * side
            if clock() - start >= time_budget_s:
                stop_reason = "time"
                break
            inputs_bytes = 3 * n * dim * elt
            for m in methods:
                if m in retired:
                    continue
                pred = predicted_attention_bytes(m, n, dim, num_heads, window, elt)
                if pred + inputs_bytes > memory_budget_bytes:
                    retired[m] = "memory"
                elif m in last:
                    prev = last[m]
                    guess = prev.seconds * method_products_flops(m, n, dim, window) / max(prev.flops, 1)
                    if clock() - start + guess > time_budget_s:
                        retired[m] = "time"
            active = [m for m in methods if m not in retired]
            if not active:
                stop_reason = "memory" if "memory" in retired.values() else "time"
                break
            q, k, v = (torch.randn(1, num_heads, n, d, generator=gen, dtype=dtype).to(device) for _ in range(3))
            for j, m in enumerate(active):
                if progress is not None:
                    progress((i + j / len(active)) / max(len(sizes), 1), f"{n} tokens: {METHOD_LABELS[m]}")
                if on_cuda:
                    torch.cuda.reset_peak_memory_stats(device)
                    base = torch.cuda.memory_allocated(device)
                    out = call(m, q, k, v, side)
                    sync()
                    peak = torch.cuda.max_memory_allocated(device) - base
                else:
                    with TensorMemoryTracker(exclude=(q, k, v)) as tracker:
                        out = call(m, q, k, v, side)
                    peak = tracker.peak
                del out
                times: list[float] = []
                while True:
                    t0 = clock()
                    out = call(m, q, k, v, side)
                    sync()
                    times.append(clock() - t0)
                    del out
                    if (sum(times) >= min_timing_s or len(times) >= max_repeats
                            or clock() - start >= time_budget_s):
                        break
                row = TimingRow(m, n, side, min(times), int(peak),
                                predicted_attention_bytes(m, n, dim, num_heads, window, elt),
                                method_products_flops(m, n, dim, window), len(times))
                rows.append(row)
                last[m] = row
            del q, k, v
    if progress is not None:
        progress(1.0, "done")
    return TimingSweep(
        rows=tuple(rows),
        stop_reason=stop_reason,
        elapsed_s=clock() - start,
        threads=torch.get_num_threads(),
        device=str(device),
        dtype=str(dtype).replace("torch.", ""),
        dim=dim,
        num_heads=num_heads,
        window=window,
        retired=dict(retired),
    )


def timing_rows(sweep: TimingSweep) -> list[dict]:
    """A sweep as plain dicts (for CSV): one per measurement, with the setup repeated."""
    return [
        {
            "method": r.method,
            "tokens": r.tokens,
            "grid_side": r.side,
            "seconds": r.seconds,
            "peak_bytes": r.peak_bytes,
            "predicted_bytes": r.predicted_bytes,
            "products_flops": r.flops,
            "gflops_per_s": r.flops_per_second / 1e9,
            "repeats": r.repeats,
            "threads": sweep.threads,
            "device": sweep.device,
            "dtype": sweep.dtype,
            "dim": sweep.dim,
            "heads": sweep.num_heads,
            "window": sweep.window,
        }
        for r in sweep.rows
    ]
