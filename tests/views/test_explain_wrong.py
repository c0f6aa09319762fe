"""Explain's trained classifier (dinov2-small-lab8) says how often it is wrong beside every prediction, from
its card's held-out test figures, so that a wrong class ("tool" for a parrot) is not taken for the lesson."""

from __future__ import annotations

import json
from types import SimpleNamespace

from vitviz.models.registry import get_spec
from vitviz.probing.head import card_json_path
from vitviz.views import explain as ev


def _stub(class_name: str, random_init: bool = False, name: str = "dinov2-small-lab8"):  # noqa: ANN202
    return SimpleNamespace(spec=get_spec(name)), SimpleNamespace(class_name=class_name, random_init=random_init)


def test_the_sentence_states_the_cards_test_accuracy_overall_and_for_the_class():
    card = json.loads(card_json_path("dinov2-small-lab8").read_text())
    overall, count, per_class = ev.held_out_accuracy(get_spec("dinov2-small-lab8").head)
    assert (overall, count, per_class) == (card["accuracy"]["test"], card["count"]["test"], card["per_class"]["test"])
    assert set(per_class) == set(card["classes"])
    text = ev.how_often_wrong(*_stub("tool"))
    assert f"right on {overall:.0%} of {count} test photos" in text
    assert f"({per_class['tool']:.0%} of those labelled *tool*)" in text and "none of its 8 classes" in text
    assert f"{per_class['household object']:.0%}" in ev.how_often_wrong(*_stub("household object"))


def test_no_sentence_without_a_card():
    assert ev.how_often_wrong(*_stub("tool", random_init=True)) == ""  # random weights: no learned decision
    assert ev.how_often_wrong(*_stub("tabby, tabby cat", name="deit-small-distilled")) == ""
