"""The BEiT tab's cost classes follow the models its handlers always use (issue 32's rule, issue 35's
second tokenizer): vq-kd-tiny's teacher loads at first use, so a tokenizer in memory without its teacher
still makes a request heavy."""

from __future__ import annotations

import pytest

from vitviz.models import loading
from vitviz.models.loading import is_loaded, load_model
from vitviz.ui import beit_tab
from vitviz.models.costs import Cost, loaded_cost, resolve


@pytest.fixture()
def empty_caches(monkeypatch):  # noqa: ANN001, ANN201
    """Model and teacher caches emptied for the test and restored after it."""
    monkeypatch.setattr(loading, "CACHE", type(loading.CACHE)(8, budgeted=False))
    monkeypatch.setattr(loading, "_TEACHERS", {})


def test_loaded_cost_is_heavy_until_every_named_model_is_in_memory(empty_caches) -> None:  # noqa: ARG001
    computed = loaded_cost("mae-tiny", "vq-tiny")
    assert computed([]) is Cost.HEAVY
    load_model("mae-tiny")
    assert computed([None, "anything"]) is Cost.HEAVY  # vq-tiny still missing
    load_model("vq-tiny")
    assert computed([]) is Cost.VIEW
    assert loaded_cost("mae-tiny", base=Cost.HEAVY)([]) is Cost.HEAVY


def test_a_vqkd_tokenizer_counts_as_loaded_only_with_its_teacher(empty_caches) -> None:  # noqa: ARG001
    kd = load_model("vq-kd-tiny", random_init=True)
    assert is_loaded("vq-kd-tiny:random") is False  # the teacher is loaded at first use
    loading._TEACHERS[(kd.module.config.teacher, 196)] = object()  # a stand-in: the test downloads nothing
    assert is_loaded("vq-kd-tiny:random") is True


def test_tokenize_and_part_5_declare_the_models_they_always_use(empty_caches) -> None:  # noqa: ARG001
    # whatever the inputs say (the tokenizer is free text, never read), both are heavy on a cold server
    for fn, values in ((beit_tab.tokenize_endpoint, [None, "vq-tiny"]), (beit_tab.update_kinds, [None] * 6)):
        assert resolve(fn, values) is Cost.HEAVY


def test_a_teacher_is_cached_per_weight_file(empty_caches, monkeypatch) -> None:  # noqa: ARG001
    """Another dinov2-small file (a weights folder, the package switched on or off) is another teacher."""
    from types import SimpleNamespace

    import torch

    files = iter(["/a/model.safetensors", "/a/model.safetensors", "/b/model.safetensors"])
    monkeypatch.setattr(loading, "_weights", lambda spec: SimpleNamespace(path=next(files)))
    monkeypatch.setattr(loading, "_build_dinov2", lambda spec, hit: (torch.nn.Linear(2, 2), None))
    first = loading.load_teacher("dinov2-small", 196)
    assert loading.load_teacher("dinov2-small", 196) is first  # the same file: cached
    assert loading.load_teacher("dinov2-small", 196) is not first  # another file
    assert len(loading._TEACHERS) == 2
