"""The Pretraining tab's view: probe curves from cached features, every protocol, the verdict from the logs."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

import vitviz
from vitviz.errors import ModelUnavailable
from vitviz.probing.protocols import shipped_summary
from vitviz.views import pretraining as v


def test_choices_follow_the_files_on_disk_each_random_version_after_its_encoder():
    keys = [k for _, k in v.encoder_choices()]
    assert {"dinov2-small", "dinov2-small-random", "mae-tiny", "mae-tiny-random", "beit-tiny",
            "beit-tiny-random"} <= set(keys)
    for key in keys:
        if key.endswith("-random") and key[:-7] in keys:
            assert keys.index(key) == keys.index(key[:-7]) + 1
    assert v.label("mae-tiny-random") == "mae-tiny (random weights)"


def test_probe_view_reads_cached_features_and_never_runs_an_encoder(monkeypatch):
    def no_encoder(*a, **k):
        raise AssertionError("an encoder was loaded")

    monkeypatch.setattr("vitviz.models.loading.load_model", no_encoder)
    monkeypatch.setattr("vitviz.probing.features.extract", no_encoder)
    seen = []
    probe = v.probe_view(["mae-tiny", "dinov2-small"], "last", "avg", progress=lambda d, t: seen.append(d))
    fig, table, caption = probe.probe_plot, probe.probe_table, probe.probe_text
    assert seen == [1, 2]
    assert isinstance(fig, go.Figure)
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [t.name.split(" ·")[0] for t in lines] == ["dinov2-small", "mae-tiny"]  # display order, not asked order
    # the figure's points are the API's numbers
    api = vitviz.linear_probe("mae-tiny", layer=-1, pooling="avg")
    np.testing.assert_allclose(lines[1].y, 100 * api.mean())
    np.testing.assert_allclose(lines[1].error_y.array, 100 * api.spread())
    assert f"{100 * api.at(5)[0]:.1f}% ± {100 * api.at(5)[1]:.1f}" in table
    assert "chance is 12.5%" in caption
    assert any(getattr(s, "type", None) == "line" and s.y0 == pytest.approx(12.5) for s in fig.layout.shapes)


def test_depth_is_a_share_of_each_encoders_depth():
    probe = v.probe_view("dinov2-small,mae-tiny", "1/2", "cls")
    fig, table = probe.probe_plot, probe.probe_table
    assert "| dinov2-small | 6 of 12 |" in table and "| mae-tiny | 4 of 8 |" in table
    probe = v.probe_view(["mae-tiny"], "0", "cls")
    fig, table = probe.probe_plot, probe.probe_table
    assert "| mae-tiny | 0 of 8 |" in table


def test_bad_choices_are_sentences():
    with pytest.raises(ValueError, match="at least one encoder"):
        v.probe_view([], "last", "cls")
    with pytest.raises(ModelUnavailable, match="have: dinov2-small"):
        v.probe_view(["vit-huge"], "last", "cls")
    with pytest.raises(ValueError, match="depth must be one of"):
        v.probe_view(["mae-tiny"], "deep", "cls")
    with pytest.raises(ValueError, match="pooling must be cls or avg"):
        v.probe_view(["mae-tiny"], "last", "max")


def test_protocols_show_every_run_of_the_logs_and_the_probes():
    p = v.protocols_view("cls")
    bars, epochs, recipes, verdict = p.bars, p.epochs, p.recipes, p.verdict
    summary = shipped_summary(v.SCHEDULE)
    names = [t.y[0] for t in bars.data if t.type == "bar"]
    for run in summary.values():
        name = next(n for n in names if n.startswith(run["name"]))
        trace = next(t for t in bars.data if t.type == "bar" and t.y[0] == name)
        assert trace.x[0] == pytest.approx(100 * run["mean"], abs=1e-3)
    assert any(n == "linear probe: dinov2-small" for n in names)
    assert len([t for t in epochs.data if t.mode == "lines+markers"]) == len(summary)
    assert "| 0.75 |" in recipes and "0, 1, 2" in recipes
    assert f"{100 * summary['scratch-cnn']['mean']:.1f}%" in verdict
    assert verdict.count(".") >= 1 and verdict.strip().endswith(".")


def _run(mean: float, spread: float) -> dict:
    return {"name": "x", "mean": mean, "spread": spread, "test_acc": [mean] * 3, "epochs": 10}


def test_verdict_is_computed_not_written():
    base = shipped_summary(v.SCHEDULE)
    assert v.verdict(base).startswith("**It reproduces")
    tied = dict(base, **{"scratch-vit": _run(0.5, 0.01), "scratch-cnn": _run(0.45, 0.01)})
    assert v.verdict(tied).startswith("**It does not reproduce")
    close = dict(base, **{"scratch-vit": _run(0.44, 0.03), "scratch-cnn": _run(0.46, 0.03)})
    assert v.verdict(close).startswith("**Not clearly")
    closes = dict(base, **{"ft": _run(58 / 64, 0.0)})
    assert "90.6%, 58 of 64 on every seed at best) closes the gap" in v.verdict(closes)
    assert "no verdict" in v.verdict({})


def test_a_spread_of_zero_says_every_seed_scored_the_same():
    """The verdict said the from-scratch ViT scored "32.8% ± 0.0": every seed got 21 of the 64 test photos."""
    assert v.accuracy_text(21 / 64, 0.0, 3, 64) == "32.8%, 21 of 64 on every seed"
    assert v.accuracy_text(0.495, 0.019, 3, 64) == "49.5% ± 1.9"
    assert v.accuracy_text(21 / 64, 0.0, 1, 64) == "32.8% (one seed)"  # no spread measured, none claimed
    base = shipped_summary(v.SCHEDULE)
    if base.get("scratch-vit", {}).get("spread") == 0.0:
        assert "± 0.0" not in v.verdict(base) and "on every seed" in v.verdict(base)


def test_the_llrd_formula_states_its_base_and_agrees_with_the_features_tab():
    """The protocols' help wrote 0.75^(depth − i) without saying blocks count from 0 while the Features tab counts
    them from 1 (0 the embeddings): both forms are stated, and both are the multipliers the fine-tuning used."""
    from vitviz.features.llrd import FORMULA, llrd_multipliers

    text = " ".join(v.HELP_PROTOCOLS.split())
    assert "0.75^(depth − i), blocks counted from 0" in text and "0.75^(depth + 1 − i)" in text
    assert "i = 0 (embeddings), 1..depth (blocks)" in FORMULA
    depth = 8  # mae-tiny, the fine-tuned encoder
    m = llrd_multipliers(depth, 0.75)
    for i in range(depth):  # block i counted from 0 is layer id i + 1 of the Features tab's count
        assert np.isclose(m[i + 1], 0.75 ** (depth - i)) and np.isclose(m[i + 1], 0.75 ** (depth + 1 - (i + 1)))
