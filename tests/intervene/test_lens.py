"""The logit lens: at the last layer it is the model's own output, exactly; a middle layer is that
block's output through the final norm and head; an MAE's decoder read after its last block is the
reconstruction; a backbone borrows dinov2-small-lab8's head only when it is that head's backbone."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vitviz
from vitviz.core.images import model_input
from vitviz.explain.capture import capture_block_tokens
from vitviz.intervene.lens import ClassLens, PixelLens, logit_lens


@pytest.mark.parametrize("name", ["vit", "deit"])
def test_the_lens_at_the_last_layer_is_the_models_own_logits(name, request, image):
    model = request.getfixturevalue(name)
    lens = logit_lens(model, image)
    assert isinstance(lens, ClassLens) and lens.cls_logits.shape == (3, 1000) and lens.avg_logits.shape == (3, 1000)
    with torch.inference_mode():
        own = model.module(model_input(image, model.data_config))[0].numpy()
    assert np.array_equal(lens.cls_logits[-1], own) and np.array_equal(lens.logits, own)
    assert lens.first_lead() is not None and lens.first_lead() <= 2
    assert lens.top(2, 1)[0][0] == lens.classes[lens.final]


def test_a_middle_layer_is_its_block_output_through_the_final_norm_and_head(vit, image):
    lens = logit_lens(vit, image)
    m = vit.module
    x = model_input(image, vit.data_config)
    seq, _ = capture_block_tokens(m.blocks, lambda: m(x))
    with torch.inference_mode():
        normed = m.norm(seq[2])  # output of block 2 (index 1)
        cls = m.head(normed[:, 0])[0].numpy()
        avg = m.head(normed[:, 1:].mean(1))[0].numpy()
    np.testing.assert_allclose(lens.cls_logits[1], cls, rtol=0, atol=1e-5)
    np.testing.assert_allclose(lens.avg_logits[1], avg, rtol=0, atol=1e-5)
    probs = lens.probs()
    assert probs.shape == (3, 1000) and np.allclose(probs.sum(1), 1)
    lead = lens.first_lead()
    assert np.argmax(probs[lead]) == lens.final and all(np.argmax(probs[i]) != lens.final for i in range(lead))


def test_the_mae_decoder_read_after_its_last_block_is_the_reconstruction(mae, photo_path):
    lens = logit_lens(mae, photo_path)
    r = vitviz.reconstruct(mae, photo_path, mask_ratio=0.75, seed=0)
    assert isinstance(lens, PixelLens) and lens.pictures.shape == (4, 224, 224, 3)
    assert np.array_equal(lens.pictures[-1], r.reconstruction) and lens.errors[-1] == r.masked_mse
    assert np.array_equal(lens.mask, r.mask) and "decoder layer 3" in lens.summary()


def test_a_backbone_without_the_heads_backbone_is_refused(backbone, image):
    with pytest.raises(ValueError, match="has no classifier head"):
        logit_lens(backbone, image)


def test_lab8_lens_and_dinov2_small_read_with_its_head(lab8, photo_path):
    from vitviz.models.loading import load_model

    lens = logit_lens(lab8, photo_path)
    with torch.inference_mode():
        own = lab8.module(model_input(np.asarray(lens_view(lab8, photo_path)), lab8.data_config))[0].numpy()
    assert np.array_equal(lens.cls_logits[-1], own) and lens.classes[lens.final] == "mammal"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
        plain = load_model("dinov2-small", device="cpu")
    borrowed = logit_lens(plain, photo_path)
    assert borrowed.head_from == "dinov2-small-lab8's linear head" and "read with" in borrowed.summary()
    np.testing.assert_allclose(borrowed.cls_logits, lens.cls_logits, rtol=0, atol=1e-3)


def lens_view(model, path):
    from vitviz.core.images import square_view

    return square_view(path, model.input_size)
