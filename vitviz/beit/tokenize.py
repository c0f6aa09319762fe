"""Visual tokens of an image: ids, the image decoded from its own ids, and the codebook as patches.

Two kinds of tokenizer: a pixel tokenizer (``vq-tiny``, :class:`~vitviz.models.vqvae.VQTokenizer`) decodes
ids back to pixels; a feature tokenizer (``vq-kd-tiny``, :class:`~vitviz.models.vqkd.VQKD`, BEiT v2's
VQ-KD) decodes ids to its teacher's features, which are shown as colours: the first three principal
components of the teacher's own features of the image, each scaled to length 1 (:mod:`vitviz.features.pca`),
the same basis for the teacher's map (``reference``) and the decoded one. Metrics are computed from the returned ``uint8``
arrays (RGB scaled to [0, 1]); a feature tokenizer also reports the cosine between decoded and teacher
features (``feature_cosine``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..features.pca import PCABasis, fit_pca
from ..models.vqkd import VQKD
from ..models.vqvae import VQTokenizer

#: Either kind of visual tokenizer: ``tokenize(imgs01) -> ids``, ``codebook_size``, ``patch_size``.
AnyTokenizer = VQTokenizer | VQKD


@dataclass(frozen=True)
class Tokens:
    """An image as visual tokens.

    Attributes:
        original: ``(S, S, 3)`` uint8, the tokenizer's input view.
        ids: ``(gh, gw)`` int64 code ids.
        decoded: ``(S, S, 3)`` uint8, the image rebuilt from ``ids`` alone.
        codebook_size: number of codes ``K``.
        patch_size: pixels per token side.
        reference: what ``decoded`` rebuilds: ``original`` for a pixel tokenizer; for a feature
            tokenizer the teacher's features in PCA colours ``(S, S, 3)`` uint8 (``decoded`` is then
            the decoded features in the same colours).
        feature_cosine: a feature tokenizer's mean cosine between decoded and teacher features
            (None for a pixel tokenizer).
    """

    original: np.ndarray
    ids: np.ndarray
    decoded: np.ndarray
    codebook_size: int
    patch_size: int
    reference: np.ndarray | None = None
    feature_cosine: float | None = None

    @property
    def kind(self) -> str:
        """``pixels`` (the tokenizer decodes to pixels) or ``features`` (to its teacher's features)."""
        return "pixels" if self.feature_cosine is None else "features"

    @property
    def counts(self) -> np.ndarray:
        """``(K,)`` int64: how often each code occurs in this image."""
        return np.bincount(self.ids.reshape(-1), minlength=self.codebook_size)

    @property
    def mse(self) -> float:
        """Round-trip MSE of ``decoded`` against ``reference`` (``original`` for pixels; RGB in [0, 1])."""
        a = (self.original if self.reference is None else self.reference).astype(np.float64) / 255.0
        b = self.decoded.astype(np.float64) / 255.0
        return float(((a - b) ** 2).mean())

    @property
    def psnr(self) -> float:
        """Round-trip PSNR in dB (peak 1.0); ``inf`` for a perfect match."""
        return float("inf") if self.mse <= 0 else float(-10.0 * np.log10(self.mse))

    def metrics(self) -> dict:
        """JSON-ready summary."""
        out = {"mse": self.mse, "psnr_db": self.psnr, "codebook_size": self.codebook_size,
               "distinct_codes": int((self.counts > 0).sum()), "grid": list(self.ids.shape), "kind": self.kind}
        if self.feature_cosine is not None:
            out["feature_cosine"] = self.feature_cosine
        return out


def _to_unit(original: np.ndarray) -> torch.Tensor:
    """``(S, S, 3)`` uint8 -> ``(1, 3, S, S)`` float in [0, 1]."""
    return torch.from_numpy(np.array(original, dtype=np.uint8, copy=True)).permute(2, 0, 1).float().div(255.0)[None]


def _to_uint8(x: torch.Tensor) -> np.ndarray:
    """``(3, S, S)`` float in [0, 1] -> ``(S, S, 3)`` uint8."""
    return x.clamp(0, 1).mul(255).round().to(torch.uint8).permute(1, 2, 0).cpu().numpy()


def _check_ids(vq: AnyTokenizer, ids: np.ndarray | torch.Tensor) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(ids), dtype=torch.int64, device=vq.codebook.device)
    if t.min() < 0 or t.max() >= vq.codebook_size:
        raise ValueError(f"code ids must lie in [0, {vq.codebook_size}), got {int(t.min())}..{int(t.max())}")
    return t


@torch.inference_mode()
def decode_ids(vq: AnyTokenizer, ids: np.ndarray | torch.Tensor, basis: PCABasis | None = None) -> np.ndarray:
    """``(gh, gw)`` ids -> ``(16 gh, 16 gw, 3)`` uint8 image.

    A feature tokenizer's ids are decoded to features and coloured with ``basis`` (required then:
    the PCA basis of the teacher's features of the image, :func:`tokenize_array`'s).
    """
    t = _check_ids(vq, ids)
    if isinstance(vq, VQKD):
        if basis is None:
            raise ValueError("a feature tokenizer's ids are shown in the colours of a PCA basis; pass one")
        return feature_colours(vq.decode(t[None])[0].float().cpu().numpy(), basis, vq.patch_size)
    return _to_uint8(vq.decode(t[None])[0].float())


def unit_features(feats: np.ndarray) -> np.ndarray:
    """Features ``(..., D)`` scaled to length 1 per patch, float64: VQ-KD's decoder is trained with a cosine
    loss, so only its outputs' directions match the teacher's (their lengths are ~3x shorter)."""
    f = np.asarray(feats, dtype=np.float64)
    return f / np.maximum(np.linalg.norm(f, axis=-1, keepdims=True), 1e-12)


def feature_colours(feats: np.ndarray, basis: PCABasis, patch: int) -> np.ndarray:
    """Features ``(gh, gw, D)`` -> ``(patch gh, patch gw, 3)`` uint8: the first three components of a basis
    fitted on unit-length features (:func:`unit_features`), one flat colour per patch."""
    rgb = basis.to_rgb(unit_features(feats))
    img = np.round(rgb * 255.0).astype(np.uint8)
    return np.repeat(np.repeat(img, patch, axis=0), patch, axis=1)


@torch.inference_mode()
def tokenize_kd_array(vq: VQKD, original: np.ndarray) -> tuple[Tokens, PCABasis]:
    """Tokenize a model view with a feature tokenizer; also returns the PCA basis its colours use."""
    x = _to_unit(original).to(vq.codebook.device)
    f = vq.features(x)  # (1, gh, gw, Dt)
    ids = vq.tokenize_features(f)[0]
    dec = vq.decode(ids[None])
    cos = float(torch.nn.functional.cosine_similarity(dec, f, dim=-1).mean())
    fn = f[0].float().cpu().numpy()
    basis = fit_pca([unit_features(fn.reshape(-1, fn.shape[-1]))])
    p = vq.patch_size
    return Tokens(original=original, ids=ids.cpu().numpy().astype(np.int64),
                  decoded=feature_colours(dec[0].float().cpu().numpy(), basis, p), codebook_size=vq.codebook_size,
                  patch_size=p, reference=feature_colours(fn, basis, p), feature_cosine=cos), basis


@torch.inference_mode()
def tokenize_array(vq: AnyTokenizer, original: np.ndarray) -> Tokens:
    """Tokenize a model view.

    Args:
        vq: the tokenizer (eval mode): pixels (vq-tiny) or features (vq-kd-tiny).
        original: ``(S, S, 3)`` uint8 with ``S`` a multiple of the patch size.

    Returns:
        :class:`Tokens`.
    """
    p = vq.patch_size
    if original.ndim != 3 or original.shape[2] != 3 or original.shape[0] % p or original.shape[1] % p:
        raise ValueError(f"expected an (S, S, 3) uint8 image with S a multiple of {p}, got {original.shape}")
    if isinstance(vq, VQKD):
        return tokenize_kd_array(vq, original)[0]
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
