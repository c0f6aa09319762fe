"""Explanation maps: gradient-weighted rollout and Grad-CAM against an independent
implementation, the attention maps against the attention capture, and no state left behind."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import vitviz
import vitviz.explain.attention  # a submodule: `import vitviz` alone no longer imports it (lazy names)
from vitviz.explain import capture as explain_capture
from vitviz.explain.methods import METHODS, check_methods, check_target, explain_maps
from vitviz.models.loading import LoadedModel


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return np.random.default_rng(3).integers(0, 256, (224, 224, 3), dtype=np.uint8)


def _independent(model: LoadedModel, view: np.ndarray, target: int) -> tuple[np.ndarray, np.ndarray]:
    """Chefer's rollout and token Grad-CAM written out by hand: the attention is formed here from
    q and k (no hooks, no vitviz capture) and differentiated with torch.autograd.grad."""
    from vitviz.core.images import model_input

    m = model.module
    x = model_input(view, model.data_config, model.device)
    with torch.enable_grad():
        tok = m.norm_pre(m._pos_embed(m.patch_embed(x))).detach().requires_grad_(True)
        attns, entering = [], None
        for i, blk in enumerate(m.blocks):
            if i == len(m.blocks) - 1:
                entering = tok
            h = blk.norm1(tok)
            b, n, c = h.shape
            heads = blk.attn.num_heads
            qkv = F.linear(h, blk.attn.qkv.weight, blk.attn.qkv.bias).reshape(b, n, 3, heads, c // heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            a = torch.softmax((q * (c // heads) ** -0.5) @ k.transpose(-2, -1), dim=-1)
            attns.append(a)
            o = F.linear((a @ v).transpose(1, 2).reshape(b, n, c), blk.attn.proj.weight, blk.attn.proj.bias)
            tok = tok + o
            tok = tok + blk.mlp(blk.norm2(tok))
        logit = m.forward_head(m.norm(tok))[0, target]
        grads = torch.autograd.grad(logit, attns + [entering])
    p0 = m.num_prefix_tokens
    r = torch.eye(attns[0].shape[-1], dtype=torch.float64)
    for a, g in zip(attns, grads[:-1]):
        r = r + (g[0].double() * a[0].detach().double()).clamp(min=0).mean(dim=0) @ r
    rel = r[0, p0:].numpy()
    w = grads[-1][0, p0:].double().mean(dim=0)
    cam = (entering[0, p0:].detach().double() @ w).clamp(min=0).numpy()
    return rel / rel.sum(), cam / cam.sum()


@pytest.mark.parametrize("which", ["vit", "deit"])
@pytest.mark.parametrize("target", [None, 7])
def test_gradient_rollout_and_gradcam_match_independent_implementation(which, target, request, image):
    model = request.getfixturevalue(which)
    e = explain_maps(model, image, target=target)
    c = e.target if target is None else target
    assert e.target == c
    if target is None:
        assert c == int(np.argmax(e.logits))
    rel, cam = _independent(model, e.image, c)
    gh, gw = e.layout.grid
    np.testing.assert_allclose(e.maps["grad_rollout"].reshape(-1), rel, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(e.maps["gradcam"].reshape(-1), cam, rtol=1e-5, atol=1e-7)
    assert e.maps["grad_rollout"].shape == (gh, gw)


def test_attention_maps_equal_the_attention_capture(vit, image):
    e = explain_maps(vit, image)
    a = vitviz.explain.attention.capture(vit, image)
    last = a.attentions[-1, :, 0, 1:].mean(axis=0)
    np.testing.assert_allclose(e.maps["attention"].reshape(-1), last / last.sum(), rtol=1e-5, atol=1e-8)
    roll = a.rollout_matrix()[0, 1:]
    np.testing.assert_allclose(e.maps["rollout"].reshape(-1), roll / roll.sum(), rtol=1e-5, atol=1e-8)


def _hooks(module: torch.nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in module.modules())


@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference"])
def test_nothing_left_behind(vit, image, mode):
    module = vit.module
    module.requires_grad_(True)  # even parameters that ask for gradients get no .grad
    try:
        ctx = {"grad": torch.enable_grad, "no_grad": torch.no_grad, "inference": torch.inference_mode}[mode]
        with ctx():
            before = torch.is_grad_enabled(), torch.is_inference_mode_enabled()
            e = explain_maps(vit, image)
            assert (torch.is_grad_enabled(), torch.is_inference_mode_enabled()) == before
        assert all(p.grad is None for p in module.parameters())
        assert not module.training and _hooks(module) == 0
        assert all(np.isfinite(v).all() for v in e.maps.values())
    finally:
        module.requires_grad_(False)


def test_failing_score_removes_hooks(vit, image):
    from vitviz.core.images import model_input

    x = model_input(image, vit.data_config, vit.device)

    def bad(_out: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        explain_capture.capture_gradients(vit.module.blocks, lambda: vit.module(x), bad)
    assert _hooks(vit.module) == 0 and torch.is_grad_enabled()
    assert all(p.grad is None for p in vit.module.parameters())


def test_maps_are_normalised_and_class_sensitive(vit, image):
    a, b = explain_maps(vit, image, target=0), explain_maps(vit, image, target="goldfish")
    assert b.target == 1 and b.class_name == "goldfish"
    for e in (a, b):
        assert set(e.maps) == set(METHODS)
        for v in e.maps.values():
            assert v.min() >= 0 and v.sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(a.maps["attention"], b.maps["attention"])  # class-agnostic
    assert not np.allclose(a.maps["grad_rollout"], b.maps["grad_rollout"])  # class-specific


def test_validation(vit, tiny_loaded, image):
    with pytest.raises(ValueError, match="choose from"):
        check_methods(["saliency"])
    assert check_methods("gradcam") == ("gradcam",)
    with pytest.raises(ValueError, match="0..999"):
        check_target(1000, 1000)
    with pytest.raises(ValueError, match="unknown class"):
        check_target("not a class", 1000)
    with pytest.raises(ValueError, match="not an image classifier"):
        explain_maps(tiny_loaded, np.zeros((64, 64, 3), np.uint8))
