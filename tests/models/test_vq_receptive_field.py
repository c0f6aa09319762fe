"""vq-tiny's receptive field, measured from its gradients, is the one its texts state: a code is computed
mostly from its patch's 3x3 neighbourhood, within 7x7 patches; the decoder sees 11x11 codes."""

from __future__ import annotations

import numpy as np
import torch

from vitviz.assets import assets_dir, example_images
from vitviz.core.images import load_image
from vitviz.models.loading import load_model

CENTRE = (7, 7)


def _photo() -> torch.Tensor:
    path = next(p for p in example_images() if str(p).endswith("chelsea.jpg"))
    img = np.array(load_image(path).convert("RGB").resize((224, 224)))
    return torch.from_numpy(img).permute(2, 0, 1)[None].float().div(255)


def _weight_by_patch(grad: torch.Tensor, p: int = 16) -> np.ndarray:
    """``(1, 3, H, W)`` input gradient -> ``(H/p, W/p)`` summed |gradient| per patch, the centre's = 1."""
    g = grad[0].abs().reshape(3, grad.shape[2] // p, p, grad.shape[3] // p, p).sum((0, 2, 4)).numpy()
    return g / g[CENTRE]


def _rings(w: np.ndarray) -> dict[int, np.ndarray]:
    rows, cols = np.indices(w.shape)
    ring = np.maximum(abs(rows - CENTRE[0]), abs(cols - CENTRE[1]))
    return {d: w[ring == d] for d in range(int(ring.max()) + 1)}


def test_a_code_reads_mostly_its_3x3_neighbourhood_within_7x7_patches() -> None:
    tok = load_model("vq-tiny", device="cpu").module
    x = _photo().requires_grad_(True)
    tok.encode(x)[0, CENTRE[0], CENTRE[1]].sum().backward()
    rings = _rings(_weight_by_patch(x.grad))
    assert all(np.all(r > 0) for d, r in rings.items() if d <= 3)  # every patch within 7x7 counts
    assert all(np.all(r == 0) for d, r in rings.items() if d >= 4)  # none beyond
    assert 0.05 <= round(float(rings[1].min()), 2) and round(float(rings[1].max()), 2) <= 0.16  # as the card says
    assert rings[3].max() <= 0.01
    assert rings[1].mean() > 3 * rings[2].mean() > 3 * rings[3].mean()  # mostly the 3x3 neighbourhood


def test_the_decoder_sees_11x11_codes() -> None:
    tok = load_model("vq-tiny", device="cpu").module
    zq = tok.codebook[torch.zeros(1, 14, 14, dtype=torch.long)].clone().requires_grad_(True)
    out = tok.decode_vectors(zq)  # (1, 3, 224, 224)
    out[0, :, 16 * CENTRE[0]:16 * CENTRE[0] + 16, 16 * CENTRE[1]:16 * CENTRE[1] + 16].sum().backward()
    seen = zq.grad[0].abs().sum(-1).numpy() > 0
    rows, cols = np.nonzero(seen)
    assert (rows.min(), rows.max(), cols.min(), cols.max()) == (2, 12, 2, 12)


def test_the_texts_state_that_receptive_field() -> None:
    from importlib import resources

    card = (assets_dir() / "models" / "vq-tiny.md").read_text(encoding="utf-8")
    help_ = (resources.files("vitviz.ui") / "helptext" / "beit.md").read_text(encoding="utf-8")
    assert "7x7-patch receptive field" in card and "11x11 codes" in card
    assert "7×7-patch receptive field" in help_ and "11×11 codes" in help_
    assert "0.05-0.16" in card and "at most 0.01 at distance 3" in card
