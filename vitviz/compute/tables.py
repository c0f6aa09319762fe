"""Tables of closed-form numbers (rows of plain dicts); the plots and CSV downloads use these."""

from __future__ import annotations

from collections.abc import Sequence

from fractions import Fraction

from ..core.windows import effective_window, padded_size
from ..models.mae import MAEConfig
from .formulas import (VIT_CONFIGS, SwinConfig, ViTConfig, attention_layer_flops, flop_ratio,
                       global_attention_flops, mae_flops, mae_visible_tokens, swin_flops, vit_flops, vit_params,
                       whole_windows, windowed_attention_flops)

#: Grid sides of the classic table: 196, 784, 3136 and 12544 tokens.
CLASSIC_SIDES: tuple[int, ...] = (14, 28, 56, 112)


def classic_table(dim: int = 96, window: int = 7, sides: Sequence[int] = CLASSIC_SIDES) -> list[dict]:
    """Global vs windowed attention for square grids (the classic table), as FLOP ratios.

    With ``C = 96`` and ``M = 7``: 196, 784, 3136, 12544 tokens give FLOP ratios of the
    products of exactly 4, 16, 64 and 256 (``N / M^2``, Swin eqs. 1-2) and of the whole
    attention layer ``(2C + N) / (2C + M^2)``. Where ``M`` does not divide the side, the
    windowed counts are those of the padded grid timm computes (``padded``), and the
    ratio differs from ``N / M^2``. Neither ratio is a wall-time speed-up.

    Returns:
        One dict per side: ``grid``, ``tokens``, ``window_used`` (the window after timm
        clamps it to the grid), ``padded_side``, ``padded`` and ``clamped`` (bool),
        ``exact_n_over_m2`` (bool, :func:`~vitviz.compute.formulas.whole_windows`),
        ``global_products_flops``, ``windowed_products_flops``, ``products_flop_ratio``
        (exact ``Fraction``), ``n_over_m2`` (``N / M^2``, exact), ``global_layer_flops``,
        ``windowed_layer_flops``, ``layer_flop_ratio`` (float).
    """
    rows = []
    for s in sides:
        g, wnd = global_attention_flops(s * s, dim), windowed_attention_flops(s, dim, window)
        lg, lw = attention_layer_flops(s, dim).total, attention_layer_flops(s, dim, window).total
        (mh, _), _ = effective_window((s, s), window)
        side = padded_size((s, s), (mh, mh))[0]
        rows.append({
            "grid": s,
            "tokens": s * s,
            "window_used": mh,
            "padded_side": side,
            "padded": side != s,
            "clamped": mh != window,
            "exact_n_over_m2": whole_windows(s, window),
            "global_products_flops": g,
            "windowed_products_flops": wnd,
            "products_flop_ratio": flop_ratio(g, wnd),
            "n_over_m2": Fraction(s * s, window * window),
            "global_layer_flops": lg,
            "windowed_layer_flops": lw,
            "layer_flop_ratio": lg / lw,
        })
    return rows


def attention_scaling_rows(dim: int = 96, window: int = 7, sides: Sequence[int] | None = None) -> list[dict]:
    """:func:`classic_table` over many grid sides (default ``window .. 32*window``) for the chart.

    ``products_flop_ratio`` and ``n_over_m2`` are converted to ``float`` here.
    """
    if dim < 1 or window < 1:
        raise ValueError(f"dim and window must be positive, got dim={dim}, window={window}")
    if sides is None:
        sides = sorted({window * k for k in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)} | set(CLASSIC_SIDES))
    rows = classic_table(dim, window, sides)
    for r in rows:
        r["products_flop_ratio"] = float(r["products_flop_ratio"])
        r["n_over_m2"] = float(r["n_over_m2"])
    return rows


def quadratic_crossover(base: ViTConfig = ViTConfig(), max_resolution: int = 8192) -> dict:
    """Where a ViT's attention products stop being a small share of its FLOPs.

    Scans resolutions in steps of the patch size from ``base.img_size`` and returns the
    first at which the products (``4 N^2 D`` per block) are at least half of the
    forward pass (:func:`vit_flops`).

    Returns:
        ``{"share_at_base"``: products / total at ``base.img_size``, ``"resolution"``,
        ``"tokens"``: the first resolution and sequence length at which the share is
        ``>= 0.5`` (``None`` if not reached by ``max_resolution``)}.
    """
    f = vit_flops(base)
    out: dict = {"share_at_base": f["attn_products"] / f["total"], "resolution": None, "tokens": None}
    for r in range(base.img_size, max_resolution + 1, base.patch_size):
        cfg = ViTConfig(img_size=r, patch_size=base.patch_size, embed_dim=base.embed_dim, depth=base.depth,
                        num_heads=base.num_heads, mlp_ratio=base.mlp_ratio, num_classes=base.num_classes)
        f = vit_flops(cfg)
        if 2 * f["attn_products"] >= f["total"]:
            out.update(resolution=r, tokens=cfg.seq_len)
            break
    return out


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
        ``decoder_flops``, ``total_flops``, ``encoder_flop_ratio`` (:func:`encoder_flops_ratio`).
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
            "encoder_flop_ratio": base / f["encoder"],
        })
    return rows
