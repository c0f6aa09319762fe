"""The mae-tiny model card states the parameter counts of the model it ships with (issue 22)."""

from __future__ import annotations

import re

import pytest

from vitviz.assets import assets_dir
from vitviz.models.loading import load_model

#: Fixed sin-cos tables (not learned, ``requires_grad=False`` in MAE): the card does not count them.
FIXED = {"pos_embed", "decoder_pos_embed"}


def _counts() -> dict[str, int]:
    sd = load_model("mae-tiny").module.state_dict()
    dec = {k for k in sd if k.startswith("decoder") or k == "mask_token"}
    enc = sum(v.numel() for k, v in sd.items() if k not in FIXED and k not in dec)
    de = sum(v.numel() for k, v in sd.items() if k not in FIXED and k in dec)
    return {"encoder": enc, "decoder": de, "total": enc + de}


def _card_row() -> str:
    card = (assets_dir() / "models" / "README.md").read_text(encoding="utf-8")
    row = next((line for line in card.splitlines() if line.startswith("| architecture |")), None)
    assert row is not None, "the model card has no architecture row"
    return row


def test_card_parameter_counts_equal_the_loaded_model():
    row, n = _card_row(), _counts()
    enc = re.search(r"encoder[^;]*?\(([\d.]+) M learnable parameters\)", row)
    dec = re.search(r"decoder[^;]*?\(([\d.]+) M\)", row)
    total = re.search(r"([\d.]+) M in total", row)
    assert enc and dec and total, row
    assert float(enc.group(1)) == pytest.approx(n["encoder"] / 1e6, abs=0.005)
    assert float(dec.group(1)) == pytest.approx(n["decoder"] / 1e6, abs=0.005)
    assert float(total.group(1)) == pytest.approx(n["total"] / 1e6, abs=0.005)


def test_card_states_the_block_count_of_the_model():
    cfg = load_model("mae-tiny").module.config
    row = _card_row()
    assert f"encoder {cfg.embed_dim} wide, {cfg.depth} blocks, {cfg.num_heads} heads" in row
    assert f"decoder {cfg.decoder_embed_dim} wide, {cfg.decoder_depth} blocks" in row
    assert "ViT-Tiny/16" not in row  # ViT-Ti has 12 blocks (DeiT table 1); the card must not say ViT-Ti
