"""The MAE tab's comparison picker offers only models whose weights can be had, never compares the main model
with itself, and says so when no second MAE is here."""

from __future__ import annotations

from vitviz.views import mae as mv


def test_offline_only_the_embedded_model_and_a_sentence(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("VITVIZ_WEIGHTS_DIR", "/nonexistent-vitviz-weights")
    choices, sentence = mv.compare_choices()
    assert [name for _, name in choices] == ["mae-tiny"]
    assert all("unavailable" not in label for label, _ in choices)
    assert sentence.startswith("No second MAE is here (only mae-tiny)")
    everything = [name for _, name in mv.model_choices()]
    assert len(everything) > 1  # the model picker still lists the others, saying they are unavailable


def test_the_main_model_is_not_compared_with_itself():
    assert mv.compared("mae-tiny", "mae-tiny") is None
    assert mv.compared(mv.NO_COMPARE, "mae-tiny") is None
    assert mv.compared("mae-base", "mae-tiny") == "mae-base"
