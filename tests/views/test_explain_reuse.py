"""The Explain view runs one forward and backward pass per model, image and class, and
reuses the curves' inputs across classes (issue 34); the numbers are those computed afresh."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.explain import faithfulness as fm
from vitviz.explain import methods as mm
from vitviz.explain.labels import imagenet_labels
from vitviz.models.loading import LoadedModel
from vitviz.views import explain as v

from ..random_models import random_loaded


@pytest.fixture()
def tiny(monkeypatch) -> LoadedModel:
    model = random_loaded("deit_tiny_distilled_patch16_224", "deit-small-distilled", 3, img_size=64, depth=2)
    monkeypatch.setattr(v, "load_choice", lambda choice: model)
    for cache in (v.MAPS, v.CURVES, v.PREDICTED_CLASS, v.ROWS):
        monkeypatch.setattr(cache, "_data", type(cache._data)())
    return model


@pytest.fixture()
def photo(tmp_path) -> str:
    from PIL import Image

    path = tmp_path / "photo.png"
    Image.fromarray(np.random.default_rng(8).integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(path)
    return str(path)


def test_predicted_and_its_name_share_one_backward_pass(tiny, photo, monkeypatch):
    passes: list[object] = []
    real = mm.class_gradients
    monkeypatch.setattr(mm, "class_gradients", lambda *a: passes.append(a[2]) or real(*a))
    _, e = v.explanation_for(photo, "x", "predicted")
    name = imagenet_labels()[e.target]
    for target in ("predicted", name, str(e.target), None, ""):
        assert v.explanation_for(photo, "x", target)[1] is e
    assert passes == [None]
    _, other = v.explanation_for(photo, "x", "3" if e.target != 3 else "4")
    assert len(passes) == 2 and other.target != e.target


def test_curves_after_a_change_of_class_are_those_computed_afresh(tiny, photo):
    top = v.explanation_for(photo, "x", "predicted")[1].target
    other = str((top + 1) % 1000)
    for target, removal, steps in [("predicted", "drop", 8), (other, "drop", 8), (other, "grey", 8),
                                   ("predicted", "grey", 4), (other, "drop", 16)]:
        _, e, c = v.curves_for(photo, "x", target, removal, steps)
        fresh = fm.faithfulness(tiny, e.image, e.target, v.METHODS, removal, steps,
                                mm.explain_maps(tiny, e.image, e.target), precision=c.precision)
        for m in v.METHODS:
            np.testing.assert_allclose(c.deletion[m], fresh.deletion[m], rtol=2e-6, atol=1e-9)  # float32 rounding
            np.testing.assert_allclose(c.insertion[m], fresh.insertion[m], rtol=2e-6, atol=1e-9)
        for name in e.maps:
            np.testing.assert_array_equal(e.maps[name], fresh_maps(tiny, e)[name])


def test_curves_in_each_precision_keep_their_own_rows_and_say_bf16(tiny, photo, monkeypatch):
    """bf16 and fp32 curves of one image never share cached rows; the caption says when bf16 was used."""
    monkeypatch.setenv("VITVIZ_PRECISION", "fp32")
    _, _, exact = v.curves_for(photo, "x", "predicted", "drop", 4)
    *_, text = v.curves_view(photo, "x", "predicted", "all", "drop", 4)
    assert exact.precision == "fp32" and "bfloat16" not in text
    monkeypatch.setenv("VITVIZ_PRECISION", "bf16")
    _, e, low = v.curves_for(photo, "x", "predicted", "drop", 4)
    *_, text = v.curves_view(photo, "x", "predicted", "all", "drop", 4)
    assert low.precision == "bf16" and "Computed in bfloat16" in text and f"±{fm.BF16_AUC_TOLERANCE}" in text
    assert {k[-1] for k in v.ROWS._data} == {"fp32", "bf16"}  # one row store per precision
    fresh = fm.faithfulness(tiny, e.image, e.target, v.METHODS, "drop", 4, e, precision="bf16")
    for m in v.METHODS:
        np.testing.assert_array_equal(low.deletion[m], fresh.deletion[m])
        np.testing.assert_array_equal(low.insertion[m], fresh.insertion[m])


def fresh_maps(model: LoadedModel, e: mm.Explanation) -> dict[str, np.ndarray]:
    return mm.explain_maps(model, e.image, e.target).maps


def test_the_first_pass_draws_every_other_point_and_the_full_pass_reuses_them(tiny, photo, monkeypatch):
    """Issue 34: the page draws the curves on every other point first, without the random baseline, then the
    rest; the full pass runs only the inputs the first one did not, and once the full curves are cached the
    first pass is them."""
    runs: list[int] = []
    real = fm.class_softmax
    monkeypatch.setattr(fm, "class_softmax", lambda module, x, present, *a: runs.append(len(present))
                        or real(module, x, present, *a))
    fig, rows, text = v.curves_view(photo, "x", "predicted", "all", "drop", 8, first_pass=True)
    assert "First pass: 5 of the 9 points per curve" in text and "4 steps (first pass; 8 follow)" in fig.layout.title.text
    assert "no random baseline yet" in text and "random baseline are being computed" in text
    assert [r[0] for r in rows] == [v.METHOD_NAMES[m] for m in v.METHODS]  # no random row yet
    assert not any("random order" in (t.name or "") for t in fig.data)
    _, e, quick = v.curves_for(photo, "x", "predicted", "drop", 8, first_pass=True)
    assert len(quick.counts) == 5 and quick.random_count == 0 and len(runs) == 1
    # 4 maps, each with 3 inner points per curve, and the full and empty inputs
    assert runs[0] <= 4 * 2 * 3 + 2
    fig, rows, text = v.curves_view(photo, "x", "predicted", "all", "drop", 8)
    assert "First pass" not in text and "first pass" not in fig.layout.title.text
    assert any("random order" in (t.name or "") for t in fig.data)
    assert rows[-1][0] == v.random_name(full := v.curves_for(photo, "x", "predicted", "drop", 8)[2])
    assert full.random_count == fm.RANDOM_ORDERS
    # the full pass runs the maps' odd points (deletion and insertion) and the random orders' 7 inner points
    # (deletion alone: their insertion runs through the same inputs)
    assert runs[1] <= 4 * 2 * 4 + 3 * 7 and len(runs) == 2
    for m in v.METHODS:  # the first pass's points are the full curves' every other point, unchanged
        np.testing.assert_array_equal(quick.deletion[m], full.deletion[m][::2])
        np.testing.assert_array_equal(quick.insertion[m], full.insertion[m][::2])
    again = v.curves_view(photo, "x", "predicted", "all", "drop", 8, first_pass=True)[2]
    assert "First pass" not in again and len(runs) == 2  # cached full curves: no first pass, nothing run
    assert v.first_pass_steps(8) == 4 and v.first_pass_steps(7) is None and v.first_pass_steps(2) is None
    assert "First pass" not in v.curves_view(photo, "x", "predicted", "all", "drop", 7, first_pass=True)[2]


def test_curves_of_four_steps_asked_for_are_not_a_first_pass(tiny, photo):
    """A first pass of 8 steps has the points of 4 steps but no baseline: asking for 4 steps gets the baseline."""
    quick = v.curves_for(photo, "x", "predicted", "drop", 8, first_pass=True)[2]
    four = v.curves_for(photo, "x", "predicted", "drop", 4)[2]
    assert quick.random_count == 0 and four.random_count == fm.RANDOM_ORDERS
    for m in v.METHODS:
        np.testing.assert_array_equal(quick.deletion[m], four.deletion[m])
