import numpy as np
import pytest
import torch

from vitviz.core.masking import make_mask, random_mask
from vitviz.mae.reconstruct import predict, prepare, reconstruct


def test_panels_shapes_and_types(tiny_loaded, photo_path):
    r = reconstruct(tiny_loaded, photo_path, mask_ratio=0.75, seed=0)
    for panel in (r.original, r.masked, r.reconstruction, r.pasted):
        assert panel.shape == (64, 64, 3) and panel.dtype == np.uint8
    assert r.mask.shape == (4, 4) and r.mask.dtype == bool
    assert int(r.mask.sum()) == 12
    assert r.tokens_encoded == 4 and r.num_patches == 16
    assert r.error_map.shape == (4, 4) and r.error_map.dtype == np.float32


def test_masked_mse_equals_hand_computation(tiny_loaded, photo_path):
    r = reconstruct(tiny_loaded, photo_path, mask_ratio=0.5, seed=4)
    orig = r.original.astype(np.float64) / 255
    rec = r.reconstruction.astype(np.float64) / 255
    total, count = 0.0, 0
    for i in range(4):
        for j in range(4):
            if r.mask[i, j]:
                d = rec[16 * i:16 * i + 16, 16 * j:16 * j + 16] - orig[16 * i:16 * i + 16, 16 * j:16 * j + 16]
                total += float((d ** 2).sum())
                count += d.size
                assert r.error_map[i, j] == pytest.approx(float((d ** 2).mean()), rel=1e-5)
    assert r.masked_mse == pytest.approx(total / count, rel=1e-12)
    assert r.psnr == pytest.approx(-10 * np.log10(total / count))


def test_masked_and_pasted_panels(tiny_loaded, photo_path):
    r = reconstruct(tiny_loaded, photo_path, mask_ratio=0.5, seed=2)
    hidden = np.repeat(np.repeat(r.mask, 16, 0), 16, 1)
    assert np.all(r.masked[hidden] == 128)
    assert np.array_equal(r.masked[~hidden], r.original[~hidden])
    assert np.array_equal(r.pasted[~hidden], r.original[~hidden])
    assert np.array_equal(r.pasted[hidden], r.reconstruction[hidden])


def test_painted_mask_is_honoured_exactly(tiny_loaded, photo_path):
    painted = np.zeros((4, 4), dtype=bool)
    painted[0, 1] = painted[3, 2] = True
    r = reconstruct(tiny_loaded, photo_path, mask=painted)
    assert np.array_equal(r.mask, painted)
    with pytest.raises(ValueError, match="4x4"):
        reconstruct(tiny_loaded, photo_path, mask=np.zeros((3, 4), bool))
    with pytest.raises(ValueError, match="every patch"):
        reconstruct(tiny_loaded, photo_path, mask=np.ones((4, 4), bool))


def test_batched_prediction_equals_single(tiny_loaded, photo_path):
    original = prepare(tiny_loaded, photo_path)
    masks = torch.stack([make_mask((4, 4), r, 7, p) for r, p in [(0.25, "random"), (0.5, "block"),
                                                                    (0.5, "random"), (0.75, "grid")]])
    batch_px, batch_loss = predict(tiny_loaded, original, masks)
    for i in range(len(masks)):
        px, loss = predict(tiny_loaded, original, masks[i:i + 1])
        assert torch.allclose(batch_px[i], px[0], atol=1e-5)
        assert torch.allclose(batch_loss[i], loss[0], atol=1e-5)


def test_same_inputs_same_outputs(tiny_loaded, photo_path):
    a = reconstruct(tiny_loaded, photo_path, 0.6, seed=9, pattern="block")
    b = reconstruct(tiny_loaded, photo_path, 0.6, seed=9, pattern="block")
    assert np.array_equal(a.reconstruction, b.reconstruction) and a.masked_mse == b.masked_mse


def test_zero_ratio_has_no_hidden_patches(tiny_loaded, photo_path):
    r = reconstruct(tiny_loaded, photo_path, 0.0)
    assert not r.mask.any() and r.masked_mse == 0.0 and r.tokens_encoded == 16


def test_model_loss_in_training_space(tiny_loaded, photo_path):
    """model_loss is the MAE objective: MSE in normalised space over hidden patches."""
    from vitviz.core.images import normalize, uint8_to_unit
    from vitviz.core.masking import mask_to_ids
    from vitviz.core.patches import patchify

    mask = random_mask((4, 4), 0.75, 0)
    r = reconstruct(tiny_loaded, photo_path, 0.75, seed=0)
    x = normalize(uint8_to_unit(r.original), tiny_loaded.data_config).unsqueeze(0)
    with torch.inference_mode():
        pred = tiny_loaded.module(x, mask_to_ids(mask).unsqueeze(0))
    err = (pred - patchify(x, 16)).pow(2).mean(-1)[0]
    assert r.model_loss == pytest.approx(float(err[mask.flatten()].mean()), rel=1e-5)


def test_rejects_non_mae_family(tiny_loaded, photo_path):
    import dataclasses

    other = dataclasses.replace(tiny_loaded, spec=dataclasses.replace(tiny_loaded.spec, family="vit"))
    with pytest.raises(ValueError, match="not a masked autoencoder"):
        reconstruct(other, photo_path)
