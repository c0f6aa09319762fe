"""How an image becomes a sequence of tokens: patches, the projection E, positions.

Everything the "Patches" tab computes lives here (pure functions, no gradio):

* **Patch-grid arithmetic** for any patch size and resolution (:func:`patch_grid`).
* **The token sequence**: patches in order, flattened pixel vectors, their
  embedding ``E x + b`` through the model's own projection.
* **Position embeddings**: cosine-similarity maps (one patch against all, and the
  full grid of maps of the ViT paper's figure 7), bicubic interpolation to another
  grid with ``timm.layers.resample_abs_pos_embed`` as timm does, and for MAE a
  resized copy of the model (sin-cos recomputed, or interpolated) to reconstruct at
  another resolution.
* **The shuffle demonstration**: the encoder without position embeddings is
  permutation-equivariant; with them it is not.

Crop/resize policy (one policy, used for every patch size and resolution):

1. The requested resolution ``R`` is snapped to the **nearest multiple of the patch
   size** ``P`` (halves round up, at least one patch): ``S = P * max(1, floor(R/P + 1/2))``.
   ``R = 120, P = 16 -> S = 128``; ``R = 225, P = 14 -> S = 224``.
2. The image is resized so that its **shorter side is S** (bicubic, as
   :func:`vitviz.images.square_resize`), then **centre-cropped to S x S**; the
   longer side loses ``(long - S) // 2`` pixels before the crop and the rest after.
3. The grid is ``(S/P) x (S/P)`` patches in raster order, as :func:`vitviz.patches.patchify`.

This is the models' own policy (square inputs; shorter side then centre crop), so
the grid drawn is exactly the grid a ViT at that resolution sees.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch import nn

from .flops import global_attention_flops
from .images import DataConfig, ImageInput, load_image, normalize, square_resize, to_uint8, uint8_to_unit
from .models.loading import LoadedModel, available_models, default_device, load_model
from .models.mae import MaskedAutoencoderViT, sincos_pos_embed
from .models.registry import get_spec, model_names
from .patches import grid_size, patchify
from .seeding import isolated_seed

#: Patch sizes offered by the tab.
PATCH_SIZES: tuple[int, ...] = (4, 8, 14, 16, 32)
#: Range of resolutions the library accepts (the tab offers 112..448).
MIN_RESOLUTION, MAX_RESOLUTION = 1, 1024
#: The reference for relative attention cost: ViT-B/16 at 224 px has 196 patches + [CLS].
REFERENCE_TOKENS = 197
#: Width used for the FLOPs readout of one attention layer (ViT-B).
REFERENCE_WIDTH = 768
#: Families with absolute position embeddings this module understands.
POS_FAMILIES: tuple[str, ...] = ("mae", "vit", "deit", "dino")
#: Suffix of a model choice with random weights (timm architectures only).
RANDOM_SUFFIX = ":random"
#: Seed of the random weights (fixed so that every user sees the same model).
RANDOM_SEED = 0


# ----------------------------------------------------------------------------- patch-grid arithmetic


def snap_to_patch(resolution: int, patch_size: int) -> int:
    """The side ``S`` actually used: the multiple of ``patch_size`` nearest to ``resolution``.

    Halves round up; at least one patch. ``snap_to_patch(120, 16) == 128``.

    Raises:
        ValueError: non-positive patch size, or a resolution outside 1..1024.
    """
    p, r = int(patch_size), int(resolution)
    if p <= 0:
        raise ValueError(f"the patch size must be a positive number of pixels, got {patch_size}")
    if not MIN_RESOLUTION <= r <= MAX_RESOLUTION:
        raise ValueError(f"the resolution must be between {MIN_RESOLUTION} and {MAX_RESOLUTION} px, got {resolution}")
    return p * max(1, math.floor(r / p + 0.5))


@dataclass(frozen=True)
class PatchGrid:
    """The geometry of one image cut into patches under the module's policy.

    Attributes:
        image_size: ``(H, W)`` of the original image in pixels.
        patch_size: ``P``.
        requested: the resolution asked for, ``R``.
        side: ``S``, the model input side actually used (multiple of ``P``).
        resized: ``(H', W')`` after resizing the shorter side to ``S``.
        crop_top: rows dropped above the square, in the resized image.
        crop_left: columns dropped left of the square, in the resized image.
    """

    image_size: tuple[int, int]
    patch_size: int
    requested: int
    side: int
    resized: tuple[int, int]
    crop_top: int
    crop_left: int

    @property
    def grid(self) -> tuple[int, int]:
        """``(gh, gw)`` patches per column and per row."""
        return grid_size(self.side, self.side, self.patch_size)

    @property
    def num_patches(self) -> int:
        """``N = gh * gw``."""
        gh, gw = self.grid
        return gh * gw

    @property
    def seq_len(self) -> int:
        """``N + 1``: the patches and the class token."""
        return self.num_patches + 1

    @property
    def patch_dim(self) -> int:
        """Length of a flattened patch, ``P * P * 3``."""
        return self.patch_size * self.patch_size * 3

    @property
    def attention_pairs(self) -> int:
        """Query-key pairs of one global attention layer, ``(N + 1)^2``."""
        return self.seq_len**2

    @property
    def relative_attention_cost(self) -> float:
        """``(N + 1)^2`` relative to ViT-B/16 at 224 px (197 tokens)."""
        return self.attention_pairs / REFERENCE_TOKENS**2

    @property
    def attention_gflops(self) -> float:
        """``4 (N+1)^2 C`` FLOPs of ``QK^T`` and ``AV`` at width ``C = 768``, in GFLOPs."""
        return global_attention_flops(self.seq_len, REFERENCE_WIDTH) / 1e9

    @property
    def crop_box(self) -> tuple[float, float, float, float]:
        """The kept square in original-image pixels: ``(left, top, right, bottom)``."""
        h, w = self.image_size
        rh, rw = self.resized
        sy, sx = h / rh, w / rw
        return (self.crop_left * sx, self.crop_top * sy, (self.crop_left + self.side) * sx,
                (self.crop_top + self.side) * sy)

    def readouts(self) -> dict:
        """The numbers of the readout, JSON-ready."""
        gh, gw = self.grid
        return {
            "image_size": list(self.image_size),
            "patch_size": self.patch_size,
            "requested_resolution": self.requested,
            "resolution": self.side,
            "resized": list(self.resized),
            "crop_top": self.crop_top,
            "crop_left": self.crop_left,
            "grid": [gh, gw],
            "num_patches": self.num_patches,
            "seq_len": self.seq_len,
            "patch_dim": self.patch_dim,
            "attention_pairs": self.attention_pairs,
            "relative_attention_cost": self.relative_attention_cost,
            "attention_gflops_c768": self.attention_gflops,
        }


def patch_grid(height: int, width: int, patch_size: int, resolution: int) -> PatchGrid:
    """Cut an ``height x width`` image into ``patch_size`` patches at ``resolution`` (module policy).

    Args:
        height, width: original image size in pixels (any positive sizes).
        patch_size: ``P`` in pixels.
        resolution: requested input side ``R``; snapped to the nearest multiple of ``P``.

    Returns:
        The :class:`PatchGrid`. Its resize and crop are exactly those of
        :func:`vitviz.images.square_resize` at side ``S``.

    Raises:
        ValueError: a non-positive size, or a patch size or resolution out of range.
    """
    h, w = int(height), int(width)
    if h <= 0 or w <= 0:
        raise ValueError(f"the image must have pixels, got {w}x{h}")
    s = snap_to_patch(resolution, patch_size)
    scale = s / min(w, h)
    nw, nh = max(s, round(w * scale)), max(s, round(h * scale))  # as images.square_resize
    return PatchGrid((h, w), int(patch_size), int(resolution), s, (nh, nw), (nh - s) // 2, (nw - s) // 2)


def grid_view(image: ImageInput, patch_size: int, resolution: int) -> tuple[PatchGrid, np.ndarray, np.ndarray]:
    """Load an image and apply the policy.

    Returns:
        ``(grid, resized, view)``: the geometry, the resized image ``(H', W', 3)`` uint8
        before the crop, and the model's view ``(S, S, 3)`` uint8 (equal to
        ``square_resize(image, S)``).
    """
    img = load_image(image)
    g = patch_grid(img.height, img.width, patch_size, resolution)
    nh, nw = g.resized
    resized = to_uint8(img.resize((nw, nh), Image.BICUBIC, reducing_gap=None))
    view = resized[g.crop_top:g.crop_top + g.side, g.crop_left:g.crop_left + g.side]
    return g, resized, np.ascontiguousarray(view)


def model_view(image: ImageInput, side: int) -> np.ndarray:
    """The ``(side, side, 3)`` uint8 view of an image (shorter side, centre crop)."""
    return to_uint8(square_resize(load_image(image), side))


def patch_at(point: tuple[float, float], grid: tuple[int, int]) -> tuple[int, int]:
    """The patch ``(row, col)`` containing a point given as fractions ``(y, x)`` of the square view.

    Fractions are clipped into ``[0, 1)``, so any point maps to a patch.
    """
    gh, gw = grid
    fy = min(max(float(point[0]), 0.0), 1.0 - 1e-9)
    fx = min(max(float(point[1]), 0.0), 1.0 - 1e-9)
    return int(fy * gh), int(fx * gw)


def patch_center(row: int, col: int, grid: tuple[int, int]) -> tuple[float, float]:
    """Centre of patch ``(row, col)`` as fractions ``(y, x)`` of the view (inverse of :func:`patch_at`)."""
    gh, gw = grid
    return (row + 0.5) / gh, (col + 0.5) / gw


def check_patch(row: int, col: int, grid: tuple[int, int]) -> int:
    """Validate ``(row, col)`` in ``grid`` and return the raster index ``row * gw + col``.

    Raises:
        ValueError: naming the valid ranges.
    """
    gh, gw = grid
    r, c = int(row), int(col)
    if r != row or c != col or not (0 <= r < gh and 0 <= c < gw):
        raise ValueError(f"the patch must be a row in 0..{gh - 1} and a column in 0..{gw - 1}; got ({row}, {col})")
    return r * gw + c


# ----------------------------------------------------------------------------- the token sequence


def token_patches(view: np.ndarray, patch_size: int) -> np.ndarray:
    """The patches in sequence order, as small images.

    Args:
        view: ``(S, S, 3)`` uint8 (or ``(H, W, 3)`` with both sides multiples of ``P``).
        patch_size: ``P``.

    Returns:
        ``(N, P, P, 3)`` uint8; ``token_patches(v, P)[i].reshape(-1)`` is row ``i`` of
        ``patchify`` (raster order, pixels flattened as (row, column, channel)).
    """
    x = torch.from_numpy(np.array(view, dtype=np.uint8, copy=True)).permute(2, 0, 1).unsqueeze(0)  # (1, 3, H, W)
    flat = patchify(x, patch_size)[0]  # (N, P*P*3)
    return flat.reshape(-1, patch_size, patch_size, 3).numpy()


def pixel_vector(view: np.ndarray, patch_size: int, index: int) -> np.ndarray:
    """Flattened pixels of patch ``index``: ``(P*P*3,)`` float32 in [0, 1], order (row, column, channel)."""
    patches = token_patches(view, patch_size)
    if not 0 <= index < len(patches):
        raise ValueError(f"the patch index must be in 0..{len(patches) - 1}, got {index}")
    return patches[index].reshape(-1).astype(np.float32) / 255.0


def _device(module: nn.Module) -> torch.device:
    return next(module.parameters()).device


def _view_tensor(view: np.ndarray, cfg: DataConfig, device: torch.device) -> torch.Tensor:
    """``(S, S, 3)`` uint8 -> ``(1, 3, S, S)`` normalised float on ``device``."""
    return normalize(uint8_to_unit(view), cfg).unsqueeze(0).to(device)


def projection_matrix(module: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    """The patch projection as a matrix acting on flattened patches.

    The convolution ``patch_embed.proj`` (kernel = stride = ``P``) applies one linear map
    to every patch; reordering its weight ``(D, 3, P, P)`` to ``(D, P, P, 3)`` gives the
    matrix ``E`` of shape ``(D, P*P*3)`` for :func:`~vitviz.patches.patchify`'s pixel order.

    Returns:
        ``(E, b)``: ``(D, P*P*3)`` and ``(D,)``.
    """
    proj = module.patch_embed.proj
    w = proj.weight.detach()
    e = w.permute(0, 2, 3, 1).reshape(w.shape[0], -1)
    b = proj.bias.detach() if proj.bias is not None else torch.zeros(w.shape[0], device=w.device)
    return e, b


@torch.inference_mode()
def patch_embedding(module: nn.Module, cfg: DataConfig, view: np.ndarray, index: int) -> np.ndarray:
    """The embedding ``E x + b`` of one patch (no position embedding).

    Args:
        module: an MAE or timm ViT (anything with ``patch_embed.proj``).
        cfg: its normalisation.
        view: ``(S, S, 3)`` uint8 with ``S`` a multiple of the model's patch size.
        index: raster index of the patch at the model's patch size.

    Returns:
        ``(D,)`` float32, equal to the output of ``patch_embed`` for that patch.
    """
    p = int(module.patch_embed.proj.kernel_size[0])
    x = patchify(_view_tensor(view, cfg, _device(module)), p)[0]  # (N, P*P*3)
    if not 0 <= index < x.shape[0]:
        raise ValueError(f"the patch index must be in 0..{x.shape[0] - 1}, got {index}")
    e, b = projection_matrix(module)
    out = e @ x[index] + b
    norm = getattr(module.patch_embed, "norm", None)
    if norm is not None:
        out = norm(out)
    return out.float().cpu().numpy()


def class_token_embedding(module: nn.Module) -> np.ndarray:
    """The learned [CLS] vector ``(D,)`` float32 (before its position embedding is added)."""
    cls = getattr(module, "cls_token", None)
    if not isinstance(cls, torch.Tensor):
        raise ValueError("this model has no class token")
    return cls.detach().reshape(-1).float().cpu().numpy()


# ----------------------------------------------------------------------------- models for this tab


@dataclass(frozen=True)
class TokenModel:
    """A model as the Patches tab uses it.

    Attributes:
        key: the choice value (``mae-tiny``, or ``vit-base:random``).
        name: the registry name.
        family: ``mae``, ``vit``, ``deit`` or ``dino``.
        module: MAE or timm ``VisionTransformer``, eval mode, gradients off.
        data_config: input size and normalisation.
        random_weights: True when the weights are a seeded random initialisation.
    """

    key: str
    name: str
    family: str
    module: nn.Module
    data_config: DataConfig
    random_weights: bool

    @property
    def patch_size(self) -> int:
        """``P`` of the model's projection."""
        return int(self.module.patch_embed.proj.kernel_size[0])

    @property
    def side(self) -> int:
        """Native input side in pixels."""
        return self.data_config.input_size

    @property
    def grid(self) -> tuple[int, int]:
        """``(gh, gw)`` at the native input size."""
        return grid_size(self.side, self.side, self.patch_size)

    @property
    def sincos(self) -> bool:
        """True for fixed 2-D sin-cos position embeddings (MAE), False for learned ones."""
        return isinstance(self.module, MaskedAutoencoderViT)

    def loaded(self) -> LoadedModel:
        """As a :class:`~vitviz.models.loading.LoadedModel` (for :func:`vitviz.reconstruct.reconstruct`)."""
        spec = get_spec(self.name)
        norm_pix = self.sincos and bool(self.module.config.norm_pix_loss or spec.norm_pix)
        return LoadedModel(self.name, spec, self.module, self.data_config, _device(self.module), norm_pix=norm_pix)


def model_choices() -> list[tuple[str, str]]:
    """``(label, key)`` pairs for the model picker.

    Every registered model with absolute position embeddings whose weights can be had
    here (``vitviz.available_models``), and, for the timm architectures (ViT, DeiT,
    DINO), the same architecture with seeded random weights, which works offline.
    """
    out = []
    for info in available_models():
        if info.family not in POS_FAMILIES:
            continue
        if info.available:
            note = f" ({info.reason.replace('will download', 'downloads')})" if info.reason else ""
            out.append((f"{info.name}: trained weights{note}", info.name))
        if info.family != "mae":
            out.append((f"{info.name}: random weights (architecture only)", info.name + RANDOM_SUFFIX))
    return out


def model_keys() -> list[str]:
    """Every key :func:`get_token_model` accepts (whether or not the weights are here)."""
    keys = []
    for name in model_names():
        family = get_spec(name).family
        if family in POS_FAMILIES:
            keys.append(name)
            if family != "mae":
                keys.append(name + RANDOM_SUFFIX)
    return keys


def create_random_vit(timm_name: str, seed: int = RANDOM_SEED) -> nn.Module:
    """A timm ViT with seeded random weights (never downloads), eval mode, gradients off.

    Built inside ``torch.random.fork_rng``: the weights depend only on ``seed`` and the
    caller's global RNG state is untouched.
    """
    import timm  # heavy import kept out of module import

    with isolated_seed(seed):
        model = timm.create_model(timm_name, pretrained=False)
    return model.eval().requires_grad_(False)


class _LRU:
    """A tiny lock-protected LRU of built modules (one build per key under concurrency)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()

    def get(self, key: tuple, build: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        with self._build_lock:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            value = build()
            with self._lock:
                self._items[key] = value
                while len(self._items) > self.capacity:
                    self._items.popitem(last=False)
            return value


#: Random-weight timm models (shared read-only between requests).
_RANDOM = _LRU(2)
#: MAE copies resized to another resolution (parameters shared with the original).
_RESIZED = _LRU(4)


def get_token_model(key: str) -> TokenModel:
    """Load the model behind a picker key.

    Args:
        key: a registry name (trained weights, via :func:`vitviz.load_model`) or a timm
            model's name with ``:random`` (random weights, built locally).

    Raises:
        ValueError: unknown key (the message lists the valid ones).
        ModelUnavailable: trained weights that cannot be had here.
    """
    keys = model_keys()
    if not isinstance(key, str) or key not in keys:
        raise ValueError(f"unknown model {key!r}; choose one of {', '.join(keys)}")
    if key.endswith(RANDOM_SUFFIX):
        name = key[: -len(RANDOM_SUFFIX)]
        spec = get_spec(name)
        assert spec.timm_name is not None
        from .models.timm_models import timm_data_config

        def build() -> nn.Module:
            return create_random_vit(spec.timm_name).to(default_device())

        module = _RANDOM.get((spec.timm_name, RANDOM_SEED, str(default_device())), build)
        return TokenModel(key, name, spec.family, module, timm_data_config(module), True)
    m = load_model(key)
    return TokenModel(key, m.name, m.family, m.module, m.data_config, False)


def token_model_from(module: nn.Module, cfg: DataConfig, name: str = "mae-tiny", random_weights: bool = True
                     ) -> TokenModel:
    """Wrap any MAE or timm ViT module (tests, notebooks) as a :class:`TokenModel`."""
    return TokenModel(name, name, get_spec(name).family, module, cfg, random_weights)


# ----------------------------------------------------------------------------- position embeddings


@dataclass(frozen=True)
class PositionEmbeddings:
    """A model's absolute position embeddings, split into prefix and patch parts.

    Attributes:
        full: ``(1, k + gh*gw, D)`` as stored (``k`` = prefix tokens with a position:
            the class token, and DeiT's distillation token; 0 for ``no_embed_class``).
        grid: ``(gh, gw)``.
        num_prefix: ``k``.
    """

    full: torch.Tensor
    grid: tuple[int, int]
    num_prefix: int

    @property
    def patches(self) -> torch.Tensor:
        """``(gh*gw, D)`` the patch positions in raster order."""
        return self.full[0, self.num_prefix:]


def position_embeddings(module: nn.Module) -> PositionEmbeddings:
    """The position embeddings of an MAE or a timm ViT.

    Raises:
        ValueError: the model has no absolute position embedding (Swin, relative-position models).
    """
    pos = getattr(module, "pos_embed", None)
    if not isinstance(pos, torch.Tensor):
        raise ValueError("this model has no absolute position embedding (pos_embed)")
    if isinstance(module, MaskedAutoencoderViT):
        grid = module.config.grid
    else:
        grid = tuple(int(g) for g in module.patch_embed.grid_size)
    k = pos.shape[1] - grid[0] * grid[1]
    if k < 0:
        raise ValueError(f"pos_embed has {pos.shape[1]} rows, fewer than the {grid[0]}x{grid[1]} patches")
    return PositionEmbeddings(pos.detach(), (int(grid[0]), int(grid[1])), int(k))


def similarity_grid(patch_pos: torch.Tensor, grid: tuple[int, int]) -> np.ndarray:
    """Cosine similarity of every patch's position embedding with every other.

    Args:
        patch_pos: ``(gh*gw, D)`` in raster order.
        grid: ``(gh, gw)``.

    Returns:
        ``(gh, gw, gh, gw)`` float32: ``[r, c]`` is the map of patch ``(r, c)`` against
        all patches (the ViT paper's figure 7); each map is 1 at its own patch.
    """
    gh, gw = grid
    if patch_pos.shape[0] != gh * gw:
        raise ValueError(f"{patch_pos.shape[0]} position embeddings do not fill a {gh}x{gw} grid")
    u = torch.nn.functional.normalize(patch_pos.float(), dim=-1)
    sim = (u @ u.T).clamp(-1.0, 1.0)
    return sim.reshape(gh, gw, gh, gw).cpu().numpy()


def similarity_map(patch_pos: torch.Tensor, grid: tuple[int, int], row: int, col: int) -> np.ndarray:
    """Cosine similarity of patch ``(row, col)``'s position embedding with all: ``(gh, gw)`` float32."""
    i = check_patch(row, col, grid)
    u = torch.nn.functional.normalize(patch_pos.float(), dim=-1)
    return (u @ u[i]).clamp(-1.0, 1.0).reshape(grid).cpu().numpy()


def interpolate_pos_embed(pos: PositionEmbeddings, new_grid: tuple[int, int]) -> PositionEmbeddings:
    """Resample the patch part bicubically to ``new_grid``, as timm does; prefix rows are kept.

    Uses ``timm.layers.resample_abs_pos_embed`` (bicubic, antialiased), exactly the call
    timm's ``VisionTransformer`` makes for ``dynamic_img_size``. At the same grid the
    result equals the input.
    """
    from timm.layers import resample_abs_pos_embed

    new = resample_abs_pos_embed(pos.full, new_size=list(new_grid), old_size=list(pos.grid),
                                 num_prefix_tokens=pos.num_prefix, interpolation="bicubic", antialias=True)
    return PositionEmbeddings(new, (int(new_grid[0]), int(new_grid[1])), pos.num_prefix)


def sincos_at(pos: PositionEmbeddings, new_grid: tuple[int, int]) -> PositionEmbeddings:
    """MAE's fixed 2-D sin-cos embedding recomputed for ``new_grid`` (class row zeros, as MAE)."""
    d = pos.full.shape[-1]
    emb = torch.from_numpy(sincos_pos_embed(d, new_grid, cls_token=pos.num_prefix == 1))
    return PositionEmbeddings(emb.unsqueeze(0).to(pos.full), (int(new_grid[0]), int(new_grid[1])), pos.num_prefix)


# ----------------------------------------------------------------------------- running the encoder


def _prefix_tokens(module: nn.Module) -> torch.Tensor:
    """``(1, k, D)``: class token, then DeiT's distillation token / register tokens if any."""
    parts = [t for t in (getattr(module, "cls_token", None), getattr(module, "dist_token", None),
                         getattr(module, "reg_token", None)) if isinstance(t, torch.Tensor)]
    if not parts:
        d = module.patch_embed.proj.out_channels
        return torch.zeros(1, 0, d, device=_device(module))
    return torch.cat(parts, dim=1)


def patch_tokens(module: nn.Module, imgs: torch.Tensor) -> torch.Tensor:
    """``(N, 3, H, W)`` normalised images -> ``(N, gh*gw, D)`` patch embeddings ``E x + b`` (no positions).

    Works at any ``H, W`` that are multiples of the patch size (the projection is a
    convolution; the module's own size check is bypassed).
    """
    x = module.patch_embed.proj(imgs).flatten(2).transpose(1, 2)
    norm = getattr(module.patch_embed, "norm", None)
    return norm(x) if norm is not None else x


@torch.inference_mode()
def encode(module: nn.Module, tokens: torch.Tensor, pos: PositionEmbeddings | None) -> torch.Tensor:
    """Run the encoder on a full sequence of patch tokens.

    Args:
        module: an MAE or a timm ViT.
        tokens: ``(N, L, D)`` patch embeddings (from :func:`patch_tokens`, possibly permuted).
        pos: position embeddings for ``L`` patches, or None to add no position at all
            (prefix tokens included).

    Returns:
        ``(N, k + L, D)`` after the final norm; ``k`` prefix tokens first. Equals the
        model's own ``forward_features`` (timm) or ``encode_tokens`` with every patch
        kept (MAE) when ``pos`` is the model's.
    """
    n = tokens.shape[0]
    prefix = _prefix_tokens(module).expand(n, -1, -1)
    k = prefix.shape[1]
    if pos is None:
        x = torch.cat([prefix, tokens], dim=1)
    elif pos.num_prefix == k:
        x = torch.cat([prefix, tokens], dim=1) + pos.full
    elif pos.num_prefix == 0:
        x = torch.cat([prefix, tokens + pos.full], dim=1)
    else:
        raise ValueError(f"the position embedding covers {pos.num_prefix} prefix tokens, the model has {k}")
    if not isinstance(module, MaskedAutoencoderViT):
        x = module.norm_pre(module.patch_drop(module.pos_drop(x)))
    for blk in module.blocks:
        x = blk(x)
    return module.norm(x)


# ----------------------------------------------------------------------------- the shuffle demonstration


@dataclass(frozen=True)
class ShuffleResult:
    """The encoder on the patches in their place and shuffled, with and without positions.

    ``perm[i]`` is the patch whose content sits at sequence position ``i`` after the
    shuffle; patch ``j`` therefore moves to position ``where[j]``. Differences compare
    the output of the *same patch content* in its old and new place.

    Attributes:
        perm: ``(L,)`` int64.
        where: ``(L,)`` int64, the inverse permutation.
        diff_without: ``(L,)`` float32 max abs output difference per patch, no positions.
        diff_with: ``(L,)`` float32, the same with the model's position embeddings.
        prefix_diff_without: max abs difference of the prefix tokens' outputs ([CLS]), no positions.
        prefix_diff_with: the same with positions.
        output_scale: mean abs value of the outputs (scale for the differences).
        grid: ``(gh, gw)``.
    """

    perm: np.ndarray
    where: np.ndarray
    diff_without: np.ndarray
    diff_with: np.ndarray
    prefix_diff_without: float
    prefix_diff_with: float
    output_scale: float
    grid: tuple[int, int]

    @property
    def max_diff_without(self) -> float:
        """Largest difference over all patches, no positions (float rounding only)."""
        return float(self.diff_without.max())

    @property
    def max_diff_with(self) -> float:
        """Largest difference over all patches, with positions."""
        return float(self.diff_with.max())


def random_permutation(length: int, seed: int) -> torch.Tensor:
    """A seeded permutation of ``range(length)`` (own generator, never the global RNG)."""
    return torch.randperm(length, generator=torch.Generator().manual_seed(int(seed)))


@torch.inference_mode()
def shuffle_demo(module: nn.Module, cfg: DataConfig, view: np.ndarray, seed: int = 0,
                 perm: torch.Tensor | None = None) -> ShuffleResult:
    """Permute the patch tokens (without their positions) and compare encoder outputs.

    Without position embeddings the encoder is permutation-equivariant: every patch's
    output is the same wherever it sits (to float rounding), and [CLS]'s is unchanged.
    With them, the position rows stay in place while the contents move, so outputs change.

    Args:
        module: an MAE or timm ViT.
        cfg: its normalisation.
        view: ``(S, S, 3)`` uint8 at the model's native side.
        seed: seed of the permutation (ignored when ``perm`` is given).
        perm: optional ``(L,)`` permutation.

    Returns:
        A :class:`ShuffleResult`.
    """
    x = _view_tensor(view, cfg, _device(module))
    tokens = patch_tokens(module, x)  # (1, L, D)
    length = tokens.shape[1]
    p = random_permutation(length, seed) if perm is None else torch.as_tensor(perm, dtype=torch.long)
    if sorted(p.tolist()) != list(range(length)):
        raise ValueError(f"perm must be a permutation of 0..{length - 1}")
    p = p.to(tokens.device)
    where = torch.argsort(p)
    grid = grid_size(x.shape[2], x.shape[3], int(module.patch_embed.proj.kernel_size[0]))
    pos = interpolate_pos_embed(position_embeddings(module), grid)  # the stored ones at the native size
    k = _prefix_tokens(module).shape[1]
    diffs, prefix_diffs, scale = [], [], 0.0
    for use in (None, pos):
        a = encode(module, tokens, use)
        b = encode(module, tokens[:, p], use)
        # b[k + where[j]] is patch j's output in its new place; a[k + j] in its old one.
        moved = b[:, k + where]
        diffs.append((moved - a[:, k:]).abs().amax(dim=(0, 2)).float().cpu().numpy())
        prefix_diffs.append(float((b[:, :k] - a[:, :k]).abs().max()) if k else 0.0)
        scale = float(a.abs().mean())
    return ShuffleResult(p.cpu().numpy(), where.cpu().numpy(), diffs[0], diffs[1], prefix_diffs[0],
                         prefix_diffs[1], scale, grid)


# ----------------------------------------------------------------------------- another resolution


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


def resized_loaded(model: TokenModel, side: int, method: str = "sincos") -> LoadedModel:
    """A :class:`LoadedModel` of ``model`` (an MAE) at ``side`` px, cached, for :func:`vitviz.reconstruct`."""
    if not model.sincos:
        raise ValueError(f"{model.name} is not a masked autoencoder; reconstruction needs an MAE")
    base = model.loaded()
    if side == model.side and method == "sincos":
        return base
    module = _RESIZED.get((model.key, id(model.module), int(side), method),
                          lambda: resize_mae(model.module, side, method))
    return replace(base, module=module, data_config=replace(base.data_config, input_size=int(side)))


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


def run_at_resolution(model: TokenModel, view: np.ndarray) -> ResolutionRun:
    """Run the encoder on a ``(S, S, 3)`` view with positions interpolated bicubically to its grid."""
    side = view.shape[0]
    grid = grid_size(view.shape[0], view.shape[1], model.patch_size)
    pos = interpolate_pos_embed(position_embeddings(model.module), grid)
    x = _view_tensor(view, model.data_config, _device(model.module))
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = encode(model.module, patch_tokens(model.module, x), pos)
    return ResolutionRun(side, grid, pos, time.perf_counter() - t0, tuple(out.shape))
