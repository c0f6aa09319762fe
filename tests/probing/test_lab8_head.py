"""dinov2-small-lab8's linear head (issue 29, item 4): the shipped head classifies the shipped inputs to
the accuracies its card states, its weight decay was chosen on validation photos only, it loads onto a
DINOv2 backbone without copying it, and without dinov2-small's weights the model says why it is absent."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from vitviz.errors import ModelUnavailable
from vitviz.models.linear_head import HEAD_INPUT, attach, head_dir, read_head, write_head
from vitviz.models.registry import LAB8_HEAD, get_spec
from vitviz.probing.features import load_manifest, manifest_digest
from vitviz.probing.head import card_json_path, evaluate, inputs_path, load_inputs

MODEL = "dinov2-small-lab8"


@pytest.fixture(scope="module")
def card() -> dict:
    return json.loads(card_json_path(MODEL).read_text())


def test_head_classifies_the_shipped_inputs_to_the_cards_accuracy(card):
    head, inputs = read_head(head_dir() / LAB8_HEAD), load_inputs(inputs_path(MODEL))
    manifest = load_manifest()
    assert inputs.digest == manifest_digest(manifest) == card["digest"]  # the same photos, labels and splits
    assert head.classes == inputs.classes == tuple(manifest["classes"]) == tuple(card["classes"])
    assert head.backbone == inputs.backbone == "dinov2-small" and head.meta["input"] == HEAD_INPUT
    got = evaluate(head, inputs)  # computed now from shipped files, compared to the card's JSON
    for split in ("train", "val", "test"):
        assert got["correct"][split] == card["correct"][split], split
        assert got["count"][split] == card["count"][split] == int((inputs.split == split).sum())
        assert got["accuracy"][split] == pytest.approx(card["accuracy"][split], abs=1e-12)
        assert got["per_class"][split] == pytest.approx(card["per_class"][split], abs=1e-12)
    assert card["count"]["test"] == 64 and got["accuracy"]["test"] > 2 / 8  # far above chance (1/8)
    text = (head_dir() / f"{MODEL}.md").read_text(encoding="utf-8")
    assert f"{card['correct']['test']}/64" in text and f"{card['correct']['val']}/32" in text  # the card says them


def test_weight_decay_was_chosen_on_validation_only(card):
    from vitviz.training.linear_head import choose

    rows = card["sweep"]
    assert rows and all(not any("test" in k for k in r) for r in rows)  # the sweep never looked at test
    assert choose(rows)["weight_decay"] == card["weight_decay"]
    assert card["pipeline_agreement"]["agree"] == card["pipeline_agreement"]["photos"] == 268


def test_head_file_is_tiny_fp16_and_holds_no_backbone():
    from safetensors import safe_open

    path = head_dir() / LAB8_HEAD
    with safe_open(str(path), framework="pt") as fh:
        assert sorted(fh.keys()) == ["bias", "weight"]
        assert {fh.get_tensor(k).dtype for k in fh.keys()} == {torch.float16}
    assert path.stat().st_size < 16_000
    spec, backbone = get_spec(MODEL), get_spec("dinov2-small")
    assert spec.family == "probe" and spec.head == LAB8_HEAD and spec.sources == backbone.sources


def test_softmax_fit_separates_features_that_carry_the_label():
    from vitviz.training.linear_head import fit_softmax, scores

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 10)
    x = rng.normal(size=(40, 16))
    x[np.arange(40), y] += 6.0  # the label is written into one channel each
    w, b = fit_softmax(x, y, 4, 1e-3)
    acc, ce = scores(w, b, x, y)
    assert acc == 1.0 and ce < 0.1


def test_attach_gives_the_heads_logits_on_the_normed_class_token(tmp_path):
    from vitviz.models.dinov2 import build_dinov2

    from ..models.dinov2_files import TINY

    gen = torch.Generator().manual_seed(0)
    w, b = torch.randn(3, TINY.embed_dim, generator=gen), torch.randn(3, generator=gen)
    write_head(tmp_path / "h.safetensors", w, b, ("a", "b", "c"), "tiny")
    head = read_head(tmp_path / "h.safetensors")
    backbone = build_dinov2(TINY, 28).eval()
    x = torch.randn(2, 3, 28, 28, generator=gen)
    with torch.no_grad():
        cls = backbone.forward_features(x)[:, 0]  # after the final norm
        module = attach(backbone, head, "test")
        assert module.num_classes == 3
        torch.testing.assert_close(module(x), head.logits(cls))
    assert torch.equal(head.weight, w.half().float())  # fp16 as stored
    with pytest.raises(ModelUnavailable, match="reads 5 channels"):
        write_head(tmp_path / "bad.safetensors", torch.zeros(3, 5), torch.zeros(3), ("a", "b", "c"), "tiny")
        attach(build_dinov2(TINY, 28), read_head(tmp_path / "bad.safetensors"), "test")


def test_without_dinov2_weights_the_classifier_is_unavailable_with_a_sentence(tmp_path, monkeypatch):
    from vitviz.models import onnx_weights
    from vitviz.models.loading import available_models, load_model

    monkeypatch.setattr(onnx_weights, "package_file", lambda *_a: None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("VITVIZ_WEIGHTS_DIR", str(tmp_path))
    info = next(i for i in available_models() if i.name == MODEL)
    assert not info.available and "dinov2-small/model.safetensors" in info.reason
    with pytest.raises(ModelUnavailable, match=f"{MODEL} is unavailable"):
        load_model(MODEL)
