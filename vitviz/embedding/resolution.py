"""A model at another resolution: position embeddings resampled (or, for an MAE,
recomputed) for the new grid."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from ..cache import LRU
from ..core.patches import grid_size
from ..core.pos_embed import PositionEmbeddings, interpolate_pos_embed, sincos_at
from ..models.loading import LoadedModel
from ..models.mae import MaskedAutoencoderViT
from ..models.runner import runs_model
from .sequence import module_device, view_tensor, encode, patch_tokens, position_embeddings

#: MAE copies resized to another resolution (parameters shared with the original).
_RESIZED: LRU[tuple, MaskedAutoencoderViT] = LRU(4, budgeted=False)  # models, counted by number


def resize_mae(module: MaskedAutoencoderViT, side: int, method: str = "sincos") -> MaskedAutoencoderViT:
    """An MAE for ``side x side`` inputs, sharing every weight with ``module`` but the positions.

    Args:
        module: the MAE at its training size.
        side: new input side, a multiple of the patch size.
        method: ``sincos`` recomputes the fixed sin-cos embeddings for the new grid (what
            MAE's reference code builds for any ``img_size``); ``bicubic`` interpolates the
            stored ones as timm does.

    Returns:
        A new module in eval mode (parameters are the original tensors, not copies).
    """
    if method not in ("sincos", "bicubic"):
        raise ValueError(f"unknown position method {method!r}; choose sincos or bicubic")
    c = module.config
    if side % c.patch_size or side <= 0:
        raise ValueError(f"the side must be a positive multiple of the patch size {c.patch_size}, got {side}")
    config = replace(c, img_size=int(side))
    grid = config.grid
    enc, dec = position_embeddings(module), PositionEmbeddings(module.decoder_pos_embed.detach(), c.grid, 1)
    if method == "sincos":
        enc, dec = sincos_at(enc, grid), sincos_at(dec, grid)
    else:
        enc, dec = interpolate_pos_embed(enc, grid), interpolate_pos_embed(dec, grid)
    with torch.device("meta"):
        new = MaskedAutoencoderViT(config)
    sd = dict(module.state_dict())
    sd["pos_embed"], sd["decoder_pos_embed"] = enc.full.clone(), dec.full.clone()
    new.load_state_dict(sd, strict=True, assign=True)
    return new.eval().requires_grad_(False)


def resized_model(model: LoadedModel, side: int, method: str = "sincos") -> LoadedModel:
    """An MAE at ``side`` px as a :class:`LoadedModel` (cached), for :func:`vitviz.reconstruct`.

    At the model's own size with ``sincos`` this is ``model`` itself.

    Raises:
        ValueError: a model that is not an MAE, a bad side or method.
    """
    if not isinstance(model.module, MaskedAutoencoderViT):
        raise ValueError(f"{model.name} is not a masked autoencoder; reconstruction needs an MAE")
    if side == model.input_size and method == "sincos":
        return model
    module = _RESIZED.get_or_compute((model.choice, str(model.device), id(model.module), int(side), method),
                                     lambda: resize_mae(model.module, side, method))
    return replace(model, module=module, data_config=replace(model.data_config, input_size=int(side)))


@dataclass(frozen=True)
class ResolutionRun:
    """The encoder run once at another resolution with interpolated positions.

    Attributes:
        side: input side in pixels.
        grid: ``(gh, gw)`` there.
        pos: the interpolated position embeddings.
        seconds: wall time of the forward pass.
        output_shape: ``(1, k + gh*gw, D)``.
    """

    side: int
    grid: tuple[int, int]
    pos: PositionEmbeddings
    seconds: float
    output_shape: tuple[int, ...]


@runs_model
def run_at_resolution(model: LoadedModel, view: np.ndarray) -> ResolutionRun:
    """Run the encoder on a ``(S, S, 3)`` view with positions interpolated bicubically to its grid."""
    side = view.shape[0]
    grid = grid_size(view.shape[0], view.shape[1], model.patch_size)
    pos = interpolate_pos_embed(position_embeddings(model.module), grid)
    x = view_tensor(view, model.data_config, module_device(model.module))
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = encode(model.module, patch_tokens(model.module, x), pos)
    return ResolutionRun(side, grid, pos, time.perf_counter() - t0, tuple(out.shape))
