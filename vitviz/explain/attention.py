"""Attention of every ViT-family model vitviz shows, captured once per image and cached.

ViT, DeiT (with its distillation token), DINO and vitviz's MAE (the encoder over the
visible patches of a mask, or the decoder) are captured with :mod:`vitviz.explain.capture`;
the result is an :class:`~vitviz.explain.maps.AttentionMaps`. Captures are kept in
the package's one LRU (``VITVIZ_ATTENTION_CACHE`` entries), so clicking patches is a
lookup, not a new forward pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from .. import settings
from ..cache import LRU
from ..core.images import ImageInput, check_aspect, model_input, pixels_digest, square_view
from ..core.patches import grid_size
from ..embedding.native import native_input, native_run
from ..core.masking import check_mask, make_mask, mask_to_ids, validate_ratio
from ..models.loading import LoadedModel
from ..models.mae import MaskedAutoencoderViT
from .capture import capture_blocks
from .layout import TokenLayout, mae_layout, vit_layout
from .maps import AttentionMaps
from ..models.runner import runs_model

#: Which transformer of a model to capture: ``encoder`` (every model) or ``decoder`` (MAE only).
PARTS: tuple[str, ...] = ("encoder", "decoder")


def check_part(model: LoadedModel, part: str) -> str:
    """Validate ``part`` for ``model``: ``encoder`` always, ``decoder`` for MAE models."""
    valid = PARTS if isinstance(model.architecture, MaskedAutoencoderViT) else ("encoder",)
    if part not in valid:
        raise ValueError(f"unknown part {part!r} for {model.name}; choose one of {', '.join(valid)}")
    return part


def _mae_mask(mae: MaskedAutoencoderViT, mask: np.ndarray | torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return torch.zeros(mae.config.grid, dtype=torch.bool)
    return check_mask(mask, mae.config.grid)


def num_layers(model: LoadedModel, part: str = "encoder") -> int:
    """Number of attention layers of a model part (no forward pass)."""
    check_part(model, part)
    module: Any = model.architecture
    return len(module.decoder_blocks if part == "decoder" else module.blocks)


def prefix_tokens(model: LoadedModel) -> tuple[str, ...]:
    """Names of the model's prefix tokens (``cls``, ``dist``, ``reg0``...), without a forward pass."""
    if isinstance(model.architecture, MaskedAutoencoderViT):
        return ("cls",)
    if _timm_vit(model.architecture):
        return vit_layout(model.architecture).prefix
    return ()


def _timm_vit(module: nn.Module) -> bool:
    from timm.models.vision_transformer import VisionTransformer

    return isinstance(module, VisionTransformer)


def _capture_native(model: LoadedModel, view: np.ndarray) -> AttentionMaps:
    """Every layer's attention over a native ``(H, W, 3)`` view (:mod:`vitviz.embedding.native`)."""
    module: Any = model.module
    grid = grid_size(view.shape[0], view.shape[1], model.patch_size)
    if isinstance(module, MaskedAutoencoderViT):
        rc = np.stack(np.divmod(np.arange(grid[0] * grid[1]), grid[1]), axis=1)
        layout = TokenLayout(("cls",), rc, grid, model.patch_size, np.zeros(grid, bool), np.zeros(len(rc), bool))
    else:
        layout = vit_layout(module, grid)
    attn, _ = capture_blocks(module.blocks, native_run(model, view))
    return maps_of(model, "encoder", attn[:, 0].numpy(), layout, view, None)


@runs_model
def capture(model: LoadedModel, image: ImageInput, mask: np.ndarray | torch.Tensor | None = None,
            part: str = "encoder", aspect: str = "square", max_side: int | None = None) -> AttentionMaps:
    """Run the model once and capture every layer's attention (uncached; see :func:`attention`).

    Args:
        model: a loaded ViT, DeiT, DINO (timm ``VisionTransformer``) or MAE.
        image: anything :func:`vitviz.load_image` reads, or an ``(S, S, 3)`` uint8 view.
        mask: MAE only: ``(gh, gw)`` bool, True = hidden from the encoder (None = all
            visible). The encoder runs on the visible patches only, so hidden patches
            never appear in its layout; the decoder sees mask tokens there.
        part: ``encoder``, or ``decoder`` for an MAE.
        aspect: ``square``, or ``native``: the photo at its own shape (encoder, no mask), its longer
            side ``max_side`` (default the input size) rounded to the patch size.

    Returns:
        :class:`AttentionMaps`.

    Raises:
        ValueError: unsupported model (Swin has windowed attention: see :mod:`vitviz.explain.windows`),
        bad part or mask. ImageError: unreadable image.
    """
    module = model.module
    check_part(model, part)
    if check_aspect(aspect) == "native":
        if mask is not None or part != "encoder":
            raise ValueError("a photo at its own shape runs the encoder with every patch: no mask, no decoder")
        return _capture_native(model, np.array(native_input(model, image, max_side)[0], dtype=np.uint8, copy=True))
    view = np.array(square_view(image, model.input_size), dtype=np.uint8, copy=True)  # own copy: read-only below
    x = model_input(view, model.data_config, model.device)
    logits: np.ndarray | None = None
    if isinstance(module, MaskedAutoencoderViT):
        m = _mae_mask(module, mask)
        ids = mask_to_ids(m).to(model.device)
        layout = mae_layout(module, m, part)
        if part == "encoder":
            attn, _ = capture_blocks(module.blocks, lambda: module.encode_tokens(module.embed_patches(x), ids))
        else:
            attn, _ = capture_blocks(module.decoder_blocks,
                                     lambda: module.forward_decoder(module.forward_encoder(x, ids), ids))
    elif _timm_vit(module):
        if mask is not None:
            raise ValueError(f"{model.name} is not a masked autoencoder; masks apply to MAE models only")
        layout = vit_layout(module)
        attn, out = capture_blocks(module.blocks, lambda: module(x))
        if isinstance(out, torch.Tensor) and out.dim() == 2 and out.shape[-1] == 1000 and module.num_classes == 1000:
            logits = out[0].float().cpu().numpy()
    else:
        raise ValueError(f"{model.name} ({type(module).__name__}) is not a global-attention ViT; "
                         "Swin's windowed attention is shown in the Swin tab")
    return maps_of(model, part, attn[:, 0].numpy(), layout, view, logits)


def maps_of(model: LoadedModel, part: str, a: np.ndarray, layout: TokenLayout, view: np.ndarray,
            logits: np.ndarray | None) -> AttentionMaps:
    """:class:`AttentionMaps` of a captured ``(L, H, T, T)`` attention (the arrays made read-only: cached, shared)."""
    if a.shape[-1] != layout.num_tokens:
        raise RuntimeError(f"captured {a.shape[-1]} tokens but the layout has {layout.num_tokens}")
    for arr in (a, view) + ((logits,) if logits is not None else ()):
        arr.setflags(write=False)
    return AttentionMaps(model.name, part, a, layout, view, logits, bool(getattr(model, "random_init", False)))


#: Captured attention, keyed by model, image content, mask and part. A ViT-B entry is
#: about 22 MB (12 x 12 x 197 x 197 float32).
CACHE: LRU[tuple, AttentionMaps] = LRU(lambda: settings.get("VITVIZ_ATTENTION_CACHE"))


def _key(model: LoadedModel, view: np.ndarray, mask: np.ndarray | torch.Tensor | None, part: str,
         aspect: str = "square") -> tuple:
    digest = pixels_digest(view)
    mkey = None if mask is None else np.asarray(mask, dtype=bool).tobytes() + repr(np.shape(mask)).encode()
    return (model.name, bool(getattr(model, "random_init", False)), str(model.device), id(model.architecture),
            digest, mkey, part, aspect)


def attention(model: LoadedModel, image: ImageInput, mask: np.ndarray | torch.Tensor | None = None,
              part: str = "encoder", aspect: str = "square", max_side: int | None = None) -> AttentionMaps:
    """Every layer's attention for an image, cached per (model, image, mask, part, view size).

    ``a = vitviz.attention(m, img)`` then ``a.rollout()``, ``a.query(layer, (row, col))``,
    ``a.mean_distance()``, ``a.top_k(5)``. Arguments as :func:`capture`; the image
    is keyed by the content of the model's view, so the same photo from another path
    is a cache hit. ``aspect="native"`` keeps the photo's shape (``a.layout.grid`` is then
    ``(gh, gw)`` in its proportions; ``T = 1 + gh*gw`` grows the matrices as ``T**2``).
    """
    check_part(model, part)
    if check_aspect(aspect) == "native":
        view = native_input(model, image, max_side)[0]
        return CACHE.get_or_compute(_key(model, view, mask, part, aspect),
                                    lambda: capture(model, view, mask, part, aspect, max_side))
    view = square_view(image, model.input_size)
    return CACHE.get_or_compute(_key(model, view, mask, part), lambda: capture(model, view, mask, part))


def masked_attention(model: LoadedModel, image: ImageInput, mask_ratio: float = 0.0, seed: int = 0,
                     part: str = "encoder") -> AttentionMaps:
    """:func:`attention` under a seeded random MAE mask (``mask_ratio`` 0 = no mask).

    Args:
        mask_ratio: share of patches hidden from an MAE encoder, in [0, 0.95]; must be
            0 for models that are not MAEs.
        seed: seed of the mask (:func:`vitviz.core.masking.make_mask`, pattern ``random``).

    Raises:
        ValueError: a ratio outside [0, 0.95], or a non-zero ratio for a non-MAE model.
    """
    r = validate_ratio(mask_ratio)
    if r == 0:
        return attention(model, image, None, part)
    if not isinstance(model.architecture, MaskedAutoencoderViT):
        raise ValueError(f"{model.name} is not a masked autoencoder; masking applies to MAE models only")
    return attention(model, image, make_mask(model.architecture.config.grid, r, seed, "random"), part)
