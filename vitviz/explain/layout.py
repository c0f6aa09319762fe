"""Which row of a captured ``(T, T)`` attention matrix is which token.

Shapes: ``T`` tokens (prefix tokens first, then patch tokens), ``P = T - prefix``
patch tokens, ``(gh, gw)`` the patch grid.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ..core.patches import pixel_to_patch
from ..models.mae import MaskedAutoencoderViT

#: Readable names of prefix tokens.
TOKEN_NAMES = {"cls": "class token", "dist": "distillation token"}


@dataclass(frozen=True, eq=False)
class TokenLayout:
    """Which row of a captured ``(T, T)`` matrix is which token.

    Attributes:
        prefix: names of the leading non-patch tokens in sequence order: ``("cls",)``
            for ViT, DINO and MAE; ``("cls", "dist")`` for DeiT; ``reg0``... for
            register tokens.
        patch_rc: ``(P, 2)`` int64 grid ``(row, col)`` of each patch token, in sequence
            order (token ``len(prefix) + i`` sits at ``patch_rc[i]``). For the MAE encoder
            only the visible patches appear.
        grid: ``(gh, gw)`` patch grid of the input.
        patch_size: side of a patch in input pixels.
        hidden: ``(gh, gw)`` bool, True = hidden from the encoder by the mask (all False
            without a mask).
        mask_token: ``(P,)`` bool, True where the patch token is a mask token (MAE
            decoder at a hidden position).
    """

    prefix: tuple[str, ...]
    patch_rc: np.ndarray
    grid: tuple[int, int]
    patch_size: int
    hidden: np.ndarray
    mask_token: np.ndarray
    _index: dict[tuple[int, int], int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        index = {(int(r), int(c)): self.num_prefix + i for i, (r, c) in enumerate(self.patch_rc)}
        object.__setattr__(self, "_index", index)

    @property
    def num_prefix(self) -> int:
        """Number of prefix (class, distillation, register) tokens."""
        return len(self.prefix)

    @property
    def num_patches(self) -> int:
        """Number of patch tokens ``P`` in the sequence."""
        return int(self.patch_rc.shape[0])

    @property
    def num_tokens(self) -> int:
        """Sequence length ``T``."""
        return self.num_prefix + self.num_patches

    @property
    def input_size(self) -> int:
        """Side of the model input in pixels (``gh * patch_size``)."""
        return self.grid[0] * self.patch_size

    @property
    def mask_token_grid(self) -> np.ndarray:
        """``(gh, gw)`` bool, True where the sequence holds a mask token (MAE decoder)."""
        gh, gw = self.grid
        out = np.zeros((gh, gw), dtype=bool)
        out[self.patch_rc[:, 0], self.patch_rc[:, 1]] = self.mask_token
        return out

    def has(self, name: str) -> bool:
        """True when the sequence has a prefix token called ``name`` (``cls``, ``dist``)."""
        return name in self.prefix

    def token_of_patch(self, row: int, col: int) -> int | None:
        """Sequence index of the patch token at ``(row, col)``; ``None`` if it is not in the sequence."""
        gh, gw = self.grid
        if not (0 <= row < gh and 0 <= col < gw):
            raise ValueError(f"patch ({row}, {col}) is outside the {gh}x{gw} grid")
        return self._index.get((int(row), int(col)))

    def resolve(self, token: int | str | tuple[int, int]) -> int:
        """Sequence index of a token given by prefix name, ``(row, col)`` or index.

        Raises:
            ValueError: unknown name (listing the valid ones), a hidden patch, or an
            index outside ``0..T-1``.
        """
        if isinstance(token, str):
            if token not in self.prefix:
                have = ", ".join(self.prefix) or "none"
                raise ValueError(f"this model has no {TOKEN_NAMES.get(token, token)!s} token "
                                 f"({token!r}); its prefix tokens: {have}")
            return self.prefix.index(token)
        if isinstance(token, tuple):
            r, c = int(token[0]), int(token[1])
            idx = self.token_of_patch(r, c)
            if idx is None:
                raise ValueError(f"patch (row {r}, col {c}) is hidden by the mask: the encoder never sees it")
            return idx
        i = int(token)
        if not 0 <= i < self.num_tokens:
            raise ValueError(f"token index must be 0..{self.num_tokens - 1}, got {token}")
        return i

    def describe(self, index: int) -> str:
        """Words for token ``index``: ``class token``, ``patch (row 3, col 7)``, ``mask token (row 1, col 2)``."""
        if index < self.num_prefix:
            return TOKEN_NAMES.get(self.prefix[index], f"{self.prefix[index]} token")
        i = index - self.num_prefix
        r, c = (int(v) for v in self.patch_rc[i])
        kind = "mask token" if self.mask_token[i] else "patch"
        return f"{kind} (row {r}, col {c})"

    def patch_at_pixel(self, x: float, y: float, size: int | None = None) -> tuple[int, int]:
        """Grid ``(row, col)`` under pixel ``(x, y)`` of a ``size``-px square view (clamped)."""
        return pixel_to_patch(x, y, self.grid, size or self.input_size)

    def scatter(self, values: np.ndarray, fill: float = np.nan) -> np.ndarray:
        """Place per-patch-token values on the grid.

        Args:
            values: ``(..., P)`` one value per patch token, in sequence order.
            fill: value of grid cells without a token (hidden patches).

        Returns:
            ``(..., gh, gw)`` float array.
        """
        v = np.asarray(values)
        gh, gw = self.grid
        out = np.full(v.shape[:-1] + (gh, gw), fill, dtype=np.result_type(v.dtype, np.float32))
        out[..., self.patch_rc[:, 0], self.patch_rc[:, 1]] = v
        return out


def vit_layout(model: nn.Module, grid: tuple[int, int] | None = None) -> TokenLayout:
    """The token layout of a timm ``VisionTransformer`` (class, distillation, register tokens, then patches).

    Args:
        grid: ``(gh, gw)`` of the input when it is not the model's own (a photo at its own shape).
    """
    prefix: list[str] = []
    if getattr(model, "cls_token", None) is not None:
        prefix.append("cls")
    if getattr(model, "dist_token", None) is not None:
        prefix.append("dist")
    n_reg = int(model.num_prefix_tokens) - len(prefix)
    prefix += [f"reg{i}" for i in range(n_reg)]
    gh, gw = (int(v) for v in (model.patch_embed.grid_size if grid is None else grid))
    ph, pw = (int(v) for v in model.patch_embed.patch_size)
    if ph != pw:
        raise ValueError(f"vitviz needs square patches; this model has {ph}x{pw}")
    rc = np.stack(np.divmod(np.arange(gh * gw), gw), axis=1).astype(np.int64)
    return TokenLayout(tuple(prefix), rc, (gh, gw), ph, np.zeros((gh, gw), bool), np.zeros(gh * gw, bool))


def mae_layout(mae: MaskedAutoencoderViT, mask: torch.Tensor, part: str) -> TokenLayout:
    """The token layout of an MAE part under ``mask`` (``(gh, gw)`` bool, True = hidden).

    Encoder: class token, then the visible patches in raster order. Decoder: class
    token, then every patch, with mask tokens at the hidden positions.
    """
    gh, gw = mae.config.grid
    hidden = mask.cpu().numpy().astype(bool)
    flat = hidden.reshape(-1)
    all_rc = np.stack(np.divmod(np.arange(gh * gw), gw), axis=1).astype(np.int64)
    if part == "encoder":
        rc = all_rc[~flat]
        return TokenLayout(("cls",), rc, (gh, gw), mae.patch_size, hidden, np.zeros(rc.shape[0], bool))
    return TokenLayout(("cls",), all_rc, (gh, gw), mae.patch_size, hidden, flat.copy())
