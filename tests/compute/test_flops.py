"""Closed-form FLOPs/params (vitviz.flops) against FlopCounterMode and timm, and the timing routine."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import vitviz.compute.formulas as compute_formulas
import vitviz.compute.measure as compute_measure
import vitviz.compute.tables as compute_tables
from vitviz.models.mae import MAEConfig, MaskedAutoencoderViT
from vitviz.models.registry import MAE_TINY_CONFIG

timm = pytest.importorskip("timm")

TOL = 0.02  # the tolerance; the formulas are in fact exact for these modules


def counted(fn, *args) -> int:  # noqa: ANN001
    """FLOPs of ``fn(*args)`` as FlopCounterMode counts them (2 per multiply-add)."""
    with torch.inference_mode(), FlopCounterMode(display=False) as fc:
        fn(*args)
    return fc.get_total_flops()


def unfuse(model: nn.Module) -> nn.Module:
    """Use the explicit attention path: FlopCounterMode has no formula for CPU's fused
    ``_scaled_dot_product_flash_attention_for_cpu``, so fused attention would count as 0."""
    for m in model.modules():
        if hasattr(m, "fused_attn"):
            m.fused_attn = False
    return model


def seeded(build, seed: int = 0) -> nn.Module:  # noqa: ANN001
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build().eval()


def close(formula: int, count: int) -> bool:
    return abs(formula - count) <= TOL * count


@pytest.fixture(scope="module")
def vit_b16() -> nn.Module:
    return unfuse(seeded(lambda: timm.create_model("vit_base_patch16_224", pretrained=False)))


@pytest.fixture(scope="module")
def swin_t() -> nn.Module:
    return unfuse(seeded(lambda: timm.create_model("swin_tiny_patch4_window7_224", pretrained=False)))


@pytest.fixture(scope="module")
def mae_b() -> MaskedAutoencoderViT:
    return unfuse(seeded(lambda: MaskedAutoencoderViT(MAEConfig())))


@pytest.fixture(scope="module")
def image() -> torch.Tensor:
    return torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))


# ---------------------------------------------------------------------------- classic table


def test_classic_table_exact() -> None:
    rows = compute_tables.classic_table(dim=96, window=7)
    assert [r["tokens"] for r in rows] == [196, 784, 3136, 12544]
    assert [r["products_flop_ratio"] for r in rows] == [Fraction(4), Fraction(16), Fraction(64), Fraction(256)]
    for r in rows:
        n = r["tokens"]
        # QK^T and AV, each N*N*C multiply-adds over all heads, 2 FLOPs per multiply-add.
        assert r["global_products_flops"] == 2 * (2 * n * n * 96)
        assert r["windowed_products_flops"] == 2 * (2 * n * 49 * 96)
        # Swin paper, eq. (1)-(2), in multiply-adds: 4hwC^2 + 2(hw)^2C vs 4hwC^2 + 2M^2hwC.
        assert r["global_layer_flops"] == 2 * (4 * n * 96**2 + 2 * n * n * 96)
        assert r["windowed_layer_flops"] == 2 * (4 * n * 96**2 + 2 * 49 * n * 96)


@pytest.mark.parametrize("heads", [1, 3])
def test_attention_products_match_counter(heads: int) -> None:
    n, c, side, win = 196, 96, 14, 7
    q = torch.randn(1, heads, n, c // heads)
    assert counted(compute_measure._plain_attention, q, q, q) == compute_formulas.global_attention_flops(n, c)
    assert counted(compute_measure._windowed_attention, q, q, q, side, win) == compute_formulas.windowed_attention_flops(side, c, win)


def test_windowed_clamps_and_pads_like_timm() -> None:
    # a 5x5 grid is one clamped window: windowed == global
    assert compute_formulas.windowed_attention_flops(5, 32, 7) == compute_formulas.global_attention_flops(25, 32)
    # 24x24 is padded to 28x28: 16 windows of 49
    assert compute_formulas.window_count(24, 7) == (16, 49)
    assert compute_formulas.windowed_attention_flops(24, 32, 7) == 16 * 4 * 49 * 49 * 32


# ---------------------------------------------------------------------------- real timm modules


def test_vit_b16_matches_counter(vit_b16: nn.Module, image: torch.Tensor) -> None:
    cfg = compute_formulas.VIT_CONFIGS["ViT-B/16"]
    assert close(compute_formulas.vit_flops(cfg)["total"], counted(vit_b16, image))
    assert compute_formulas.vit_params(cfg) == sum(p.numel() for p in vit_b16.parameters())


def test_vit_fused_attention_matches_counter_with_sdpa_formula() -> None:
    """With timm's fused path, count CPU flash attention with torch's own sdpa formula."""
    from torch.utils.flop_counter import sdpa_flop_count

    op = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    if op is None:
        pytest.skip("no CPU flash-attention op in this torch")

    def cpu_flash(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs):  # noqa: ANN001, ANN202
        return sdpa_flop_count(query_shape, key_shape, value_shape)

    cfg = compute_formulas.ViTConfig(img_size=64, patch_size=8, embed_dim=64, depth=2, num_heads=4, num_classes=10)
    model = seeded(lambda: timm.models.vision_transformer.VisionTransformer(
        img_size=64, patch_size=8, embed_dim=64, depth=2, num_heads=4, num_classes=10))
    x = torch.randn(1, 3, 64, 64)
    with torch.inference_mode(), FlopCounterMode(display=False, custom_mapping={op: cpu_flash}) as fc:
        model(x)
    assert close(compute_formulas.vit_flops(cfg)["total"], fc.get_total_flops())


def test_swin_t_matches_counter(swin_t: nn.Module, image: torch.Tensor) -> None:
    assert close(compute_formulas.swin_flops(compute_formulas.SWIN_T)["total"], counted(swin_t, image))
    assert compute_formulas.swin_params(compute_formulas.SWIN_T) == sum(p.numel() for p in swin_t.parameters())
    # Swin-T is 4.5 G multiply-adds
    assert round(compute_formulas.swin_flops()["total"] / 2e9, 1) == 4.5


def test_small_swin_with_padding_and_clamped_window() -> None:
    """24x24 tokens pad to 28x28, 12x12 pad to 14x14, 6x6 clamps the window to 6 and drops the shift."""
    from timm.models.swin_transformer import SwinTransformer

    kw = dict(img_size=96, embed_dim=24, depths=(2, 2, 2), num_heads=(1, 2, 4), num_classes=10)
    model = seeded(lambda: SwinTransformer(patch_size=4, window_size=7, **kw))
    cfg = compute_formulas.SwinConfig(**kw)
    assert close(compute_formulas.swin_flops(cfg)["total"], counted(model, torch.zeros(1, 3, 96, 96)))
    assert compute_formulas.swin_params(cfg) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("ratio", [0.0, 0.5, 0.75, 0.9])
def test_mae_b_encoder_and_decoder_match_counter(mae_b: MaskedAutoencoderViT, image: torch.Tensor,
                                                 ratio: float) -> None:
    cfg = mae_b.config
    k = compute_formulas.mae_visible_tokens(cfg, ratio)
    ids_keep = torch.randperm(cfg.num_patches, generator=torch.Generator().manual_seed(1))[:k]
    expected = compute_formulas.mae_flops(cfg, ratio)
    assert close(expected["encoder"], counted(mae_b.forward_encoder, image, ids_keep))
    with torch.inference_mode():
        latent = mae_b.forward_encoder(image, ids_keep)
    assert close(expected["decoder"], counted(mae_b.forward_decoder, latent, ids_keep))
    assert expected["total"] == expected["encoder"] + expected["decoder"]


def test_mae_tiny_all_ratios_match_counter(image: torch.Tensor) -> None:
    model = unfuse(seeded(lambda: MaskedAutoencoderViT(MAE_TINY_CONFIG)))
    for ratio in (0.0, 0.5, 0.75, 0.95):
        k = compute_formulas.mae_visible_tokens(MAE_TINY_CONFIG, ratio)
        assert close(compute_formulas.mae_flops(MAE_TINY_CONFIG, ratio)["total"], counted(model, image, torch.arange(k)))


def test_encoder_flops_ratio() -> None:
    cfg = MAEConfig()
    assert compute_formulas.mae_visible_tokens(cfg, 0.75) == 49
    assert compute_formulas.encoder_flops_ratio(cfg, 0.0) == 1.0
    assert 3.9 < compute_formulas.encoder_flops_ratio(cfg, 0.75) < 4.1
    ratios = [compute_formulas.encoder_flops_ratio(cfg, r / 20) for r in range(20)]
    assert ratios == sorted(ratios)
    assert set(compute_formulas.mae_configs()) >= {"MAE ViT-B/16", "MAE ViT-L/16", "MAE ViT-H/14", "mae-tiny"}
    for c in compute_formulas.mae_configs().values():
        assert compute_formulas.mae_flops(c, 0.75)["encoder"] < compute_formulas.mae_flops(c, 0.0)["encoder"]


def test_tables() -> None:
    models = compute_tables.model_scaling_rows((224, 448, 896))
    assert [r["vit_over_swin"] for r in models] == sorted(r["vit_over_swin"] for r in models)
    patches = compute_tables.patch_size_rows(224, "ViT-B/16", (8, 16, 32))
    assert [r["seq_len"] for r in patches] == [785, 197, 50]
    rows = compute_tables.attention_scaling_rows(96, 7)
    assert all(r["windowed_products_flops"] <= r["global_products_flops"] for r in rows)
    with pytest.raises(ValueError, match="ViT-B/16"):
        compute_tables.patch_size_rows(224, "ViT-Z")


# ---------------------------------------------------------------------------- measured timing


def test_timing_stops_at_size_budget() -> None:
    sweep = compute_measure.measure_attention_scaling(max_tokens=196, time_budget_s=60, min_timing_s=0.0, max_repeats=1)
    assert sweep.stop_reason == "size"
    assert {(r.method, r.tokens) for r in sweep.rows} == set(itertools.product(compute_measure.METHODS, (49, 196)))
    assert all(math.isfinite(r.seconds) and r.flops > 0 for r in sweep.rows)  # every row was measured
    assert sweep.threads == torch.get_num_threads()


def test_timing_stops_at_time_budget_real_clock() -> None:
    sweep = compute_measure.measure_attention_scaling(time_budget_s=1e-6, min_timing_s=0.0, max_repeats=1)
    assert sweep.stop_reason == "time"
    assert {r.tokens for r in sweep.rows} <= {49}


def test_timing_stops_at_time_budget_fake_clock() -> None:
    ticks = itertools.count()
    sweep = compute_measure.measure_attention_scaling(time_budget_s=40, max_repeats=1, min_timing_s=0.0,
                                        clock=lambda: float(next(ticks)))
    assert sweep.stop_reason == "time"
    assert 0 < len({r.tokens for r in sweep.rows}) < len(compute_measure.default_sides())


def test_timing_retires_plain_attention_at_memory_budget() -> None:
    n = 441
    budget = compute_measure.predicted_attention_bytes("global_plain", n, 96, 3, 7) + 3 * n * 96 * 4 - 1
    sweep = compute_measure.measure_attention_scaling(max_tokens=784, memory_budget_bytes=budget, min_timing_s=0.0,
                                        max_repeats=1)
    assert sweep.retired.get("global_plain") == "memory"
    assert max(r.tokens for r in sweep.by_method("global_plain")) == 196
    assert max(r.tokens for r in sweep.by_method("windowed")) == 784


def test_measured_memory_shows_the_n_by_n_matrix() -> None:
    sweep = compute_measure.measure_attention_scaling(max_tokens=784, min_timing_s=0.0, max_repeats=1)
    for r in sweep.rows:
        n_sq = 3 * r.tokens * r.tokens * 4  # one (heads, N, N) float32 matrix
        if r.method == "global_plain":
            assert r.peak_bytes >= 2 * n_sq
        if r.method == "global_sdpa" and r.tokens >= 196:
            assert r.peak_bytes < n_sq / 4
        assert r.peak_bytes <= r.predicted_bytes


def test_crossover_definition() -> None:
    def row(m: str, n: int, s: float) -> compute_measure.TimingRow:
        return compute_measure.TimingRow(m, n, 0, s, 0, 0, 1, 1)

    rows = (row("global_sdpa", 49, 1.0), row("windowed", 49, 2.0), row("global_sdpa", 196, 2.0),
            row("windowed", 196, 1.0), row("global_sdpa", 441, 3.0), row("windowed", 441, 4.0),
            row("global_sdpa", 784, 9.0), row("windowed", 784, 2.0))
    sweep = compute_measure.TimingSweep(rows, "size", 0.0, 1, "cpu", "float32", 96, 3, 7)
    assert sweep.crossover("global_sdpa") == 784
    assert compute_measure.TimingSweep(rows[:4], "size", 0.0, 1, "cpu", "float32", 96, 3, 7).crossover() == 196
    assert compute_measure.TimingSweep(rows[:1], "size", 0.0, 1, "cpu", "float32", 96, 3, 7).crossover() is None


def test_timing_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        compute_measure.measure_attention_scaling(dim=95, num_heads=3)
    with pytest.raises(ValueError):
        compute_measure.measure_attention_scaling(sides=[10])
    with pytest.raises(ValueError):
        compute_measure.measure_attention_scaling(methods=["nope"])
    with pytest.raises(ValueError):
        compute_measure.measure_attention_scaling(time_budget_s=0)
