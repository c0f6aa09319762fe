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


def _tour_notice(title: str) -> str:
    import tomllib
    from importlib import resources

    steps = tomllib.loads((resources.files("vitviz.ui") / "helptext" / "tour.toml").read_text())["step"]
    return " ".join(next(s for s in steps if s["title"] == title)["notice"].split())


def test_beit_predict_line_sets_the_model_against_copying_the_nearest_code_as_the_tour_says():
    from vitviz.assets import example_images
    from vitviz.views.beit import predict_view

    photo = next(p for p in example_images() if str(p).endswith("chelsea.jpg"))
    v = predict_view(photo, "beit-tiny", 0.4, 0, "block")
    assert "Copying the nearest visible patch's code gets **5.1%**" in v.text and "top-1 **3.8%**" in v.text
    assert "does not beat that baseline" in v.text
    assert "(on the cat photo, copying does better)" in _tour_notice("Guess the hidden tokens")


def test_the_tour_says_which_encoders_sit_above_their_random_twins():
    from vitviz.probing.api import linear_probe

    mean = {r: dict(zip((1, 5), linear_probe("mae-tiny", -1, "cls", (1, 5), random_init=r).mean())) for r in (0, 1)}
    assert mean[0][1] < mean[1][1]  # below its twin with 1 label a class
    gap5 = round(100 * mean[0][5], 1) - round(100 * mean[1][5], 1)
    assert f"mae-tiny is below its twin with 1 label a class, {gap5:.1f} points above with 5" in _tour_notice(
        "Does pretraining pay off?")


def test_semantic_codes_are_described_by_what_the_grouping_measured():
    import json

    from vitviz.assets import model_file
    from vitviz.views.beit_pair import grouping_comparison

    g = json.loads(model_file("vq-kd-tiny.grouping.json").read_text())["tokenizers"]
    text = grouping_comparison()
    assert f"({g['vq-kd-tiny']['ratio']:.2f}× against {g['vq-tiny']['ratio']:.2f}×" in text
    assert ("no more than" in text) == (g["vq-kd-tiny"]["ratio"] <= g["vq-tiny"]["ratio"])
    assert "follow objects, pixel codes colours" not in _tour_notice("Two kinds of visual words")


def test_the_448_px_timing_is_the_cards():
    from vitviz.assets import assets_dir

    card = (assets_dir() / "models" / "dinov2-small.md").read_text()
    assert "its forward took 7.3× as long as at 224 px" in card and "took 7.3× as long" in av.READOUT["dinov2"]


def test_the_beit_help_quotes_beit_tiny_v2s_card_and_part_3_opens_on_beit_tiny():
    import json

    from vitviz.assets import model_file
    from vitviz.views import beit as bv

    t = json.loads(model_file("beit-tiny-v2.test.json").read_text())["block"]
    text = " ".join(helptext.sections("beit")["kinds"].split())
    assert (f"guesses {100 * t['top1']:.2f}% of hidden tokens on the test photos against "
            f"{100 * t['nearest_visible']:.2f}% for copying the nearest visible code") in text
    assert t["top1"] < t["nearest_visible"] and bv.BEIT_MODEL == "beit-tiny" and "part 3 opens on beit-tiny" in text


def test_the_tour_says_which_way_each_models_heads_widen_on_the_cat(dinov2_small):
    """The step after layer 1 warns that dinov2-small's layer-1 heads look farther than its layer 6's (the
    Attention tab's default where its weights are here) while mae-tiny's widen: the mean attention distance per
    layer (mean over heads) the app computes for the tour's photo, in pixels."""
    import numpy as np

    from vitviz.assets import example_images

    photo = next(p for p in example_images() if str(p).endswith("chelsea.jpg"))
    per_layer, uniform = {}, {}
    for name in ("dinov2-small", "mae-tiny"):
        _, maps = av.maps_for(photo, name, "encoder", 0.0, 0)
        per_layer[name], uniform[name] = maps.mean_distance().mean(axis=1), maps.uniform_distance()
    d, m, u = per_layer["dinov2-small"], per_layer["mae-tiny"], uniform["dinov2-small"]
    assert d[0] > d[5] and m[0] < m[5] and np.all(d < u)
    assert (f"dinov2-small's layer-1 heads look farther than its layer 6's (mean attention distance {d[0]:.0f} px "
            f"against {d[5]:.0f}; uniform attention {u:.0f} px), while mae-tiny's widen with depth "
            f"({m[0]:.0f} px, then {m[5]:.0f})") in _tour_notice("The same patch, deeper")
