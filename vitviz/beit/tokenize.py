"""Visual tokens of an image: ids, the image decoded from its own ids, and the codebook as patches.

Metrics are computed from the returned ``uint8`` arrays (RGB scaled to [0, 1]).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..models.vqvae import VQTokenizer


@dataclass(frozen=True)
class Tokens:
    """An image as visual tokens.

    Attributes:
        original: ``(S, S, 3)`` uint8, the tokenizer's input view.
        ids: ``(gh, gw)`` int64 code ids.
        decoded: ``(S, S, 3)`` uint8, the image rebuilt from ``ids`` alone.
        codebook_size: number of codes ``K``.
        patch_size: pixels per token side.
    """

    original: np.ndarray
    ids: np.ndarray
    decoded: np.ndarray
    codebook_size: int
    patch_size: int

    @property
    def counts(self) -> np.ndarray:
        """``(K,)`` int64: how often each code occurs in this image."""
        return np.bincount(self.ids.reshape(-1), minlength=self.codebook_size)

    @property
    def mse(self) -> float:
        """Round-trip MSE of ``decoded`` against ``original`` (RGB in [0, 1])."""
        a = self.original.astype(np.float64) / 255.0
        b = self.decoded.astype(np.float64) / 255.0
        return float(((a - b) ** 2).mean())

    @property
    def psnr(self) -> float:
        """Round-trip PSNR in dB (peak 1.0); ``inf`` for a perfect match."""
        return float("inf") if self.mse <= 0 else float(-10.0 * np.log10(self.mse))

    def metrics(self) -> dict:
        """JSON-ready summary."""
        return {"mse": self.mse, "psnr_db": self.psnr, "codebook_size": self.codebook_size,
                "distinct_codes": int((self.counts > 0).sum()), "grid": list(self.ids.shape)}


def _to_unit(original: np.ndarray) -> torch.Tensor:
    """``(S, S, 3)`` uint8 -> ``(1, 3, S, S)`` float in [0, 1]."""
    return torch.from_numpy(np.array(original, dtype=np.uint8, copy=True)).permute(2, 0, 1).float().div(255.0)[None]


def _to_uint8(x: torch.Tensor) -> np.ndarray:
    """``(3, S, S)`` float in [0, 1] -> ``(S, S, 3)`` uint8."""
    return x.clamp(0, 1).mul(255).round().to(torch.uint8).permute(1, 2, 0).cpu().numpy()


@torch.inference_mode()
def decode_ids(vq: VQTokenizer, ids: np.ndarray | torch.Tensor) -> np.ndarray:
    """``(gh, gw)`` ids -> ``(16 gh, 16 gw, 3)`` uint8 image."""
    t = torch.as_tensor(np.asarray(ids), dtype=torch.int64, device=vq.codebook.device)
    if t.min() < 0 or t.max() >= vq.codebook_size:
        raise ValueError(f"code ids must lie in [0, {vq.codebook_size}), got {int(t.min())}..{int(t.max())}")
    return _to_uint8(vq.decode(t[None])[0].float())


@torch.inference_mode()
def tokenize_array(vq: VQTokenizer, original: np.ndarray) -> Tokens:
    """Tokenize a model view.

    Args:
        vq: the tokenizer (eval mode).
        original: ``(S, S, 3)`` uint8 with ``S`` a multiple of the patch size.

    Returns:
        :class:`Tokens`.
    """
    p = vq.patch_size
    if original.ndim != 3 or original.shape[2] != 3 or original.shape[0] % p or original.shape[1] % p:
        raise ValueError(f"expected an (S, S, 3) uint8 image with S a multiple of {p}, got {original.shape}")
    x = _to_unit(original).to(vq.codebook.device)
    ids = vq.tokenize(x)[0]
    decoded = _to_uint8(vq.decode(ids[None])[0].float())
    return Tokens(original=original, ids=ids.cpu().numpy().astype(np.int64), decoded=decoded,
                  codebook_size=vq.codebook_size, patch_size=p)


@torch.inference_mode()
def codebook_patches(vq: VQTokenizer, batch: int = 128) -> np.ndarray:
    """Every code decoded on its own: ``(K, p, p, 3)`` uint8.

    Each code fills a 3x3 grid (so the decoder sees the code as its own neighbours)
    and the centre patch of the decoded 3p x 3p image is kept.
    """
    k, p = vq.codebook_size, vq.patch_size
    out = np.empty((k, p, p, 3), dtype=np.uint8)
    dev = vq.codebook.device
    for i in range(0, k, batch):
        ids = torch.arange(i, min(k, i + batch), device=dev).view(-1, 1, 1).expand(-1, 3, 3)
        img = vq.decode(ids)[:, :, p : 2 * p, p : 2 * p].float()
        out[i : i + ids.shape[0]] = img.clamp(0, 1).mul(255).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
    return out
