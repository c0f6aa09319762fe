"""Curves that reuse the softmax rows of earlier curves give the same numbers (issue 34).

"The same" is up to float32 rounding: a row's numbers can move in the last bits with the
batch it runs in (the matrix kernels block by the number of rows), as they already did
when another method was asked for beside it; within one batch layout they are exact."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.core.images import model_input
from vitviz.explain import faithfulness as fm
from vitviz.explain.methods import METHODS, explain_maps
from vitviz.models.loading import LoadedModel

from ..random_models import random_loaded


@pytest.fixture(scope="module")
def model() -> LoadedModel:
    return random_loaded("deit_tiny_distilled_patch16_224", "deit-small-distilled", 5, img_size=64, depth=2)


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return np.random.default_rng(7).integers(0, 256, (64, 64, 3), dtype=np.uint8)


@pytest.mark.parametrize("removal", ["drop", "grey"])
def test_a_softmax_row_hardly_depends_on_the_other_rows(model, image, removal):
    x = model_input(image, model.data_config, model.device)
    present = np.random.default_rng(1).random((9, 16)) > 0.5
    present[:4] = np.random.default_rng(2).permuted(np.tile(present[0], (4, 1)), axis=1)  # one size: one batch
    whole = fm.class_softmax(model.module, x, present, removal, batch=4)
    alone = np.concatenate([fm.class_softmax(model.module, x, present[i:i + 1], removal) for i in range(9)])
    assert whole.shape == (9, 1000) and whole.dtype == np.float32
    np.testing.assert_allclose(whole, alone, rtol=2e-6, atol=1e-9)
    np.testing.assert_array_equal(fm.class_probabilities(model.module, x, present, 3, removal, batch=4),
                                  whole[:, 3].astype(np.float64))


@pytest.mark.parametrize("removal", ["drop", "grey"])
def test_curves_with_known_rows_are_those_without(model, image, removal, monkeypatch):
    known: dict[bytes, np.ndarray] = {}
    calls: list[int] = []
    real = fm.class_softmax

    def counting(module, x, present, *args, **kwargs):
        calls.append(len(present))
        return real(module, x, present, *args, **kwargs)

    monkeypatch.setattr(fm, "class_softmax", counting)
    for target, steps in [(None, 4), (7, 4), (11, 8), (7, 4)]:
        e = explain_maps(model, image, target)
        fresh = fm.faithfulness(model, image, e.target, METHODS, removal, steps, e)
        n_fresh = calls[-1]
        reused = fm.faithfulness(model, image, e.target, METHODS, removal, steps, e, known=known)
        for m in METHODS:
            np.testing.assert_allclose(reused.deletion[m], fresh.deletion[m], rtol=2e-6, atol=1e-9)
            np.testing.assert_allclose(reused.insertion[m], fresh.insertion[m], rtol=2e-6, atol=1e-9)
            assert reused.auc()[m] == pytest.approx(fresh.auc()[m], rel=2e-6)
        assert len(known) >= n_fresh
    # The class-independent maps' inputs, the full and the empty input ran once: later calls ran fewer rows.
    reuse_calls = calls[1::2]
    assert reuse_calls[0] > 0 and sum(reuse_calls[1:]) < 3 * reuse_calls[0]
