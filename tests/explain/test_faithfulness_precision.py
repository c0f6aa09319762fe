"""Deletion and insertion curves in bfloat16 (issue 34: Explain's waits): the bf16 copy of a model, which
arithmetic the app picks, and the measured tolerance against float32 on the real trained classifier."""

from __future__ import annotations

import pytest
import torch

from vitviz.explain import faithfulness as fm
from vitviz.models import kernels
from vitviz.models import precision as mp
from vitviz.models.precision import curve_precision

from ..random_models import random_timm


def _tiny() -> torch.nn.Module:
    return random_timm("vit_tiny_patch16_224", 2, depth=2, img_size=64)


def test_bf16_copy_is_made_once_and_leaves_the_model_alone():
    module = _tiny()
    kernels.pack_linears(module)
    with torch.inference_mode():
        module(torch.zeros(1, 3, 64, 64))  # packs the weights (oneDNN tensors, which a deepcopy cannot copy)
    twin = kernels.bf16_copy(module)
    assert kernels.bf16_copy(module) is twin and twin is not module
    assert {p.dtype for p in module.parameters()} == {torch.float32}
    assert {p.dtype for p in twin.parameters()} == {torch.bfloat16}
    x = torch.zeros(1, 3, 64, 64)
    with torch.inference_mode():
        assert module(x).dtype == torch.float32 and twin(x.bfloat16()).dtype == torch.bfloat16


def test_an_int8_model_has_no_bf16_copy_and_a_bad_precision_is_refused():
    with pytest.raises(ValueError, match="int8 model has no bfloat16 copy"):
        kernels.bf16_copy(kernels.quantize_int8(_tiny()))
    with pytest.raises(ValueError, match="unknown precision 'fp16'; choose one of fp32, bf16"):
        fm.check_precision("fp16")


def test_curve_precision_follows_the_setting_and_the_cpu(monkeypatch):
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    monkeypatch.setattr(mp, "bf16_native", lambda: True)
    for mode, on_cpu, on_gpu in [("auto", "bf16", "fp32"), ("fp32", "fp32", "fp32"), ("bf16", "bf16", "bf16"),
                                 ("int8", "fp32", "fp32")]:
        monkeypatch.setenv("VITVIZ_PRECISION", mode)
        assert (curve_precision(cpu), curve_precision(gpu)) == (on_cpu, on_gpu), mode
    monkeypatch.setattr(mp, "bf16_native", lambda: False)  # emulated bf16 is slower than fp32: not chosen
    monkeypatch.setenv("VITVIZ_PRECISION", "auto")
    assert curve_precision(cpu) == "fp32"


@pytest.mark.parametrize("removal", ["drop", "grey"])
def test_bf16_areas_stay_within_the_stated_tolerance_on_the_trained_classifier(lab8, photo_path, removal):
    """The tolerance the page states, on a real decision (probabilities far from 1/C, where bf16 shows)."""
    from vitviz.explain.methods import explain_maps

    e = explain_maps(lab8, photo_path)
    exact = fm.faithfulness(lab8, photo_path, removal=removal, steps=8, explanation=e)
    low = fm.faithfulness(lab8, photo_path, removal=removal, steps=8, explanation=e, precision="bf16")
    assert (exact.precision, low.precision) == ("fp32", "bf16")
    for m, (d, i) in exact.auc().items():
        assert abs(low.auc()[m][0] - d) <= fm.BF16_AUC_TOLERANCE and abs(low.auc()[m][1] - i) <= fm.BF16_AUC_TOLERANCE
    r, q = exact.random_auc(), low.random_auc()
    assert abs(q[0] - r[0]) <= fm.BF16_AUC_TOLERANCE and abs(q[2] - r[2]) <= fm.BF16_AUC_TOLERANCE
    assert low.deletion["gradcam"][0] == pytest.approx(e.probability, abs=0.06)  # the full input, in bf16
