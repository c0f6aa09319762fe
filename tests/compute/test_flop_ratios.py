"""The FLOP ratios the Compute tab shows equal their closed forms (issue 22)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from vitviz.compute.formulas import (ViTConfig, quadratic_crossover_tokens, vit_block_flops, vit_flops,
                                     whole_windows, window_count)
from vitviz.compute.tables import classic_table, quadratic_crossover
from vitviz.views import compute as cv


@pytest.mark.parametrize("dim", [96, 192])
def test_classic_ratios_equal_the_swin_formulas(dim):
    m = 7
    for r in classic_table(dim, m):
        n = r["tokens"]
        assert r["exact_n_over_m2"] and not r["padded"] and not r["clamped"]
        assert r["products_flop_ratio"] == Fraction(n, m * m) == r["n_over_m2"]
        assert r["layer_flop_ratio"] == pytest.approx((2 * dim + n) / (2 * dim + m * m), rel=1e-12)


def test_padded_windows_break_n_over_m2():
    # M = 8 on a 14x14 grid: timm pads to 16x16 = 4 windows of 64 tokens, all computed.
    assert not whole_windows(14, 8)
    assert window_count(14, 8) == (4, 64)
    (r,) = classic_table(96, 8, sides=(14,))
    assert r["padded"] and r["padded_side"] == 16 and not r["exact_n_over_m2"]
    assert r["products_flop_ratio"] == Fraction(196 * 196, 4 * 64 * 64)  # 2401/1024 = 2.34
    assert r["n_over_m2"] == Fraction(196, 64)
    assert r["products_flop_ratio"] < r["n_over_m2"]


def test_a_window_larger_than_the_grid_is_clamped():
    (r,) = classic_table(96, 16, sides=(14,))
    assert r["clamped"] and r["window_used"] == 14
    assert r["products_flop_ratio"] == 1


@pytest.mark.parametrize("window", [7, 8, 16])
def test_the_table_shows_the_computed_ratios_under_their_labels(window):
    text = cv.classic_markdown(96, window)
    assert cv.PRODUCTS_RATIO_LABEL == "FLOP ratio, QKᵀ+AV" and cv.PRODUCTS_RATIO_LABEL in text
    assert cv.LAYER_RATIO_LABEL == "FLOP ratio, attention layer" and cv.LAYER_RATIO_LABEL in text
    for r in classic_table(96, window):
        assert f"**{float(r['products_flop_ratio']):.3g}x**".replace(".0x", "x") in text or \
            f"**{r['products_flop_ratio']}x**" in text
        assert f"{r['layer_flop_ratio']:.3g}x" in text


def test_the_padded_note_states_the_computed_figure():
    text = cv.classic_markdown(96, 8)
    (r,) = classic_table(96, 8, sides=(14,))
    assert f"**{float(r['products_flop_ratio']):.3g}x**, not N/M² = {float(r['n_over_m2']):.3g}" in text


def test_quadratic_crossover_matches_the_block_formula():
    d = 768
    n = quadratic_crossover_tokens(d)
    assert n == 6 * d
    # At n tokens the products 4 N^2 D equal the rest of the block.
    products = 4 * n * n * d
    assert vit_block_flops(n, d) == 2 * products
    cross = quadratic_crossover(ViTConfig())
    f = vit_flops(ViTConfig())
    assert cross["share_at_base"] == f["attn_products"] / f["total"] < 0.05
    big = vit_flops(ViTConfig(img_size=cross["resolution"]))
    below = vit_flops(ViTConfig(img_size=cross["resolution"] - 16))
    assert 2 * big["attn_products"] >= big["total"] and 2 * below["attn_products"] < below["total"]


def test_the_models_note_shows_the_computed_share_and_crossover():
    text = cv.models_markdown()
    cross = quadratic_crossover(ViTConfig())
    assert f"{cross['share_at_base']:.1%}" in text
    assert f"{cross['resolution']} px" in text and f"{quadratic_crossover_tokens(768):,} tokens" in text
