"""MAE reconstruction of one image under a mask, with its metrics.

Metrics are computed from the returned ``uint8`` panels, so anyone can recompute
them from what is shown: RGB values scaled to [0, 1], squared error averaged over
the pixels and channels of the hidden patches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..core.images import ImageInput, denormalize, normalize, square_view, uint8_to_unit
from ..core.masking import HIDDEN_GREY, check_mask, check_pattern, make_mask, validate_ratio
from ..core.patches import patchify, unpatchify
from ..models.loading import LoadedModel
from ..models.mae import MaskedAutoencoderViT
from ..models.precision import autocast
from ..models.runner import runs_model, runs_with_model


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


def mae_architecture(model: LoadedModel) -> MaskedAutoencoderViT:
    """The model's MAE architecture, for its config and shapes (:attr:`~vitviz.models.loaded.LoadedModel.architecture`:
    reading it loads no weights); ``ValueError`` for any other model."""
    if model.family != "mae" or not isinstance(arch := model.architecture, MaskedAutoencoderViT):
        raise ValueError(f"{model.name} is not a masked autoencoder; pick an MAE model to reconstruct")
    return arch


def as_mae(model: LoadedModel) -> MaskedAutoencoderViT:
    """The model's MAE module, with its weights; ``ValueError`` for any other model."""
    mae_architecture(model)
    return model.module


def prepare(model: LoadedModel, image: ImageInput) -> np.ndarray:
    """The model's view of an image: ``(S, S, 3)`` uint8 (shorter side resized, centre crop)."""
    return square_view(image, model.data_config.input_size)


@runs_model
@torch.inference_mode()
def predict(model: LoadedModel, original: np.ndarray, masks: torch.Tensor, max_batch: int = 8,
            channels_last: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
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
        channels_last: return the pixels as ``(B, S, S, 3)`` (straight from the patch
            layout, one copy), the layout of the panels.

    Returns:
        ``(pixels, loss)``: ``(B, 3, S, S)`` float predictions in [0, 1] space (not
        clipped; ``(B, S, S, 3)`` with ``channels_last``), and ``(B,)`` objective values
        in training space.
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
    gh, gw = grid = tuple(masks.shape[1:])
    flat = masks.reshape(b, -1).to(model.device)
    size = x.shape[2]
    shape = (b, size, size, 3) if channels_last else (b, 3, size, size)
    out = torch.empty(shape, device=model.device)
    losses = torch.empty(b, device=model.device)
    step = max(1, max_batch)
    for start in range(0, b, step):
        stop = min(b, start + step)
        n = stop - start
        ids = [(~flat[i]).nonzero().flatten() for i in range(start, stop)]
        with autocast(model.device):
            if n == 1:
                pred = mae.forward_decoder(mae.encode_tokens(tokens, ids[0]), ids[0])
            else:
                pred = mae.decode_packed(mae.encode_packed(tokens, ids), ids)
            pred = pred.float()  # (n, L, p*p*3)
        err = (pred - target_space.unsqueeze(0)).pow(2).mean(dim=-1)  # (n, L)
        hidden = flat[start:stop].float()
        losses[start:stop] = (err * hidden).sum(dim=1) / hidden.sum(dim=1).clamp(min=1)
        if model.norm_pix:
            pred = pred * (var + 1e-6).sqrt() + mu
        # De-normalised in the patch layout (pixels in (row, col, channel) order), as (n, 3, L*p*p, 1)
        # views for denormalize; the result keeps the layout: (n, L*p*p, 3) after the transpose back.
        px = denormalize(pred.view(n, -1, 3).transpose(1, 2).unsqueeze(-1), cfg).squeeze(-1).transpose(1, 2)
        if channels_last:
            out[start:stop].view(n, gh, p, gw, p, 3).copy_(px.reshape(n, gh, gw, p, p, 3).permute(0, 1, 3, 2, 4, 5))
        else:
            out[start:stop] = unpatchify(px.reshape(n, gh * gw, p * p * 3), p, grid)
    return out, losses


#: Stops whose panels :func:`assemble_stops` builds together, so that their temporaries stay in
#: cache (1 to 4 cost the same for mae-tiny; 10 and all 19 at once are slower; bench/README.md).
PANEL_CHUNK = 2


def assemble_stops(original: np.ndarray, pixels: torch.Tensor, masks: torch.Tensor, losses: torch.Tensor,
                   patch_size: int, norm_pix: bool) -> list[Reconstruction]:
    """Build a :class:`Reconstruction` for each of several predictions of one image.

    The panels are uint8 (the prediction clipped to [0, 1], scaled by 255 and rounded);
    hidden patches are pasted and greyed with uint8 arithmetic. The per-patch errors are
    the squared differences of the 0-255 levels, summed exactly (whole numbers: a row of
    ``3p`` squares stays below 2**24 in float32, the ``p`` rows are added in float64),
    then divided once by ``3 p^2 255^2``.

    Args:
        original: ``(S, S, 3)`` uint8.
        pixels: ``(B, S, S, 3)`` float predictions in [0, 1] space (not clipped), as
            :func:`predict` returns them with ``channels_last``.
        masks: ``(B, gh, gw)`` bool, True = hidden.
        losses: ``(B,)`` model objectives.
        patch_size: patch side ``p``.
        norm_pix: whether the model predicts per-patch normalised pixels.

    Returns:
        B results (their arrays are views of per-chunk buffers).
    """
    p = patch_size
    b, s = pixels.shape[:2]
    gh, gw = masks.shape[1:]
    pixels = pixels.to("cpu", torch.float32).contiguous()
    masks = masks.to("cpu", torch.bool)
    orig = torch.tensor(original, dtype=torch.uint8)  # (S, S, 3)
    orig_f = orig.float()
    to_grey = (HIDDEN_GREY - orig.to(torch.int16)).to(torch.uint8)  # added to orig (mod 256): grey
    loss_list = losses.double().cpu().tolist()
    row_dtype = torch.float32 if 3 * p * 255**2 < 2**24 else torch.float64
    out: list[Reconstruction] = []
    for start in range(0, b, PANEL_CHUNK):
        n = min(PANEL_CHUNK, b - start)
        mk = masks[start:start + n]
        levels = pixels[start:start + n].clamp(0, 1).mul_(255).round_()  # whole numbers 0 ... 255
        rec = levels.to(torch.uint8)
        hidden = mk.to(torch.uint8).view(n, gh, 1, gw, 1).expand(n, gh, p, gw, p * 3).reshape(n, s, s, 3)
        pasted = (rec - orig).mul_(hidden).add_(orig)  # uint8 wrap-around: rec where hidden, else orig
        masked = (hidden * to_grey).add_(orig)
        diff = levels.sub_(orig_f)
        sums = diff.mul_(diff).view(n, gh, p, gw, p * 3).sum(-1, dtype=row_dtype).double().sum(2)  # (n, gh, gw)
        per_patch = (sums / (p * p * 3 * 255.0**2)).numpy()
        for i in range(n):
            mask_np = mk[i].numpy()
            hidden_count = int(mask_np.sum())
            out.append(Reconstruction(
                original=original,
                masked=masked[i].numpy(),
                reconstruction=rec[i].numpy(),
                pasted=pasted[i].numpy(),
                mask=mask_np,
                masked_mse=float(per_patch[i][mask_np].mean()) if hidden_count else 0.0,
                error_map=per_patch[i].astype(np.float32),
                model_loss=loss_list[start + i],
                tokens_encoded=gh * gw - hidden_count,
                num_patches=gh * gw,
                patch_size=p,
                mask_ratio=hidden_count / (gh * gw),
                norm_pix=norm_pix,
            ))
    return out


@runs_with_model
def predict_stops(model: LoadedModel, original: np.ndarray, masks: torch.Tensor,
                  max_batch: int = 8) -> list[Reconstruction]:
    """:func:`predict` under each mask, then :func:`assemble_stops`: the results of one image under several masks.

    One call marked :func:`~vitviz.models.runner.runs_with_model`: with model workers the panels are assembled in
    the worker that predicted them, and the uint8 panels (smaller than the float predictions) cross back.

    Args:
        model: a loaded MAE.
        original: ``(S, S, 3)`` uint8 model view.
        masks: ``(B, gh, gw)`` bool, True = hidden.
        max_batch: most masks run together (bounds memory).

    Returns:
        B results, in the order of ``masks``.
    """
    mae = as_mae(model)
    pixels, losses = predict(model, original, masks, max_batch=max_batch, channels_last=True)
    return assemble_stops(original, pixels, masks, losses, mae.patch_size, model.norm_pix)


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
    return predict_stops(model, prepare(model, image), m.unsqueeze(0))[0]
