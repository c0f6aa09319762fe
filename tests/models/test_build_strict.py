"""Loading a checkpoint without drawing the random weights it replaces (``checkpoint.build_strict``)."""

from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

from vitviz.errors import ModelUnavailable
from vitviz.models.build import create_timm, parameters_on_meta
from vitviz.models.checkpoint import build_strict, load_timm_strict
from vitviz.models.registry import get_spec


def _tensors(module: nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(module.named_parameters()), **dict(module.named_buffers())}


def test_swin_from_a_half_precision_file_equals_the_usual_load():
    name = get_spec("swin-tiny").timm_name
    torch.manual_seed(3)  # test-only: the reference's random weights
    ref = create_timm(name).eval()
    sd = {k: v.half() for k, v in ref.state_dict().items()}  # as vitviz's own files store them
    got = load_timm_strict(name, sd, "swin").eval()
    want = _tensors(ref)
    have = _tensors(got)
    assert set(have) == set(want)
    assert not any(t.is_meta for t in have.values())
    masks = [k for k in want if k.endswith("attn_mask")]
    assert masks, "swin-tiny has computed shifted-window masks"
    for k in masks + [k for k in want if k.endswith("relative_position_index")]:
        assert torch.equal(have[k], want[k]), k  # computed buffers, computed again after the meta build
    for k, v in sd.items():
        assert have[k].dtype == want[k].dtype and torch.equal(have[k], v.to(want[k].dtype)), k
        assert have[k].requires_grad == want[k].requires_grad, k
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        ref.load_state_dict(sd)
        torch.testing.assert_close(got(x), ref(x))


def test_dinov2_skeleton_without_timms_draws_equals_the_usual_load():
    from vitviz.models.dinov2 import DINOV2_SMALL, build_dinov2

    torch.manual_seed(5)  # test-only: the reference's random weights
    ref = build_dinov2(DINOV2_SMALL, 56).eval()
    sd = ref.state_dict()
    got = build_strict(lambda: build_dinov2(DINOV2_SMALL, 56, init=False), sd, "dinov2").eval()
    have, want = _tensors(got), _tensors(ref)
    assert set(have) == set(want) and not any(t.is_meta for t in have.values())
    for k in want:
        assert torch.equal(have[k], want[k]), k
    x = torch.randn(1, 3, 56, 56, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        torch.testing.assert_close(got(x), ref(x), rtol=0, atol=0)


def test_meta_parameters_are_this_threads_only():
    seen: dict[str, bool] = {}

    def other() -> None:
        seen["other"] = nn.Linear(4, 4).weight.is_meta

    with parameters_on_meta():
        seen["here"] = nn.Linear(4, 4).weight.is_meta
        t = threading.Thread(target=other)
        t.start()
        t.join()
    seen["after"] = nn.Linear(4, 4).weight.is_meta
    assert seen == {"here": True, "other": False, "after": False}


class _ReadsItsWeights(nn.Module):
    """An ``__init__`` that reads a parameter's value (``.item()`` fails on ``meta``)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.register_buffer("scale", torch.tensor([float(self.lin.weight.detach().abs().max()) * 0 + 2.0]))


class _ComputesFromItsDevice(nn.Module):
    """A non-persistent buffer made on its parameter's device, with no way to compute it again."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.register_buffer("grid", torch.arange(4.0, device=self.lin.weight.device), persistent=False)


@pytest.mark.parametrize("cls", [_ReadsItsWeights, _ComputesFromItsDevice])
def test_modules_that_cannot_be_built_on_meta_are_built_the_usual_way(cls):
    sd = {"lin.weight": torch.ones(2, 3, dtype=torch.float16), "lin.bias": torch.zeros(2)}
    if cls is _ReadsItsWeights:
        sd["scale"] = torch.tensor([5.0])
    got = build_strict(cls, sd, "toy")
    assert not any(t.is_meta for t in _tensors(got).values())
    assert got.lin.weight.dtype == torch.float32 and torch.equal(got.lin.weight, torch.ones(2, 3))
    if cls is _ReadsItsWeights:
        assert torch.equal(got.scale, torch.tensor([5.0]))
    else:
        assert torch.equal(got.grid, torch.arange(4.0))
    with pytest.raises(ModelUnavailable, match="missing 1 keys"):
        build_strict(cls, {k: v for k, v in sd.items() if k != "lin.bias"}, "toy")
    with pytest.raises(ModelUnavailable, match="has shape"):
        build_strict(cls, {**sd, "lin.bias": torch.zeros(3)}, "toy")
