"""The model cards' figures equal their JSON, and the mask count they state is the generator's (issue 33)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vitviz.assets import assets_dir
from vitviz.beit.masking import block_mask
from vitviz.models.registry import BEIT_TINY_CONFIG
from vitviz.training.evaluate import markdown

MODELS = assets_dir() / "models"


def _card(name: str) -> str:
    return (MODELS / name).read_text(encoding="utf-8")


def _json(name: str) -> dict:
    return json.loads((MODELS / name).read_text())


def test_mae_card_tables_are_the_evaluators_tables() -> None:
    card = _card("README.md")
    val = _json("heldout.json")
    labels = [m.split("=")[0] for m in val["models"]]
    assert markdown(val["rows"], val["summary"], labels) in card
    test = _json("mae-tiny.test.json")
    assert test["split"] == "test" and test["seeds"] == val["seeds"] and test["ratio"] == val["ratio"]
    assert markdown(test["rows"], test["summary"], ["mae-tiny"]) in card
    s = test["summary"]
    assert f"scores **{s['mae-tiny_ratio']:.3f}**, **{s['mae-tiny_mosaic']:.2f}** and **{s['mae-tiny_locality']:.2f}**" in card
    assert len(test["rows"]) == len(_json("testset.json")["photos"])


def _pct_row(t: dict, keys: tuple[str, ...]) -> str:
    return " | ".join(f"**{100 * t[k]:.2f}%**" for k in keys)


@pytest.mark.parametrize("table", ["beit-tiny.heldout.json", "beit-tiny.test.json"])
def test_beit_card_pooled_figures_equal_its_json(table: str) -> None:
    card = _card("beit-tiny.md")
    data = _json(table)
    for pattern in ("block", "random"):
        t = data[pattern]
        assert f"| **{100 * t['top1']:.2f}%** | **{100 * t['top5']:.2f}%** |" in card
        assert f"**{100 * t['most_frequent']:.2f}%** | **{100 * t['nearest_visible']:.2f}%** |" in card
        for name, v in t["per_image"].items():
            assert f"| {name} | {100 * v['top1']:.1f}% | {100 * v['top5']:.1f}% |" in card


@pytest.mark.parametrize("table", ["vq-tiny.heldout.json", "vq-tiny.test.json"])
def test_vq_card_figures_equal_its_json(table: str) -> None:
    card = _card("vq-tiny.md")
    data = _json(table)
    assert f"| **mean** | **{data['mean_vq_mse']:.5f}** | **{data['mean_vq_psnr']:.2f}** |" in card
    for name, v in data["per_image"].items():
        assert f"| {name} | {v['vq_mse']:.5f} | {v['vq_psnr']:.2f} |" in card


def test_beit_card_states_the_generators_mask_count() -> None:
    gh, gw = BEIT_TINY_CONFIG.grid
    counts = {int(block_mask((gh, gw), 0.4, np.random.default_rng(s)).sum()) for s in range(10)}
    assert len(counts) == 1
    (n,) = counts
    card = _card("beit-tiny.md")
    assert f"40% ({n} of {gh * gw})" in card
    total = _json("beit-tiny.heldout.json")["block"]["hidden_patches"]
    assert total == n * 13 * 10 and f"{total:,} hidden patches" in card


@pytest.mark.parametrize("table,label", [("beit-tiny-v2.heldout.json", "validation (13 photos)"),
                                         ("beit-tiny-v2.test.json", "test, looked at once (8 photos)")])
def test_beit_v2_card_figures_equal_its_json(table: str, label: str) -> None:
    card = _card("beit-tiny-v2.md")
    data = _json(table)
    assert data["tokenizer"] == "vq-kd-tiny" and f"**{data['step']} steps**" in card
    b = data["block"]
    assert (f"| {label} | **beit-tiny-v2 on vq-kd-tiny** | {b['hidden_patches']:,} | **{100 * b['top1']:.2f}%** | "
            f"**{100 * b['top5']:.2f}%** | {100 * b['most_frequent']:.2f}% | **{100 * b['nearest_visible']:.2f}%** |") in card
    r = data["random"]
    split = label.split(" ")[0].rstrip(",")
    assert (f"| {split} | beit-tiny-v2 on vq-kd-tiny | {100 * r['top1']:.2f}% | {100 * r['top5']:.2f}% | "
            f"{100 * r['most_frequent']:.2f}% | {100 * r['nearest_visible']:.2f}% |") in card


@pytest.mark.parametrize("table,label", [("vq-kd-tiny.heldout.json", "validation"),
                                         ("vq-kd-tiny.test.json", "test, looked at once")])
def test_vqkd_card_figures_equal_its_json(table: str, label: str) -> None:
    d = _json(table)
    photos = len(d["per_image"]) if "per_image" in d else d["tokens"] // 196
    assert (f"| {label} | {photos} ({d['tokens']:,}) | **{d['cosine']:.3f}** | {d['kmeans_cosine']:.3f} | "
            f"{d['codes_used']} / {d['perplexity']:.1f} | {d['kmeans_codes_used']} / {d['kmeans_perplexity']:.1f} |"
            ) in _card("vq-kd-tiny.md")


def test_vqkd_grouping_table_equals_its_json() -> None:
    card = _card("vq-kd-tiny.md")
    g = _json("vq-kd-tiny.grouping.json")["tokenizers"]
    for name, label in (("vq-tiny", "vq-tiny (pixel codes)"), ("vq-kd-tiny", "vq-kd-tiny (VQ-KD)")):
        t = g[name]
        assert (f"| {label} | {t['codes_used']} | {100 * t['purity']:.1f}% | {100 * t['shuffled_purity']:.1f}% | "
                f"{t['ratio']:.2f} |") in card
