"""Figures the help quotes from papers' tables, held to the tables as printed (transcribed here once, each with
its table and arXiv version; docs/sources.md names the same rows). A help text that rounds a value differently,
or quotes a row the table does not have, fails."""

from __future__ import annotations

from vitviz.ui import helptext

#: ViT (arXiv:2010.11929v2) appendix D.4, table 8, "Default/Stem" column: ViT-B/16, ImageNet 5-shot linear.
VIT_TABLE_8 = {"none": 0.61382, "1-D": 0.64206, "2-D": 0.64001, "relative": 0.64032}
#: Swin (arXiv:2103.14030v2) §4.4, table 4, Swin-T: (ImageNet top-1, COCO box AP, ADE20K mIoU).
SWIN_TABLE_4 = {"w/o shifting": (80.2, 47.7, 43.3), "shifted windows": (81.3, 50.5, 46.1),
                "no pos.": (80.1, 49.2, 43.8), "abs. pos.": (80.5, 49.0, 43.2), "rel. pos.": (81.3, 50.5, 46.1)}
#: MAE (arXiv:2111.06377v3) table 1c: (fine-tune, linear) with and without mask tokens in the encoder.
MAE_TABLE_1C = {"encoder w/ [M]": (84.2, 59.6), "encoder w/o [M]": (84.9, 73.5)}


def test_position_embedding_ablation_quotes_vit_table_8():
    text = helptext.read("patches", "shuffle")
    none, one, two, rel = (f"{100 * VIT_TABLE_8[k]:.1f}%" for k in ("none", "1-D", "2-D", "relative"))
    assert f"reached {none}" in text and f"against {one} with 1-D, {two} with 2-D and {rel} with relative" in text
    assert "table 8" in text


def test_shifting_and_bias_quote_swin_table_4():
    intro, bias = helptext.read("swin", "intro"), helptext.read("swin", "bias")
    (t0, b0, m0), (t1, b1, m1) = SWIN_TABLE_4["w/o shifting"], SWIN_TABLE_4["shifted windows"]
    assert f"top-1 {t1}% against {t0}%" in intro and f"box AP {b1} against {b0}" in intro
    assert f"mIoU {m1} against {m0}" in intro and "table 4" in intro
    (tn, _, mn), (ta, _, ma), (tr, _, mr) = (SWIN_TABLE_4[k] for k in ("no pos.", "abs. pos.", "rel. pos."))
    assert f"{tr}% against {tn}% with no position information and {ta}%" in bias
    assert f"mIoU {mr} against {mn} and {ma}" in bias and "table 4" in bias


def test_mask_tokens_in_the_encoder_quote_mae_table_1c():
    text = " ".join(helptext.read("mae", "provenance").split())
    (ft_m, lin_m), (ft, lin) = MAE_TABLE_1C["encoder w/ [M]"], MAE_TABLE_1C["encoder w/o [M]"]
    assert f"fine-tuning {ft} → {ft_m}, linear probing {lin} → {lin_m}" in text and "table 1c" in text
