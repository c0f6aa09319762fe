"""Deletion and insertion curves: end points, the x-axis, both removals against the model itself."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vitviz.core.images import model_input
from vitviz.explain.faithfulness import (class_probabilities, faithfulness, kept_patches, step_counts)
from vitviz.explain.methods import METHODS, explain_maps
from vitviz.models.loading import LoadedModel

from ..random_models import random_loaded


@pytest.fixture(scope="module", params=["vit", "deit"])
def model(request) -> LoadedModel:
    if request.param == "vit":
        return random_loaded("vit_tiny_patch16_224", "vit-base", 4, img_size=64, depth=2)
    return random_loaded("deit_tiny_distilled_patch16_224", "deit-small-distilled", 5, img_size=64, depth=2)


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return np.random.default_rng(6).integers(0, 256, (64, 64, 3), dtype=np.uint8)


def _probability(module: torch.nn.Module, x: torch.Tensor, target: int) -> float:
    with torch.inference_mode():
        return float(torch.softmax(module(x).double(), dim=-1)[0, target])


def _empty_probability(module: torch.nn.Module, target: int) -> float:
    """The model on its prefix tokens alone (class / distillation token with their positions), by hand."""
    k = module.num_prefix_tokens
    prefix = [t for t in (module.cls_token, getattr(module, "dist_token", None)) if t is not None]
    with torch.inference_mode():
        x = torch.cat(prefix, dim=1) + module.pos_embed[:, :k]
        for blk in module.blocks:
            x = blk(x)
        return float(torch.softmax(module.forward_head(module.norm(x)).double(), dim=-1)[0, target])


@pytest.mark.parametrize("removal", ["drop", "grey"])
def test_curve_end_points(model, image, removal):
    e = explain_maps(model, image)
    c = faithfulness(model, image, removal=removal, steps=5, explanation=e)
    x = model_input(e.image, model.data_config, model.device)
    full = _probability(model.module, x, e.target)
    empty = _empty_probability(model.module, e.target) if removal == "drop" else \
        _probability(model.module, torch.zeros_like(x), e.target)
    assert c.methods == METHODS
    for m in METHODS:
        assert c.deletion[m][0] == pytest.approx(full, abs=1e-6)
        assert c.insertion[m][-1] == pytest.approx(full, abs=1e-6)
        assert c.deletion[m][-1] == pytest.approx(empty, abs=1e-6)  # every token dropped / every patch grey
        assert c.insertion[m][0] == pytest.approx(empty, abs=1e-6)
    for d, i in c.auc().values():
        assert 0 <= d <= 1 and 0 <= i <= 1


def test_x_axis_is_monotone_in_patches_removed(model, image):
    c = faithfulness(model, image, target=3, methods=["rollout", "gradcam"], steps=7)
    assert c.methods == ("rollout", "gradcam") and c.target == 3
    assert c.counts[0] == 0 and c.counts[-1] == c.num_patches == 16
    assert (np.diff(c.counts) > 0).all()
    assert c.fractions[0] == 0 and c.fractions[-1] == 1
    order = np.arange(16)[::-1]
    for curve, sign in (("deletion", -1), ("insertion", 1)):
        present = kept_patches(order, c.counts, curve)
        assert (np.diff(present.sum(axis=1)) * sign > 0).all()  # one fewer / more patch at every step
        assert (np.diff(present.astype(int), axis=0) * sign >= 0).all()  # never one back


def test_removed_patches_follow_the_ranking(model, image):
    e = explain_maps(model, image)
    order = e.ranking("grad_rollout")
    present = kept_patches(order, step_counts(16, 4), "deletion")
    assert not present[1][order[:4]].any() and present[1][order[4:]].all()
    flat = e.maps["grad_rollout"].reshape(-1)
    assert (np.diff(flat[order]) <= 0).all()


def test_both_removals_match_the_model_on_edited_inputs(model, image):
    x = model_input(image, model.data_config, model.device)
    present = np.random.default_rng(0).random((3, 16)) > 0.4
    grey = class_probabilities(model.module, x, present, 2, "grey", batch=2)
    dropped = class_probabilities(model.module, x, present, 2, "drop")
    for row, g, d in zip(present, grey, dropped):
        xx = x.clone()
        for i in np.flatnonzero(~row):
            r, c = divmod(int(i), 4)
            xx[..., r * 16:(r + 1) * 16, c * 16:(c + 1) * 16] = 0.0  # the normalisation mean
        assert g == pytest.approx(_probability(model.module, xx, 2), abs=1e-6)
        m = model.module
        keep = torch.from_numpy(np.flatnonzero(row))
        k = m.num_prefix_tokens
        with torch.inference_mode():  # the kept tokens with their positions, by hand
            seq = m.patch_embed(x)[:, keep] + m.pos_embed[:, k:][:, keep]
            prefix = torch.cat([t for t in (m.cls_token, getattr(m, "dist_token", None)) if t is not None], 1)
            h = torch.cat([prefix + m.pos_embed[:, :k], seq], dim=1)
            for blk in m.blocks:
                h = blk(h)
            want = float(torch.softmax(m.forward_head(m.norm(h)).double(), -1)[0, 2])
        assert d == pytest.approx(want, abs=1e-6)


def test_validation(model, image):
    with pytest.raises(ValueError, match="drop, grey"):
        faithfulness(model, image, removal="blur")
    with pytest.raises(ValueError, match="1..16"):
        step_counts(16, 0)
    with pytest.raises(ValueError, match="1..16"):
        step_counts(16, 17)


def test_random_order_baseline_is_the_mean_of_permutation_curves(model, image):
    from vitviz.explain.faithfulness import curves_for, random_orders

    orders = random_orders(16, 3)
    assert orders.shape == (3, 16) and all(sorted(o) == list(range(16)) for o in orders)
    np.testing.assert_array_equal(orders, random_orders(16, 3))  # seeded: the same orders every call
    e = explain_maps(model, image)
    c = faithfulness(model, image, removal="drop", steps=4, explanation=e, random=3)
    assert c.methods == METHODS and c.random_count == 3
    assert c.random_deletion.shape == c.random_insertion.shape == (3, 5)
    # each baseline row is exactly the curve of that order, computed as if it were a map's ranking
    x = model_input(e.image, model.data_config, model.device)
    alone = curves_for(model.module, x, {f"o{k}": o for k, o in enumerate(orders)}, e.target, "drop", 4)
    backwards = curves_for(model.module, x, {f"o{k}": o[::-1] for k, o in enumerate(orders)}, e.target, "drop", 4)
    for k in range(3):
        np.testing.assert_allclose(c.random_deletion[k], alone.deletion[f"o{k}"], rtol=1e-5, atol=1e-8)
        # insertion runs along the reversed order: the deletion curve read from the other end (P = 16, even)
        np.testing.assert_allclose(c.random_insertion[k], backwards.insertion[f"o{k}"], rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(c.random_insertion[k], c.random_deletion[k][::-1], rtol=1e-5, atol=1e-8)
    d_mean, d_std, i_mean, i_std = c.random_auc()
    d_each = [alone.auc()[f"o{k}"][0] for k in range(3)]
    assert d_mean == pytest.approx(np.mean(d_each), rel=1e-5) and d_std == pytest.approx(np.std(d_each), abs=1e-6)
    assert (i_mean, i_std) == pytest.approx((d_mean, d_std), rel=1e-5)  # equal areas: chance is 0 difference
    # endpoints are shared with every map: full input first on deletion, empty first on insertion
    assert c.random_deletion[:, 0] == pytest.approx(c.deletion[METHODS[0]][0], abs=1e-6)
    assert c.random_insertion[:, 0] == pytest.approx(c.insertion[METHODS[0]][0], abs=1e-6)
    assert faithfulness(model, image, steps=4, explanation=e, random=0).random_auc() is None


def test_random_baseline_runs_each_order_once(model, image):
    """The baseline's insertion inputs are its deletion inputs: R orders add R x (S - 1) distinct inputs,
    not twice that (the full and the empty input are the maps' own)."""
    e = explain_maps(model, image)
    with_maps, with_baseline = {}, {}
    faithfulness(model, image, steps=4, explanation=e, random=0, known=with_maps)
    faithfulness(model, image, steps=4, explanation=e, random=3, known=with_baseline)
    assert len(with_baseline) - len(with_maps) == 3 * (4 - 1)
