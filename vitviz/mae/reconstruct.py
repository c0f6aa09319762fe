"""MAE reconstruction of one image under a mask, with its metrics.

Metrics are computed from the returned ``uint8`` panels, so anyone can recompute
them from what is shown: RGB values scaled to [0, 1], squared error averaged over
the pixels and channels of the hidden patches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..core.images import ImageInput, denormalize, normalize, square_view, uint8_to_unit, unit_to_uint8
from ..core.masking import check_mask, check_pattern, make_mask, masked_image, paste_visible, validate_ratio
from ..core.patches import patchify, unpatchify
from ..models.loading import LoadedModel
from ..models.mae import MaskedAutoencoderViT
from ..models.precision import autocast


@dataclass(frozen=True)
class Reconstruction:
    """One reconstruction and its numbers.

    Attributes:
        original: ``(H, W, 3)`` uint8, the model's input view of the image.
        masked: ``(H, W, 3)`` uint8, hidden patches grey.
        reconstruction: ``(H, W, 3)`` uint8, the raw decoder output everywhere.
        pasted: ``(H, W, 3)`` uint8, the reconstruction with visible pixels pasted back.
        mask: ``(gh, gw)`` bool, True = hidden from the encoder.
        masked_mse: MSE over hidden patches, RGB in [0, 1].
        error_map: ``(gh, gw)`` float32 per-patch MSE of the raw reconstruction, RGB in [0, 1].
        model_loss: the MAE objective on hidden patches, in the model's training space.
        tokens_encoded: visible patch tokens the encoder processed (class token excluded).
        num_patches: ``gh * gw``.
        norm_pix: True when the model predicts per-patch normalised pixels and the panels
            were de-normalised with the true patch statistics (which leaks information).
    """

    original: np.ndarray
    masked: np.ndarray
    reconstruction: np.ndarray
    pasted: np.ndarray
    mask: np.ndarray
    masked_mse: float
    error_map: np.ndarray
    model_loss: float
    tokens_encoded: int
    num_patches: int
    patch_size: int
    mask_ratio: float
    norm_pix: bool = False

    @property
    def psnr(self) -> float:
        """PSNR in dB over hidden patches (peak 1.0); ``inf`` for a perfect match."""
        return float("inf") if self.masked_mse <= 0 else float(-10.0 * np.log10(self.masked_mse))

    def metrics(self) -> dict:
        """JSON-ready summary."""
        return {
            "masked_mse": self.masked_mse,
            "psnr_db": self.psnr,
            "model_loss": self.model_loss,
            "tokens_encoded": self.tokens_encoded,
            "num_patches": self.num_patches,
            "mask_ratio": self.mask_ratio,
            "hidden_patches": int(self.mask.sum()),
            "norm_pix": self.norm_pix,
        }


def as_mae(model: LoadedModel) -> MaskedAutoencoderViT:
    """The model's MAE module; ``ValueError`` for any other model."""
    if model.family != "mae" or not isinstance(model.module, MaskedAutoencoderViT):
        raise ValueError(f"{model.name} is not a masked autoencoder; pick an MAE model to reconstruct")
    return model.module


def prepare(model: LoadedModel, image: ImageInput) -> np.ndarray:
    """The model's view of an image: ``(S, S, 3)`` uint8 (shorter side resized, centre crop)."""
    return square_view(image, model.data_config.input_size)


@torch.inference_mode()
def predict(model: LoadedModel, original: np.ndarray, masks: torch.Tensor, max_batch: int = 8
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the MAE on one image under several masks, embedding the patches once.

    One mask runs the plain encoder and decoder. Several masks run in groups of
    ``max_batch``: the encoder packs the groups' visible tokens end to end (no padding;
    :meth:`~vitviz.models.mae.MaskedAutoencoderViT.encode_packed`) and the decoder runs
    them as one batch, so each result equals the single-mask computation (to float
    rounding). The transformer runs under :func:`vitviz.models.precision.autocast` (bf16 on CUDA
    by default); losses and pixels are computed in fp32.

    Args:
        model: a loaded MAE.
        original: ``(S, S, 3)`` uint8 model view.
        masks: ``(B, gh, gw)`` bool, True = hidden.
        max_batch: most masks run together (bounds memory).

    Returns:
        ``(pixels, loss)``: ``(B, 3, S, S)`` float predictions in [0, 1] space (not
        clipped), and ``(B,)`` objective values in training space.
    """
    mae = as_mae(model)
    cfg = model.data_config
    p = mae.patch_size
    x01 = uint8_to_unit(original).to(model.device)
    x = normalize(x01, cfg).unsqueeze(0)
    with autocast(model.device):
        tokens = mae.embed_patches(x)  # (1, L, D), once per image
    target = patchify(x, p)[0]  # (L, p*p*3)
    if model.norm_pix:
        mu = target.mean(dim=-1, keepdim=True)
        var = target.var(dim=-1, keepdim=True)
        target_space = (target - mu) / (var + 1e-6).sqrt()
    else:
        target_space = target
    b = masks.shape[0]
    grid = tuple(masks.shape[1:])
    flat = masks.reshape(b, -1).to(model.device)
    out = torch.empty(b, 3, x.shape[2], x.shape[3], device=model.device)
    losses = torch.empty(b, device=model.device)
    step = max(1, max_batch)
    for start in range(0, b, step):
        group = list(range(start, min(b, start + step)))
        ids = [(~flat[i]).nonzero().flatten() for i in group]
        with autocast(model.device):
            if len(group) == 1:
                pred = mae.forward_decoder(mae.encode_tokens(tokens, ids[0]), ids[0])
            else:
                pred = mae.decode_packed(mae.encode_packed(tokens, ids), ids)
            pred = pred.float()  # (n, L, p*p*3)
        err = (pred - target_space.unsqueeze(0)).pow(2).mean(dim=-1)  # (n, L)
        hidden = flat[group].float()
        rows = torch.tensor(group, device=model.device)
        losses[rows] = (err * hidden).sum(dim=1) / hidden.sum(dim=1).clamp(min=1)
        if model.norm_pix:
            pred = pred * (var + 1e-6).sqrt() + mu
        out[rows] = denormalize(unpatchify(pred, p, grid), cfg)
    return out, losses


def assemble(original: np.ndarray, pixels: torch.Tensor, mask: torch.Tensor, loss: float, patch_size: int,
             norm_pix: bool) -> Reconstruction:
    """Build a :class:`Reconstruction` from one prediction.

    Args:
        original: ``(S, S, 3)`` uint8.
        pixels: ``(3, S, S)`` float prediction in [0, 1] space.
        mask: ``(gh, gw)`` bool.
    """
    p = patch_size
    mask_np = mask.cpu().numpy().astype(bool)
    rec = unit_to_uint8(pixels)
    diff = (rec.astype(np.float64) - original.astype(np.float64)) / 255.0
    gh, gw = mask_np.shape
    per_patch = (diff**2).reshape(gh, p, gw, p, 3).mean(axis=(1, 3, 4))
    hidden = int(mask_np.sum())
    mse = float(per_patch[mask_np].mean()) if hidden else 0.0
    return Reconstruction(
        original=original,
        masked=masked_image(original, mask_np, p),
        reconstruction=rec,
        pasted=paste_visible(rec, original, mask_np, p),
        mask=mask_np,
        masked_mse=mse,
        error_map=per_patch.astype(np.float32),
        model_loss=float(loss),
        tokens_encoded=int((~mask_np).sum()),
        num_patches=gh * gw,
        patch_size=p,
        mask_ratio=hidden / (gh * gw),
        norm_pix=norm_pix,
    )


def reconstruct(
    model: LoadedModel,
    image: ImageInput,
    mask_ratio: float = 0.75,
    seed: int = 0,
    pattern: str = "random",
    mask: np.ndarray | None = None,
) -> Reconstruction:
    """Mask an image and let an MAE reconstruct it.

    Args:
        model: a loaded MAE (:func:`vitviz.load_model`).
        image: anything :func:`vitviz.load_image` reads.
        mask_ratio: fraction of patches hidden, in [0, 0.95].
        seed: seed of the mask generator (random and block patterns).
        pattern: ``random``, ``block`` or ``grid``.
        mask: optional ``(gh, gw)`` bool mask (True = hidden) that overrides
            ``mask_ratio``/``seed``/``pattern`` exactly (a painted mask).

    Returns:
        A :class:`Reconstruction` at the model's input size.

    Raises:
        ImageError: unreadable image. ValueError: bad parameter (names the valid range).
    """
    mae = as_mae(model)
    grid = mae.config.grid
    if mask is None:
        check_pattern(pattern)
        m = make_mask(grid, validate_ratio(mask_ratio), seed, pattern)
    else:
        m = check_mask(mask, grid)
    original = prepare(model, image)
    pixels, losses = predict(model, original, m.unsqueeze(0))
    return assemble(original, pixels[0], m, float(losses[0]), mae.patch_size, model.norm_pix)
