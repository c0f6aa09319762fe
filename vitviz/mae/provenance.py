"""Where the MAE decoder copied a hidden patch from: its mask token's attention, layer by layer.

The MAE decoder (He et al., 2021, §3) sees the class token, the encoded visible patches and
one shared *mask token* (plus its position embedding) at every hidden position. The
prediction for a hidden patch is read off its mask token after the last decoder block, so
the attention of that token is the only route by which image content reaches it. This
module answers, for one hidden patch:

- per decoder layer: the mask token's attention row (heads averaged, and per head) over
  every token the decoder sees;
- through the whole decoder: the token's row of attention rollout (Abnar & Zuidema, 2020),
  computed by :func:`vitviz.explain.rollout.rollout_matrix` (residual identity added, rows
  renormalised, layers multiplied);
- where that weight went: the class token, the visible patches, the *other* mask tokens, and
  the token itself (``self``).

The query's own cell is never drawn as a source (:meth:`DecoderProvenance.source_map` is NaN
there): it is hidden, so it holds no pixels of its own. Its attention to itself is reported
as the ``self`` share instead. In the rollout, ``self`` includes the residual path (the
identity), so it is large by construction.

Attention is captured once per (model, image, mask) by :func:`vitviz.explain.attention.attention`
(``part="decoder"``), which runs :func:`vitviz.explain.capture.capture_blocks` on
``decoder_blocks``; the mask is built exactly as :func:`vitviz.reconstruct` builds it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..core.images import ImageInput, square_view
from ..core.masking import check_mask, check_pattern, make_mask, masked_image, validate_ratio
from ..explain.attention import attention
from ..explain.layout import TokenLayout
from ..explain.rollout import check_discard, check_fusion, fuse_heads, rollout_matrix
from ..models.loading import LoadedModel
from .reconstruct import mae_architecture

#: Where a mask token's attention can go, in the order the shares are reported.
SHARE_KINDS: tuple[str, ...] = ("visible", "mask", "self", "cls")


@dataclass(frozen=True, eq=False)
class DecoderProvenance:
    """One hidden patch's mask token in the MAE decoder: its attention, per layer and rolled out.

    Shapes: ``Ld`` decoder layers, ``H`` decoder heads, ``T = 1 + gh * gw`` decoder tokens
    (class token first, then every patch in raster order: encoded visible patches and mask
    tokens at the hidden positions), ``(gh, gw)`` the patch grid, ``S`` the input side.

    Attributes:
        model_name: registry name of the MAE.
        patch: ``(row, col)`` of the hidden patch whose mask token is the query.
        token: the query's index in the decoder sequence (``1 + row * gw + col``).
        layout: the decoder's :class:`~vitviz.explain.layout.TokenLayout` (``layout.hidden``
            is the mask, ``layout.mask_token`` marks the mask tokens).
        heads: ``(Ld, H, T)`` float64, the query's attention row in every layer and head;
            every row sums to 1 over the ``T`` tokens.
        layers: ``(Ld, T)`` float64, ``heads`` fused per layer (:func:`~vitviz.explain.rollout.fuse_heads`,
            ``head_fusion``) and renormalised: every row sums to 1 (``mean`` needs no renormalising).
        rollout: ``(T,)`` float64, the query's row of the decoder's attention rollout; sums to 1.
        image: ``(S, S, 3)`` uint8, the model's view of the image.
        masked: ``(S, S, 3)`` uint8, what the encoder was given (hidden patches grey).
        head_fusion: how heads were fused for ``layers`` and ``rollout``.
        discard_ratio: the rollout's discard ratio.
        random_init: True when the model's weights are random.
    """

    model_name: str
    patch: tuple[int, int]
    token: int
    layout: TokenLayout
    heads: np.ndarray
    layers: np.ndarray
    rollout: np.ndarray
    image: np.ndarray
    masked: np.ndarray
    head_fusion: str = "mean"
    discard_ratio: float = 0.0
    random_init: bool = False

    @property
    def mask(self) -> np.ndarray:
        """``(gh, gw)`` bool, True = hidden from the encoder (the mask of the reconstruction)."""
        return self.layout.hidden

    @property
    def depth(self) -> int:
        """Number of decoder layers ``Ld``."""
        return int(self.layers.shape[0])

    def shares(self, row: np.ndarray) -> dict[str, float]:
        """Where one ``(T,)`` attention row went: ``visible`` (encoded patches), ``mask`` (other
        mask tokens), ``self`` (the query's own mask token) and ``cls`` (the class token).

        The four values sum to the row's sum (1 for every row of this object).
        """
        r = np.asarray(row, dtype=np.float64)
        p0 = self.layout.num_prefix
        patches = r[p0:]
        is_mask = self.layout.mask_token
        own = float(r[self.token])
        return {"visible": float(patches[~is_mask].sum()), "mask": float(patches[is_mask].sum()) - own,
                "self": own, "cls": float(r[:p0].sum())}

    def layer_shares(self) -> list[dict[str, float]]:
        """:meth:`shares` of every decoder layer's fused row, first layer first."""
        return [self.shares(row) for row in self.layers]

    def rollout_shares(self) -> dict[str, float]:
        """:meth:`shares` of the rollout row."""
        return self.shares(self.rollout)

    def source_map(self, row: np.ndarray, mask_tokens: bool = False) -> np.ndarray:
        """One ``(T,)`` row placed on the patch grid: where the decoder copied this patch from.

        Args:
            row: a row of :attr:`layers`, :attr:`heads` or :attr:`rollout`.
            mask_tokens: also place the weights of the *other* mask tokens (default: only
                the visible patches, which hold image content).

        Returns:
            ``(gh, gw)`` float64: the weight on each visible patch (and other mask token);
            NaN at the query's own cell always (it has no pixels: see :meth:`shares` for
            its ``self`` weight), and NaN at the other hidden cells unless ``mask_tokens``.
            The class token has no cell (its weight is ``shares(row)["cls"]``).
        """
        r = np.asarray(row, dtype=np.float64)
        grid = self.layout.scatter(r[self.layout.num_prefix:]).astype(np.float64)
        if not mask_tokens:
            grid[self.layout.hidden] = np.nan
        grid[self.patch] = np.nan
        return grid

    def layer_maps(self, mask_tokens: bool = False) -> np.ndarray:
        """``(Ld, gh, gw)`` :meth:`source_map` of every decoder layer's fused row."""
        return np.stack([self.source_map(row, mask_tokens) for row in self.layers])

    def rollout_map(self, mask_tokens: bool = False) -> np.ndarray:
        """``(gh, gw)`` :meth:`source_map` of the rollout row."""
        return self.source_map(self.rollout, mask_tokens)

    def summary(self) -> dict:
        """JSON-ready numbers: the patch, the mask size, and the shares per layer and rolled out."""
        return {"model": self.model_name, "patch": list(self.patch), "hidden_patches": int(self.mask.sum()),
                "num_patches": int(self.mask.size), "head_fusion": self.head_fusion,
                "discard_ratio": self.discard_ratio, "layers": self.layer_shares(),
                "rollout": self.rollout_shares(), "random_init": self.random_init}


def provenance_mask(model: LoadedModel, mask_ratio: float = 0.75, seed: int = 0, pattern: str = "random",
                    mask: np.ndarray | torch.Tensor | None = None) -> torch.Tensor:
    """The mask :func:`vitviz.reconstruct` uses for the same arguments: ``(gh, gw)`` bool, True = hidden.

    ``mask`` (a painted mask) overrides ratio, seed and pattern exactly, as in ``reconstruct``.
    """
    grid = mae_architecture(model).config.grid
    if mask is not None:
        return check_mask(mask, grid)
    check_pattern(pattern)
    return make_mask(grid, validate_ratio(mask_ratio), seed, pattern)


def check_patch(patch: tuple[int, int], grid: tuple[int, int]) -> tuple[int, int]:
    """Validate a grid ``(row, col)``; ``ValueError`` naming the grid otherwise."""
    try:
        r, c = (int(v) for v in patch)
    except (TypeError, ValueError):
        raise ValueError(f"patch must be (row, col), got {patch!r}") from None
    gh, gw = grid
    if not (0 <= r < gh and 0 <= c < gw):
        raise ValueError(f"patch (row {r}, col {c}) is outside the {gh}x{gw} grid (rows 0..{gh - 1}, "
                         f"cols 0..{gw - 1})")
    return r, c


def decoder_provenance(model: LoadedModel, image: ImageInput, mask_ratio: float = 0.75, seed: int = 0,
                       patch: tuple[int, int] = (0, 0), pattern: str = "random",
                       mask: np.ndarray | torch.Tensor | None = None, head_fusion: str = "mean",
                       discard_ratio: float = 0.0) -> DecoderProvenance:
    """The decoder's attention from a hidden patch's mask token, per layer and rolled out.

    Args:
        model: a loaded MAE (:func:`vitviz.load_model`).
        image: anything :func:`vitviz.load_image` reads.
        mask_ratio, seed, pattern: the mask, built as :func:`vitviz.reconstruct` builds it.
        patch: grid ``(row, col)`` of a *hidden* patch.
        mask: optional ``(gh, gw)`` bool (True = hidden) overriding ratio, seed and pattern.
        head_fusion: ``mean``, ``max`` or ``min`` (per-layer rows and rollout).
        discard_ratio: rollout's discard ratio in ``[0, 0.99]``.

    Returns:
        A :class:`DecoderProvenance`. The attention capture is cached per (model, image,
        mask) (``VITVIZ_ATTENTION_CACHE``), so another hidden patch of the same picture is
        a lookup and one rollout product.

    Raises:
        ValueError: not an MAE, bad ratio, pattern, seed, mask or fusion, a patch outside the
        grid, or a visible patch (the encoder saw it; the decoder has nothing to fill in).
        ImageError: unreadable image.
    """
    mae = mae_architecture(model)
    fusion = check_fusion(head_fusion)
    discard = check_discard(discard_ratio)
    m = provenance_mask(model, mask_ratio, seed, pattern, mask)
    r, c = check_patch(patch, mae.config.grid)
    if not bool(m[r, c]):
        raise ValueError(f"patch (row {r}, col {c}) was visible: the encoder saw it, so the decoder did not "
                         "have to fill it in; pick a hidden patch")
    view = square_view(image, model.input_size)
    maps = attention(model, view, m.numpy(), part="decoder")
    layout = maps.layout
    token = layout.resolve((r, c))
    a = maps.attentions  # (Ld, H, T, T)
    heads = a[:, :, token, :].astype(np.float64)  # (Ld, H, T)
    layers = np.stack([fuse_heads(h[:, None, :], fusion)[0] for h in heads])  # (Ld, T)
    layers = layers / layers.sum(axis=-1, keepdims=True)  # mean: already 1 (to rounding); max/min: renormalised
    roll = rollout_matrix(a, fusion, discard)[token]
    for arr in (heads, layers, roll):
        arr.setflags(write=False)
    masked = masked_image(maps.image, layout.hidden, mae.patch_size)
    return DecoderProvenance(model.name, (r, c), token, layout, heads, layers, roll, maps.image, masked,
                             fusion, discard, bool(getattr(model, "random_init", False)))
