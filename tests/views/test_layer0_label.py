"""Layer 0's label says what it is: Swin has no absolute position embedding (issue 33, item 4)."""

from __future__ import annotations

import pytest

from vitviz.views import features as v


@pytest.mark.parametrize("choice", ["mae-tiny", "swin-tiny:random", "vit-base:random"])
def test_layer0_label_follows_the_model(choice: str) -> None:
    model = v.load_choice(choice)
    label = v.layer0_label(model)
    if choice.startswith("swin"):
        assert not v.has_absolute_position_embedding(model)
        assert label == "patch embedding; no absolute position embedding"
    else:
        assert v.has_absolute_position_embedding(model) and label == "patch + position embedding"
    assert v.layer0_label_of(choice) == label


def test_probe_axis_and_slider_carry_the_label(monkeypatch) -> None:
    from vitviz.plots.features import probe_figure
    import numpy as np

    fig = probe_figure(["embed", "block 1"], np.zeros((2, 1)), ["row"], {"row": "row"}, "t",
                       layer0="patch embedding; no absolute position embedding")
    assert fig.layout.xaxis.title.text == "depth (0 = patch embedding; no absolute position embedding)"
    from vitviz.ui import features_tab

    upd = features_tab.on_model("swin-tiny:random", 3).layer
    assert upd["label"] == "Layer (0 = patch embedding; no absolute position embedding)"
