"""Panels built by ``assemble_stops`` (several stops at once, issue 21) against the numpy definitions."""

import numpy as np
import pytest
import torch

from vitviz.core.images import unit_to_uint8
from vitviz.core.masking import make_mask, masked_image, paste_visible
from vitviz.mae.reconstruct import PANEL_CHUNK, assemble_stops, predict, prepare


def _reference(original: np.ndarray, pixels: torch.Tensor, mask: np.ndarray, p: int):
    """The panels and per-patch errors, written plainly in numpy (float64 means)."""
    rec = unit_to_uint8(pixels)
    diff = (rec.astype(np.float64) - original.astype(np.float64)) / 255.0
    gh, gw = mask.shape
    per_patch = (diff**2).reshape(gh, p, gw, p, 3).mean(axis=(1, 3, 4))
    return rec, masked_image(original, mask, p), paste_visible(rec, original, mask, p), per_patch


@pytest.mark.parametrize("norm_pix", [False, True])
def test_batched_panels_equal_the_numpy_definitions(norm_pix):
    gen = torch.Generator().manual_seed(5)
    size, p = 64, 16
    original = torch.randint(0, 256, (size, size, 3), generator=gen, dtype=torch.uint8).numpy()
    ratios = [0.0, 0.25, 0.5, 0.75, 0.9375]  # nothing hidden ... all but one patch hidden
    masks = torch.stack([make_mask((4, 4), r, 7, "random") for r in ratios])
    # predictions outside [0, 1] too, so the clamping and rounding are exercised
    pixels = torch.rand(len(ratios), 3, size, size, generator=gen) * 1.4 - 0.2
    losses = torch.rand(len(ratios), generator=gen)
    assert len(ratios) > PANEL_CHUNK  # several chunks, one of them partial
    batched = assemble_stops(original, pixels.permute(0, 2, 3, 1), masks, losses, p, norm_pix)
    for i, got in enumerate(batched):
        mask = masks[i].numpy()
        rec, masked, pasted, per_patch = _reference(original, pixels[i], mask, p)
        for name, want in (("reconstruction", rec), ("masked", masked), ("pasted", pasted), ("mask", mask),
                           ("original", original)):
            a = getattr(got, name)
            assert a.shape == want.shape and a.dtype == want.dtype and np.array_equal(a, want), name
        assert got.error_map.dtype == np.float32
        np.testing.assert_allclose(got.error_map, per_patch, rtol=1e-6, atol=0)
        mse = float(per_patch[mask].mean()) if mask.any() else 0.0
        assert got.masked_mse == pytest.approx(mse, rel=1e-12, abs=1e-15)
        assert got.model_loss == float(losses[i]) and got.norm_pix == norm_pix
        assert got.tokens_encoded == int((~mask).sum()) and got.mask_ratio == mask.mean()
        single = assemble_stops(original, pixels[i : i + 1].permute(0, 2, 3, 1), masks[i : i + 1],
                                losses[i : i + 1], p, norm_pix)[0]  # the same stop on its own
        assert np.array_equal(single.pasted, got.pasted) and single.masked_mse == got.masked_mse


def test_panels_are_independent_arrays():
    """Stops built in one chunk do not share pixels: editing one panel leaves the others."""
    original = np.full((32, 32, 3), 200, dtype=np.uint8)
    masks = torch.stack([make_mask((2, 2), r, 0, "random") for r in (0.25, 0.5)])
    out = assemble_stops(original, torch.zeros(2, 32, 32, 3), masks, torch.zeros(2), 16, False)
    before = out[1].pasted.copy()
    out[0].pasted[:] = 7
    assert np.array_equal(out[1].pasted, before)
    assert np.array_equal(original, np.full((32, 32, 3), 200, dtype=np.uint8))


def test_channels_last_pixels_are_the_same_numbers(tiny_loaded, photo_path):
    original = prepare(tiny_loaded, photo_path)
    masks = torch.stack([make_mask((4, 4), r, 2, "random") for r in (0.0, 0.5, 0.75)])
    chw, loss_a = predict(tiny_loaded, original, masks, max_batch=2)
    hwc, loss_b = predict(tiny_loaded, original, masks, max_batch=2, channels_last=True)
    assert hwc.shape == (3, 64, 64, 3)
    assert torch.equal(chw.permute(0, 2, 3, 1), hwc) and torch.equal(loss_a, loss_b)
