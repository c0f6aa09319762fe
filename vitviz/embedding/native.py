"""Photos at their own shape: a model run on an ``(H, W)`` view whose grid is not its training grid.

Models with absolute position embeddings accept any grid once the table is made for it; each is
given the table the way its own upstream code makes it:

- **DINOv2** (``dinov2`` family): the table the weights were trained with (37x37 for
  ``dinov2-small``, kept on the module as ``pos_embed_native`` by the loader) resampled by
  DINOv2's ``interpolate_pos_encoding``: bicubic with the scale factor ``(n + 0.1) / N`` per axis
  (:func:`vitviz.core.pos_embed.dinov2_resample_pos_embed`). Random weights have no such table:
  their own (16x16) table is resampled the same way.
- **timm ViTs** (``vit``, ``deit``, ``dino``): timm's ``dynamic_img_size`` path, size-based bicubic
  with antialiasing (``timm.layers.resample_abs_pos_embed``,
  :func:`vitviz.core.pos_embed.interpolate_pos_embed`).
- **MAE** (``mae``): the fixed 2-D sin-cos table recomputed for the grid (what MAE's
  ``get_2d_sincos_pos_embed`` builds; the reference code only builds square grids, the rows and
  columns here are its formula on ``gh`` and ``gw``). The encoder sees every patch.

Swin (windows of fixed size over a grid it pads) and the token models are not offered.

Shapes: ``(H, W)`` the view in pixels, multiples of the patch size ``P``; ``(gh, gw) = (H/P, W/P)``;
``k`` prefix tokens; ``D`` the width.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ..core.images import ImageInput, model_input, model_view
from ..core.patches import grid_size
from ..core.pos_embed import PositionEmbeddings, dinov2_resample_pos_embed, interpolate_pos_embed, sincos_at
from ..models.dinov2 import NATIVE_POS_BUFFER
from ..models.loading import LoadedModel
from ..models.mae import MaskedAutoencoderViT
from .sequence import encode, patch_tokens, position_embeddings

#: Families whose views can take a photo at its own shape.
NATIVE_FAMILIES: tuple[str, ...] = ("dinov2", "vit", "deit", "dino", "mae")

#: How each family's table is made for a new grid, in words (for captions and docs).
METHODS: dict[str, str] = {
    "dinov2": "DINOv2's bicubic resampling with its +0.1 offset, from the trained 37x37 table",
    "vit": "timm's dynamic_img_size resampling (bicubic, antialiased)",
    "deit": "timm's dynamic_img_size resampling (bicubic, antialiased)",
    "dino": "timm's dynamic_img_size resampling (bicubic, antialiased)",
    "mae": "MAE's fixed sin-cos table recomputed for the grid",
}


def supports_native(model: LoadedModel) -> bool:
    """Whether ``model`` can run on a photo at its own shape (:data:`NATIVE_FAMILIES`)."""
    return model.family in NATIVE_FAMILIES


def check_native(model: LoadedModel) -> None:
    """Raise unless ``model`` can run at its own shape.

    Raises:
        ValueError: naming the families that can.
    """
    if not supports_native(model):
        raise ValueError(f"{model.name} ({model.family}) runs only on its square input; a photo's own shape "
                         f"needs one of the families {', '.join(NATIVE_FAMILIES)}")


def grid_positions(model: LoadedModel, grid: tuple[int, int]) -> PositionEmbeddings:
    """The model's position embeddings for a ``(gh, gw)`` grid, made as its upstream code makes them.

    At the model's own grid this is its own table (an MAE's stored sin-cos table is fp16-rounded:
    recomputing it would differ by about 2e-4).

    Returns:
        ``(1, k + gh*gw, D)`` (MAE: ``k = 1``, the class row zeros).
    """
    check_native(model)
    module = model.module
    own = position_embeddings(module)
    if tuple(grid) == tuple(own.grid):  # the model's own grid: its own table (the loader made it the same way)
        return own
    if isinstance(module, MaskedAutoencoderViT):
        return sincos_at(own, grid)
    if model.family == "dinov2":
        trained = getattr(module, NATIVE_POS_BUFFER, None)
        if isinstance(trained, torch.Tensor):
            side = int(round((trained.shape[1] - own.num_prefix) ** 0.5))
            own = PositionEmbeddings(trained, (side, side), own.num_prefix)
        return dinov2_resample_pos_embed(own, grid)
    return interpolate_pos_embed(own, grid)


def native_input(model: LoadedModel, image: ImageInput, max_side: int | None = None
                 ) -> tuple[np.ndarray, tuple[int, int]]:
    """The native view of an image for ``model`` and its grid.

    Args:
        max_side: longer side in pixels (rounded to the patch size); default the model's input size.

    Returns:
        ``((H, W, 3) uint8 view, (gh, gw))``.
    """
    check_native(model)
    p = model.patch_size
    view = model_view(image, model.input_size, p, "native", max_side)
    return view, grid_size(view.shape[0], view.shape[1], p)


def native_run(model: LoadedModel, view: np.ndarray) -> Callable[[], torch.Tensor]:
    """The forward pass over a native view, as a callable for the capture mechanism.

    Args:
        view: ``(H, W, 3)`` uint8 with ``H, W`` multiples of the patch size.

    Returns:
        ``run()`` giving ``(1, k + gh*gw, D)`` tokens after the final norm (every patch kept).
    """
    grid = grid_size(view.shape[0], view.shape[1], model.patch_size)
    pos = grid_positions(model, grid)
    x = model_input(view, model.data_config, model.device)
    return lambda: encode(model.module, patch_tokens(model.module, x), pos)
