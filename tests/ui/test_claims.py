"""What the tabs say equals what the library computes (issue 22)."""

from __future__ import annotations

from vitviz.compute.formulas import mae_flops
from vitviz.core.masking import NESTED_PATTERNS, PATTERNS
from vitviz.models.registry import MAE_TINY_CONFIG
from vitviz.ui import helptext
from vitviz.views import attention as av
from vitviz.views import mae as mae_view


def test_nesting_sentence_names_exactly_the_nested_patterns():
    text = mae_view.nesting_sentence()
    nested_part, _, redrawn_part = text.partition(";")
    for p in PATTERNS:
        assert (f"*{p}*" in nested_part) == (p in NESTED_PATTERNS)
        assert (f"*{p}*" in redrawn_part) == (p not in NESTED_PATTERNS)
    assert "__NESTING__" in helptext.sections("mae")["pattern"]  # the MAE tab's pattern help says it
    assert text in helptext.read("mae", "pattern", nesting=text)


def test_encoder_help_states_the_computed_decoder_cost():
    f = mae_flops(MAE_TINY_CONFIG, 0.75)
    text = mae_view.encoder_help()
    assert f"{f['decoder'] / 1e9:.2f} GFLOPs against the encoder's {f['encoder'] / 1e9:.2f}" in text


def test_every_attention_family_says_what_reads_its_class_token():
    assert set(av.FAMILIES) <= set(av.READOUT)
    assert "averaged" in av.READOUT["deit"] and "no classifier" in av.READOUT["dino"]
