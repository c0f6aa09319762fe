"""Patch arithmetic: cutting images into square patches and back, the patch grid of
any resolution, and the one mapping between pixels and patches.

The patch order is raster order (row by row, left to right), and the pixel order
inside a flattened patch is (row, column, channel), exactly as in
facebookresearch/mae ``models_mae.py`` (``'nchpwq->nhwpqc'``), so predictions of
published MAE checkpoints unpatchify correctly.

Pixels and patches (one convention for the whole package): a point is ``(x, y)``,
x to the right and y down, in pixels of a ``size``-pixel square view of a
``(gh, gw)`` grid (``size=1`` for fractions of the view); a patch is ``(row, col)``.
:func:`pixel_to_patch` and :func:`patch_center` are inverse to each other, and the
renderers draw cells with the same arithmetic (:func:`cell_rows_cols`).

Crop/resize policy at another resolution (:func:`patch_grid`):

1. The requested resolution ``R`` is snapped to the **nearest multiple of the patch
   size** ``P`` (halves round up, at least one patch): ``S = P * max(1, floor(R/P + 1/2))``.
   ``R = 120, P = 16 -> S = 128``; ``R = 225, P = 14 -> S = 224``.
2. The image is resized so that its **shorter side is S** (bicubic, as
   :func:`vitviz.core.images.square_resize`), then **centre-cropped to S x S**.
3. The grid is ``(S/P) x (S/P)`` patches in raster order, as :func:`patchify`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image

from .images import ImageInput, load_image, to_uint8

#: Range of resolutions :func:`snap_to_patch` accepts.
MIN_RESOLUTION, MAX_RESOLUTION = 1, 1024
#: The reference for relative attention cost: ViT-B/16 at 224 px has 196 patches + [CLS].
REFERENCE_TOKENS = 197


def grid_size(height: int, width: int, patch_size: int) -> tuple[int, int]:
    """Number of patches along each axis.

    Args:
        height: image height in pixels; must be a multiple of ``patch_size``.
        width: image width in pixels; must be a multiple of ``patch_size``.
        patch_size: side of a square patch in pixels.

    Returns:
        ``(gh, gw)``: patches per column and per row.

    Raises:
        ValueError: if a side is not a positive multiple of the patch size.
    """
    if patch_size <= 0:
        raise ValueError(f"patch_size must be positive, got {patch_size}")
    if height <= 0 or width <= 0 or height % patch_size or width % patch_size:
        raise ValueError(
            f"image size {height}x{width} is not a positive multiple of patch size {patch_size}"
        )
    return height // patch_size, width // patch_size


def patchify(imgs: torch.Tensor, patch_size: int) -> torch.Tensor:
    """Cut images into flattened patches.

    Args:
        imgs: ``(N, C, H, W)`` images; H and W multiples of ``patch_size``.
        patch_size: side ``p`` of a square patch.

    Returns:
        ``(N, L, p*p*C)`` with ``L = (H/p) * (W/p)`` patches in raster order.
    """
    n, c, h, w = imgs.shape
    gh, gw = grid_size(h, w, patch_size)
    p = patch_size
    x = imgs.reshape(n, c, gh, p, gw, p)
    x = torch.einsum("nchpwq->nhwpqc", x)
    return x.reshape(n, gh * gw, p * p * c)


def unpatchify(x: torch.Tensor, patch_size: int, grid: tuple[int, int], channels: int = 3) -> torch.Tensor:
    """Inverse of :func:`patchify`.

    Args:
        x: ``(N, L, p*p*C)`` flattened patches in raster order.
        patch_size: side ``p`` of a square patch.
        grid: ``(gh, gw)`` with ``gh * gw == L``.
        channels: ``C``.

    Returns:
        ``(N, C, gh*p, gw*p)`` images.
    """
    n, length, dim = x.shape
    gh, gw = grid
    p = patch_size
    if gh * gw != length or dim != p * p * channels:
        raise ValueError(
            f"cannot unpatchify {tuple(x.shape)} into grid {grid} of {p}px patches with {channels} channels"
        )
    x = x.reshape(n, gh, gw, p, p, channels)
    x = torch.einsum("nhwpqc->nchpwq", x)
    return x.reshape(n, channels, gh * p, gw * p)


# ----------------------------------------------------------------------------- pixels <-> patches


def pixel_to_patch(x: float, y: float, grid: tuple[int, int], size: float) -> tuple[int, int]:
    """The patch ``(row, col)`` under point ``(x, y)`` of a ``size``-px square view (clamped into the grid).

    ``row = floor(y * gh / size)``, ``col = floor(x * gw / size)``; points outside the view
    map to the nearest border patch. With ``size = 1`` the point is a fraction of the view.

    Raises:
        ValueError: a point that is not two finite numbers.
    """
    try:
        fx, fy = float(x), float(y)
    except (TypeError, ValueError):
        raise ValueError(f"a point needs numeric x and y, got ({x!r}, {y!r})") from None
    if not (math.isfinite(fx) and math.isfinite(fy)):
        raise ValueError(f"a point needs finite x and y, got ({x!r}, {y!r})")
    gh, gw = grid
    s = float(size)
    return min(max(int(fy * gh // s), 0), gh - 1), min(max(int(fx * gw // s), 0), gw - 1)


def patch_center(row: int, col: int, grid: tuple[int, int], size: float = 1.0) -> tuple[float, float]:
    """``(x, y)`` of the centre of patch ``(row, col)`` in a ``size``-px view (inverse of :func:`pixel_to_patch`)."""
    gh, gw = grid
    return (col + 0.5) * size / gw, (row + 0.5) * size / gh


def cell_rows_cols(grid: tuple[int, int], size: int | tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Patch row of every pixel row and patch column of every pixel column of a ``size``-px square view,
    or of an ``(H, W)`` view when ``size`` is a pair."""
    gh, gw = grid
    h, w = (size, size) if isinstance(size, (int, np.integer)) else (int(size[0]), int(size[1]))
    return np.arange(h) * gh // h, np.arange(w) * gw // w


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


# ----------------------------------------------------------------------------- the grid at any resolution


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


class SquarePatchGrid:
    """Mixin of the model configs (MAE, BEiT, VQ, ViT FLOPs): the square patch grid of ``img_size``.

    The subclass has ``img_size`` and ``patch_size`` (pixels). A stride-``P`` patch embedding
    drops remainder pixels, so the grid is ``img_size // patch_size`` on each side.
    """

    @property
    def grid(self) -> tuple[int, int]:
        """``(gh, gw)`` patch grid at ``img_size``."""
        g = self.img_size // self.patch_size  # type: ignore[attr-defined]
        return g, g

    @property
    def num_patches(self) -> int:
        """``L = gh * gw``."""
        gh, gw = self.grid
        return gh * gw


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
