import pytest
import torch

from vitviz.core.patches import grid_size, patchify, unpatchify


@pytest.mark.parametrize("shape,p", [((2, 3, 64, 64), 16), ((1, 3, 32, 48), 8), ((3, 1, 28, 14), 14)])
def test_round_trip(shape, p):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    gh, gw = grid_size(shape[2], shape[3], p)
    patches = patchify(x, p)
    assert patches.shape == (shape[0], gh * gw, p * p * shape[1])
    assert torch.equal(unpatchify(patches, p, (gh, gw), shape[1]), x)


def test_patch_order_is_raster_and_pixel_order_is_row_col_channel():
    x = torch.arange(2 * 4 * 4 * 3, dtype=torch.float32).reshape(1, 3, 4, 8)  # grid 2x4 of 2px patches
    patches = patchify(x, 2)
    # Patch 1 is row 0, column 1: pixels x[:, :, 0:2, 2:4], flattened (row, col, channel).
    expected = x[0, :, 0:2, 2:4].permute(1, 2, 0).reshape(-1)
    assert torch.equal(patches[0, 1], expected)
    # Patch 4 starts the second row of patches.
    assert torch.equal(patches[0, 4], x[0, :, 2:4, 0:2].permute(1, 2, 0).reshape(-1))


@pytest.mark.parametrize("h,w,p", [(65, 64, 16), (64, 0, 16), (64, 64, 0)])
def test_bad_sizes_raise(h, w, p):
    with pytest.raises(ValueError):
        grid_size(h, w, p)
