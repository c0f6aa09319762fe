import torch

from vitviz.mae.baseline import ring_mean_fill


def test_nearest_ring_mean():
    img = torch.rand(3, 80, 80, generator=torch.Generator().manual_seed(0))
    mask = torch.zeros(5, 5, dtype=torch.bool)
    mask[1:4, 1:4] = True  # 3x3 hidden block: centre has no visible 8-neighbour
    out = ring_mean_fill(img, mask, 16)
    means = img.reshape(3, 5, 16, 5, 16).mean(dim=(2, 4))
    # (1, 1): visible ring-1 neighbours are (0,0),(0,1),(0,2),(1,0),(2,0)
    nb = [(0, 0), (0, 1), (0, 2), (1, 0), (2, 0)]
    assert torch.allclose(out[:, 16, 16], torch.stack([means[:, i, j] for i, j in nb]).mean(0), atol=1e-6)
    # (2, 2): ring 1 is all hidden, ring 2 is the whole border (16 patches)
    border = [(i, j) for i in range(5) for j in range(5) if i in (0, 4) or j in (0, 4)]
    assert torch.allclose(out[:, 40, 40], torch.stack([means[:, i, j] for i, j in border]).mean(0), atol=1e-6)
    # visible pixels are untouched; hidden patches are flat
    assert torch.equal(out[:, :16], img[:, :16])
    assert torch.all(out[:, 16:32, 16:32] == out[:, 16:17, 16:17])
