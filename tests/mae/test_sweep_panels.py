"""The sweep's batched panels (issue 21) equal the single-stop ``assemble``, byte for byte."""

import numpy as np
import pytest
import torch

from vitviz.core.masking import make_mask
from vitviz.mae.reconstruct import assemble
from vitviz.mae.sweep import PANEL_CHUNK, assemble_stops


@pytest.mark.parametrize("norm_pix", [False, True])
def test_batched_panels_equal_assemble(norm_pix):
    gen = torch.Generator().manual_seed(5)
    size, p = 64, 16
    original = torch.randint(0, 256, (size, size, 3), generator=gen, dtype=torch.uint8).numpy()
    ratios = [0.0, 0.25, 0.5, 0.75, 0.9375]  # nothing hidden ... all but one patch hidden
    masks = torch.stack([make_mask((4, 4), r, 7, "random") for r in ratios])
    # predictions outside [0, 1] too, so the clamping and rounding are exercised
    pixels = torch.rand(len(ratios), 3, size, size, generator=gen) * 1.4 - 0.2
    losses = torch.rand(len(ratios), generator=gen)
    assert len(ratios) > PANEL_CHUNK  # several chunks, one of them partial
    batched = assemble_stops(original, pixels, masks, losses, p, norm_pix)
    for i, got in enumerate(batched):
        want = assemble(original, pixels[i], masks[i], float(losses[i]), p, norm_pix)
        for name in ("original", "masked", "reconstruction", "pasted", "mask"):
            a, b = getattr(got, name), getattr(want, name)
            assert a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b), name
        assert got.error_map.dtype == np.float32
        np.testing.assert_allclose(got.error_map, want.error_map, rtol=1e-6, atol=0)
        assert got.masked_mse == pytest.approx(want.masked_mse, rel=1e-12, abs=1e-15)
        assert got.metrics() == pytest.approx(want.metrics(), rel=1e-12, abs=1e-15)


def test_panels_are_independent_arrays():
    """Stops built in one chunk do not share pixels: editing one panel leaves the others."""
    original = np.full((32, 32, 3), 200, dtype=np.uint8)
    masks = torch.stack([make_mask((2, 2), r, 0, "random") for r in (0.25, 0.5)])
    out = assemble_stops(original, torch.zeros(2, 3, 32, 32), masks, torch.zeros(2), 16, False)
    before = out[1].pasted.copy()
    out[0].pasted[:] = 7
    assert np.array_equal(out[1].pasted, before)
    assert np.array_equal(original, np.full((32, 32, 3), 200, dtype=np.uint8))
