"""Every layer's tokens for one image, for every model of the registry.

One function, :func:`layer_tokens`, runs a model once and returns the token sequence
entering the first block and leaving every block, with the layout of each (which row
is which token: :class:`~vitviz.explain.layout.TokenLayout`). The blocks are recorded
by the package's one capture mechanism (:func:`vitviz.explain.capture.capture_block_tokens`);
results are kept in the package's LRU (:class:`vitviz.cache.LRU`), keyed by model and
image content.

- ViT, DeiT, DINO (timm ``VisionTransformer``): class (and distillation) token, then
  the patches; layers ``embedding, block 1 .. block L``.
- MAE: the encoder with nothing masked (class token, every patch).
- Swin: no prefix token; each stage has its own grid (56, 28, 14, 7 for Swin-T at
  224 px) and width, so layers differ in shape.

Shapes: ``n = L + 1`` layers (index 0 = the input of block 1), ``T_l`` tokens and
``D_l`` channels at layer ``l``, ``(gh, gw)`` its patch grid, ``S`` the input side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..cache import LRU
from ..core.images import ImageInput, check_aspect, model_input, pixels_digest, square_view
from ..core.patches import grid_size
from ..embedding.native import native_input, native_run
from ..core.masking import mask_to_ids
from ..explain.capture import capture_block_tokens
from ..explain.layout import TokenLayout, mae_layout, vit_layout
from ..models.loading import LoadedModel
from ..models.mae import MaskedAutoencoderViT
from .pooling import pooled_logits
from ..models.runner import runs_model

#: Entries kept: a ViT-B entry is about 8 MB (13 x 197 x 768 float32), Swin-T about 7 MB.
CACHE_ENTRIES = 24


@dataclass(frozen=True, eq=False)
class LayerTokens:
    """Every layer's tokens for one image through one model (arrays read-only: cached and shared).

    Attributes:
        model_name: registry name.
        names: ``(n,)`` readable layer names (``embedding``, ``block 1``... or
            ``stage 2 · block 1``...).
        tokens: per layer, ``(T_l, D_l)`` float32 tokens as they leave the layer (the
            residual stream, before any final norm).
        layouts: per layer, the :class:`TokenLayout` of its sequence.
        image: ``(S, S, 3)`` uint8, the model's view (``(H, W, 3)`` for a photo at its own shape).
        logits: ``(1000,)`` the model's own ImageNet logits (classifiers), else None.
        cls_logits: ``(1000,)`` the class token through the classifier head, else None.
        gap_logits: ``(1000,)`` the mean of the final patch tokens through the same head,
            else None.
        head_pool: what the head was trained on: ``token`` (class token), ``avg``
            (patch average) or ``""`` (no classifier).
        random_init: True when the weights are random (architecture only).
    """

    model_name: str
    names: tuple[str, ...]
    tokens: tuple[np.ndarray, ...]
    layouts: tuple[TokenLayout, ...]
    image: np.ndarray
    logits: np.ndarray | None
    cls_logits: np.ndarray | None
    gap_logits: np.ndarray | None
    head_pool: str
    random_init: bool

    @property
    def num_layers(self) -> int:
        """``n``: the embedding plus every block."""
        return len(self.tokens)

    @property
    def num_prefix(self) -> int:
        """Prefix tokens (class, distillation...) of the sequence; 0 for Swin."""
        return self.layouts[-1].num_prefix

    def check_layer(self, layer: int) -> int:
        """Validate a layer index ``0..n-1`` (negative counts from the end)."""
        try:
            i = int(layer)
        except (TypeError, ValueError):
            raise ValueError(f"layer must be a whole number, got {layer!r}") from None
        n = self.num_layers
        if not -n <= i < n:
            raise ValueError(f"layer must be 0..{n - 1} (0 = embedding, {n - 1} = last block), got {layer}")
        return i % n

    def patch_grid(self, layer: int) -> np.ndarray:
        """The patch tokens of one layer on their grid: ``(gh, gw, D_l)`` float32."""
        i = self.check_layer(layer)
        lay = self.layouts[i]
        patches = self.tokens[i][lay.num_prefix:]
        gh, gw = lay.grid
        out = np.zeros((gh, gw, patches.shape[-1]), dtype=np.float32)
        out[lay.patch_rc[:, 0], lay.patch_rc[:, 1]] = patches
        return out

    def patch_size(self, layer: int) -> int:
        """Input pixels per patch side at one layer (Swin's stages merge patches)."""
        return self.layouts[self.check_layer(layer)].patch_size

    def top_k(self, which: str, k: int = 5) -> list[tuple[str, float]]:
        """Top-``k`` labels of ``model``, ``cls`` or ``gap`` logits; ``[]`` without a classifier."""
        from ..explain.labels import top_k

        logits = {"model": self.logits, "cls": self.cls_logits, "gap": self.gap_logits}
        if which not in logits:
            raise ValueError(f"unknown logits {which!r}; choose one of model, cls, gap")
        z = logits[which]
        return [] if z is None else top_k(z, k)


def _grid_layout(grid: tuple[int, int], size: int) -> TokenLayout:
    gh, gw = grid
    rc = np.stack(np.divmod(np.arange(gh * gw), gw), axis=1).astype(np.int64)
    return TokenLayout((), rc, (gh, gw), size // gh, np.zeros((gh, gw), bool), np.zeros(gh * gw, bool))


def _is(module: nn.Module, qualname: str) -> bool:
    import timm.models.swin_transformer as swin
    import timm.models.vision_transformer as vit

    cls = {"vit": vit.VisionTransformer, "swin": swin.SwinTransformer}[qualname]
    return isinstance(module, cls)


def _blocks(model: LoadedModel) -> list[nn.Module]:
    """The transformer blocks whose outputs are the layers, in depth order."""
    module: Any = model.module
    if isinstance(module, MaskedAutoencoderViT) or _is(module, "vit"):
        return list(module.blocks)
    if _is(module, "swin"):
        return [b for stage in module.layers for b in stage.blocks]
    raise ValueError(f"{model.name} ({type(module).__name__}) is not a ViT, DeiT, DINO, MAE or Swin model")


def num_blocks(model: LoadedModel) -> int:
    """Blocks of the model (its layers are ``0..num_blocks``), without a forward pass."""
    return len(_blocks(model))


def _flat(t: torch.Tensor) -> torch.Tensor:
    """``(1, T, D)`` or NHWC ``(1, h, w, D)`` -> ``(T, D)`` float32 on CPU."""
    return t[0].reshape(-1, t.shape[-1]).float().cpu()


def _native_tokens(model: LoadedModel, view: np.ndarray) -> tuple[list[torch.Tensor], list[TokenLayout],
                                                                   np.ndarray | None, np.ndarray | None,
                                                                   np.ndarray | None, str]:
    """Every layer of a run over a native ``(H, W, 3)`` view (:mod:`vitviz.embedding.native`), with the
    classifier's logits computed from the final tokens as its forward would."""
    module: Any = model.module
    grid = grid_size(view.shape[0], view.shape[1], model.patch_size)
    seq, _ = capture_block_tokens(module.blocks, native_run(model, view))
    if isinstance(module, MaskedAutoencoderViT):
        layout = TokenLayout(("cls",), np.stack(np.divmod(np.arange(grid[0] * grid[1]), grid[1]), axis=1),
                             grid, model.patch_size, np.zeros(grid, bool), np.zeros(grid[0] * grid[1], bool))
    else:
        layout = vit_layout(module, grid)
    logits = cls_l = gap_l = None
    head_pool = ""
    if not isinstance(module, MaskedAutoencoderViT) and getattr(module, "num_classes", 0) == 1000:
        with torch.inference_mode():
            final = module.norm(seq[-1].to(model.device))
            logits = module.forward_head(final)[0].float().cpu().numpy()
        head_pool = "avg" if module.global_pool == "avg" else "token"
        if layout.num_prefix >= 1:
            cls_l, gap_l = pooled_logits(final[0], layout.num_prefix, lambda v: module.head(module.fc_norm(v)))
    return seq, [layout] * len(seq), logits, cls_l, gap_l, head_pool


@runs_model
def capture_tokens(model: LoadedModel, image: ImageInput, aspect: str = "square",
                   max_side: int | None = None) -> LayerTokens:
    """Run the model once and keep every layer's tokens (uncached; see :func:`layer_tokens`).

    Raises:
        ValueError: a model family vitviz cannot take apart (or, at ``aspect="native"``, one
        without a variable grid). ImageError: unreadable image.
    """
    module: Any = model.module
    if check_aspect(aspect) == "native":
        view = np.array(native_input(model, image, max_side)[0], dtype=np.uint8, copy=True)
        seq, layouts, logits, cls_l, gap_l, head_pool = _native_tokens(model, view)
        names = ["embedding"] + [f"block {i + 1}" for i in range(len(seq) - 1)]
        return _finish(model, seq, layouts, names, view, logits, cls_l, gap_l, head_pool)
    view = np.array(square_view(image, model.input_size), dtype=np.uint8, copy=True)
    x = model_input(view, model.data_config, model.device)
    s = model.input_size
    logits = cls_l = gap_l = None
    head_pool = ""
    if isinstance(module, MaskedAutoencoderViT):
        hidden = torch.zeros(module.config.grid, dtype=torch.bool)
        ids = mask_to_ids(hidden).to(model.device)
        seq, _ = capture_block_tokens(module.blocks, lambda: module.encode_tokens(module.embed_patches(x), ids))
        layout = mae_layout(module, hidden, "encoder")
        layouts = [layout] * len(seq)
        names = ["embedding"] + [f"block {i + 1}" for i in range(len(seq) - 1)]
    elif _is(module, "vit"):
        seq, out = capture_block_tokens(module.blocks, lambda: module(x))
        layout = vit_layout(module)
        layouts = [layout] * len(seq)
        names = ["embedding"] + [f"block {i + 1}" for i in range(len(seq) - 1)]
        if getattr(module, "num_classes", 0) == 1000 and isinstance(out, torch.Tensor):
            logits = out[0].float().cpu().numpy()
            head_pool = "avg" if module.global_pool == "avg" else "token"
            if layout.num_prefix >= 1:
                with torch.inference_mode():
                    final = module.norm(seq[-1].to(model.device))[0]
                cls_l, gap_l = pooled_logits(final, layout.num_prefix, lambda v: module.head(module.fc_norm(v)))
    elif _is(module, "swin"):
        seq, out = capture_block_tokens(_blocks(model), lambda: module(x))
        layouts = [_grid_layout(tuple(t.shape[1:3]), s) for t in seq]
        names = ["embedding"] + [f"stage {si + 1} · block {bi + 1}" for si, stage in enumerate(module.layers)
                                 for bi in range(len(stage.blocks))]
        if getattr(module, "num_classes", 0) == 1000 and isinstance(out, torch.Tensor):
            logits = out[0].float().cpu().numpy()
            head_pool = "avg"
    else:
        raise ValueError(f"{model.name} ({type(module).__name__}) is not a ViT, DeiT, DINO, MAE or Swin model")
    return _finish(model, seq, layouts, names, view, logits, cls_l, gap_l, head_pool)


def _finish(model: LoadedModel, seq: list[torch.Tensor], layouts: list[TokenLayout], names: list[str],
            view: np.ndarray, logits: np.ndarray | None, cls_l: np.ndarray | None, gap_l: np.ndarray | None,
            head_pool: str) -> LayerTokens:
    """The checked, read-only :class:`LayerTokens` of a capture."""
    tokens = tuple(_flat(t).numpy() for t in seq)
    for t, lay in zip(tokens, layouts):
        if t.shape[0] != lay.num_tokens:
            raise RuntimeError(f"captured {t.shape[0]} tokens but the layout has {lay.num_tokens}")
    for arr in tokens + (view,) + tuple(a for a in (logits, cls_l, gap_l) if a is not None):
        arr.setflags(write=False)
    return LayerTokens(model.name, tuple(names), tokens, tuple(layouts), view, logits, cls_l, gap_l, head_pool,
                       bool(model.random_init))


#: Captured tokens, keyed by model and image content.
CACHE: LRU[tuple, LayerTokens] = LRU(CACHE_ENTRIES)


def _key(model: LoadedModel, view: np.ndarray, aspect: str = "square") -> tuple:
    return (model.name, bool(model.random_init), str(model.device), id(model.architecture), pixels_digest(view), aspect)


def layer_tokens(model: LoadedModel, image: ImageInput, aspect: str = "square",
                 max_side: int | None = None) -> LayerTokens:
    """Every layer's tokens for an image (cached per model, image content and view size).

    ``vitviz.layer_tokens(m, photo, aspect="native", max_side=644)`` keeps the photo's shape: a
    16:9 photo on dinov2-small becomes a 364x644 view, a 26x46 grid (:mod:`vitviz.embedding.native`).

    Args:
        model: any registry model (:func:`vitviz.load_model`); at ``aspect="native"`` one of
            :data:`vitviz.embedding.native.NATIVE_FAMILIES`.
        image: anything :func:`vitviz.load_image` reads, or an ``(S, S, 3)`` uint8 view (at
            ``native``, an ``(H, W, 3)`` view already at its native size).
        aspect: ``square`` (shorter side to the input size, centre crop) or ``native`` (the
            photo's own shape, never cropped: :func:`vitviz.core.images.native_view`).
        max_side: at ``native``, the longer side in pixels, rounded to the patch size (default
            the model's input size).

    Returns:
        :class:`LayerTokens`; ``image`` is the view, ``layouts[i].grid`` its ``(gh, gw)``.
    """
    if check_aspect(aspect) == "native":
        view = native_input(model, image, max_side)[0]
        return CACHE.get_or_compute(_key(model, view, aspect), lambda: capture_tokens(model, view, aspect, max_side))
    view = square_view(image, model.input_size)
    return CACHE.get_or_compute(_key(model, view), lambda: capture_tokens(model, view))
