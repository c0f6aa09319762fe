"""Attention of every ViT-family model vitviz shows: capture, token layout, rollout, distance.

One capture mechanism serves timm ``VisionTransformer`` models (ViT, DeiT with its
distillation token, DINO) and vitviz's MAE (the encoder over the visible patches of a
mask, or the decoder): all of them are built from timm ``Attention`` modules. For the
duration of one call, each captured module is switched to its explicit-softmax path
(``fused_attn = False``; the fused ``scaled_dot_product_attention`` never forms the
matrix) and a forward hook on its ``attn_drop`` records the softmax that enters it.
On exit every hook is removed and every ``fused_attn`` flag is restored, even when
the forward pass raises. Only the attention modules being captured are touched.

Shapes: ``L`` layers, ``H`` heads, ``T`` tokens (prefix tokens first, then patch
tokens), ``P = T - prefix`` patch tokens, ``(gh, gw)`` the patch grid.

Concurrency: models are shared between requests. Captures are serialised by a lock,
and a hook records only the forward pass of the thread that installed it, so a
concurrent plain forward of the same module (which briefly takes the explicit path:
same numbers, a little slower) never leaks into a capture.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import torch
from torch import nn

from .images import ImageInput, load_image, normalize, square_resize, to_uint8, uint8_to_unit
from .masking import mask_to_ids
from .models.loading import LoadedModel
from .models.mae import MaskedAutoencoderViT
from .reconstruct import check_mask

#: Which transformer of a model to capture: ``encoder`` (every model) or ``decoder`` (MAE only).
PARTS: tuple[str, ...] = ("encoder", "decoder")
#: How heads are fused into one matrix per layer before rollout.
HEAD_FUSIONS: tuple[str, ...] = ("mean", "max", "min")
#: Readable names of prefix tokens.
TOKEN_NAMES = {"cls": "class token", "dist": "distillation token"}
#: Largest discard ratio accepted by :func:`rollout_matrix`.
MAX_DISCARD = 0.99

#: Serialises captures: hooks and ``fused_attn`` flags are set on modules shared between requests.
_CAPTURE_LOCK = threading.RLock()


# --------------------------------------------------------------------------------------
# Token layout
# --------------------------------------------------------------------------------------


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
        try:
            fx, fy = float(x), float(y)
        except (TypeError, ValueError):
            raise ValueError(f"a point needs numeric x and y, got ({x!r}, {y!r})") from None
        if not (np.isfinite(fx) and np.isfinite(fy)):
            raise ValueError(f"a point needs finite x and y, got ({x!r}, {y!r})")
        s = float(size or self.input_size)
        gh, gw = self.grid
        return min(max(int(fy * gh // s), 0), gh - 1), min(max(int(fx * gw // s), 0), gw - 1)

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


def vit_layout(model: nn.Module) -> TokenLayout:
    """The token layout of a timm ``VisionTransformer`` (class, distillation, register tokens, then patches)."""
    prefix: list[str] = []
    if getattr(model, "cls_token", None) is not None:
        prefix.append("cls")
    if getattr(model, "dist_token", None) is not None:
        prefix.append("dist")
    n_reg = int(model.num_prefix_tokens) - len(prefix)
    prefix += [f"reg{i}" for i in range(n_reg)]
    gh, gw = (int(v) for v in model.patch_embed.grid_size)
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


# --------------------------------------------------------------------------------------
# Capture
# --------------------------------------------------------------------------------------


def attention_modules(blocks: Sequence[nn.Module]) -> list[nn.Module]:
    """The timm ``Attention`` module of each block.

    Raises:
        ValueError: a block whose attention has no explicit-softmax path to hook
        (no ``attn_drop`` or ``fused_attn``), or two blocks sharing one module.
    """
    mods = []
    for i, blk in enumerate(blocks):
        attn = getattr(blk, "attn", None)
        hookable = isinstance(getattr(attn, "attn_drop", None), nn.Module) and hasattr(attn, "fused_attn")
        if attn is None or not hookable:
            raise ValueError(f"block {i} ({type(blk).__name__}) has no timm Attention with an explicit softmax "
                             "path; vitviz captures timm ViT-family attention only")
        mods.append(attn)
    if len({id(m.attn_drop) for m in mods}) != len(mods):
        raise ValueError("two blocks share one attention-dropout module; their attention cannot be told apart")
    return mods


def _record(store: list[torch.Tensor], thread: int, _module: nn.Module, inputs: tuple, _output: Any) -> None:
    """Forward hook on ``attn_drop``: keep the softmax entering it (this thread's passes only)."""
    if threading.get_ident() == thread:
        store.append(inputs[0].detach())


@contextmanager
def capturing(modules: Sequence[nn.Module]) -> Iterator[list[list[torch.Tensor]]]:
    """Record the attention matrices of timm ``Attention`` modules while the body runs.

    For each module: ``fused_attn`` is set to False and a forward hook on
    ``attn_drop`` records its input, the ``(B, H, T, T)`` softmax (masked keys
    included, dropout not applied). On exit the hooks are removed and each module's
    ``fused_attn`` is restored to what it was, whatever happened in the body.

    Args:
        modules: attention modules (see :func:`attention_modules`).

    Yields:
        One list per module, receiving one ``(B, H, T, T)`` tensor per forward call.
    """
    thread = threading.get_ident()
    store: list[list[torch.Tensor]] = [[] for _ in modules]
    with _CAPTURE_LOCK:
        saved = [m.fused_attn for m in modules]
        handles = []
        try:
            for m, s in zip(modules, store):
                m.fused_attn = False
                handles.append(m.attn_drop.register_forward_hook(partial(_record, s, thread)))
            yield store
        finally:
            for h in handles:
                h.remove()
            for m, f in zip(modules, saved):
                m.fused_attn = f


def capture_blocks(blocks: Sequence[nn.Module], run: Callable[[], Any]) -> tuple[torch.Tensor, Any]:
    """Run ``run()`` once and return the attention of each block, with ``run``'s result.

    Args:
        blocks: transformer blocks with timm ``Attention`` (``blk.attn``).
        run: the forward pass (called once, under ``torch.inference_mode``).

    Returns:
        ``(attn, out)``: ``attn`` is ``(L, B, H, T, T)`` float32 on CPU, ``out`` what
        ``run`` returned.

    Raises:
        RuntimeError: a block that did not run exactly once.
    """
    mods = attention_modules(blocks)
    with capturing(mods) as store, torch.inference_mode():
        out = run()
    bad = [i for i, s in enumerate(store) if len(s) != 1]
    if bad:
        raise RuntimeError(f"blocks {bad} ran {[len(store[i]) for i in bad]} times instead of once")
    return torch.stack([s[0].float().cpu() for s in store]), out


# --------------------------------------------------------------------------------------
# Rollout, distance and other maths on captured matrices
# --------------------------------------------------------------------------------------


def check_fusion(head_fusion: str) -> str:
    """Validate a head-fusion name (``mean``, ``max``, ``min``)."""
    if head_fusion not in HEAD_FUSIONS:
        raise ValueError(f"unknown head fusion {head_fusion!r}; choose one of {', '.join(HEAD_FUSIONS)}")
    return head_fusion


def check_discard(discard_ratio: float) -> float:
    """Validate a discard ratio in ``[0, 0.99]``."""
    try:
        r = float(discard_ratio)
    except (TypeError, ValueError):
        raise ValueError(f"discard ratio must be a number, got {discard_ratio!r}") from None
    if not np.isfinite(r) or r < 0 or r > MAX_DISCARD + 1e-9:
        raise ValueError(f"discard ratio must be between 0 and {MAX_DISCARD}, got {discard_ratio!r}")
    return min(r, MAX_DISCARD)


def fuse_heads(attn: np.ndarray, head_fusion: str = "mean") -> np.ndarray:
    """One layer's heads fused into one matrix: ``(H, T, T)`` -> ``(T, T)`` float64."""
    a = np.asarray(attn, dtype=np.float64)
    how = check_fusion(head_fusion)
    return a.mean(axis=0) if how == "mean" else a.max(axis=0) if how == "max" else a.min(axis=0)


def discard_lowest(a: np.ndarray, discard_ratio: float) -> np.ndarray:
    """Zero the weakest attention of each row, never the diagonal.

    In every query row, the ``floor(ratio * (T - 1))`` smallest *off-diagonal*
    entries are set to 0 (ties broken by column index). The diagonal (each token's
    attention to itself, including the class token's to itself) is always kept, and
    the residual identity added afterwards makes every row sum positive, so the row
    renormalisation that follows is always defined.

    Args:
        a: ``(T, T)`` fused attention.
        discard_ratio: in ``[0, 0.99]``.

    Returns:
        ``(T, T)`` float64 copy.
    """
    out = np.array(a, dtype=np.float64, copy=True)
    t = out.shape[0]
    n = int(np.floor(check_discard(discard_ratio) * (t - 1) + 1e-9))
    if n <= 0:
        return out
    keyed = out.copy()
    np.fill_diagonal(keyed, np.inf)
    drop = np.argsort(keyed, axis=1, kind="stable")[:, :n]
    np.put_along_axis(out, drop, 0.0, axis=1)
    return out


def rollout_matrix(attentions: np.ndarray, head_fusion: str = "mean", discard_ratio: float = 0.0) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema, 2020) through every layer.

    Per layer: fuse the heads (:func:`fuse_heads`), optionally discard the weakest
    entries of each row (:func:`discard_lowest`), add the identity for the residual
    connection, and renormalise every row to sum 1 (``A / A.sum(-1, keepdims=True)``).
    For mean fusion without discarding this is the paper's ``0.5 A + 0.5 I``. The
    layers are then multiplied, last layer on the left: ``R = Â_L ... Â_2 Â_1``.

    Args:
        attentions: ``(L, H, T, T)``.

    Returns:
        ``(T, T)`` float64; every row sums to 1. Row ``i`` says how much each input
        token contributes to output token ``i``.
    """
    a = np.asarray(attentions, dtype=np.float64)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attentions must be (layers, heads, T, T), got {a.shape}")
    check_fusion(head_fusion)
    t = a.shape[-1]
    eye = np.eye(t)
    result = eye.copy()
    for layer in a:
        fused = discard_lowest(fuse_heads(layer, head_fusion), discard_ratio) + eye
        fused /= fused.sum(axis=-1, keepdims=True)
        result = fused @ result
    return result


def mean_attention_distance(attentions: np.ndarray, layout: TokenLayout) -> np.ndarray:
    """Mean attention distance per head, in input pixels (Dosovitskiy et al., 2021, fig. 7).

    For every patch query, the distance between patch centres weighted by its
    attention over the *patch* keys (renormalised to sum 1 over patches, so the share
    given to prefix tokens, which have no position, does not shrink the distance),
    averaged over the patch queries of the sequence.

    Args:
        attentions: ``(L, H, T, T)``.
        layout: the sequence's layout (distances use each token's grid position).

    Returns:
        ``(L, H)`` float64 pixels.
    """
    a = np.asarray(attentions, dtype=np.float64)
    p0 = layout.num_prefix
    pp = a[..., p0:, p0:]  # (L, H, P, P)
    pp = pp / np.clip(pp.sum(axis=-1, keepdims=True), 1e-30, None)
    rc = layout.patch_rc.astype(np.float64)
    dist = np.sqrt(((rc[:, None, :] - rc[None, :, :]) ** 2).sum(-1)) * layout.patch_size  # (P, P)
    return (pp * dist).sum(axis=-1).mean(axis=-1)


def uniform_distance(layout: TokenLayout) -> float:
    """Mean attention distance, in pixels, of a head that attends to every patch token equally.

    The reference against which :func:`mean_attention_distance` reads as local (below)
    or global (near it); a random-weight model sits close to it.
    """
    rc = layout.patch_rc.astype(np.float64)
    dist = np.sqrt(((rc[:, None, :] - rc[None, :, :]) ** 2).sum(-1)) * layout.patch_size
    return float(dist.mean())


def mass_region(heat: np.ndarray, keep: float = 0.6) -> np.ndarray:
    """The smallest set of cells holding ``keep`` of the total weight (DINO's visualisation).

    Cells are taken from the largest weight down until their sum reaches ``keep`` of the
    total. NaN cells (no token) are never in the region.

    Args:
        heat: ``(gh, gw)`` non-negative weights.
        keep: share of the mass, in (0, 1].

    Returns:
        ``(gh, gw)`` bool.
    """
    if not 0.0 < float(keep) <= 1.0:
        raise ValueError(f"keep must be in (0, 1], got {keep!r}")
    h = np.nan_to_num(np.asarray(heat, dtype=np.float64), nan=0.0).clip(min=0)
    flat = h.reshape(-1)
    total = flat.sum()
    out = np.zeros(flat.shape, dtype=bool)
    if total <= 0:
        return out.reshape(h.shape)
    order = np.argsort(-flat, kind="stable")
    csum = np.cumsum(flat[order])
    n = int(np.searchsorted(csum, keep * total - 1e-12 * total)) + 1
    out[order[:n]] = True
    return out.reshape(h.shape)


# --------------------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class AttentionMaps:
    """Every layer's attention for one image (and mask) through one model part.

    Arrays are read-only: results are cached and shared.

    Attributes:
        model_name: registry name of the model.
        part: ``encoder`` or ``decoder``.
        attentions: ``(L, H, T, T)`` float32 softmax weights; every row sums to 1.
        layout: which token is which (:class:`TokenLayout`).
        image: ``(S, S, 3)`` uint8, the model's view of the image.
        logits: ``(1000,)`` float32 ImageNet logits for classifiers, else None.
        random_init: True when the model's weights are random (maps show the
            architecture, not learned attention).
    """

    model_name: str
    part: str
    attentions: np.ndarray
    layout: TokenLayout
    image: np.ndarray
    logits: np.ndarray | None = None
    random_init: bool = False

    @property
    def depth(self) -> int:
        """Number of layers ``L``."""
        return int(self.attentions.shape[0])

    @property
    def num_heads(self) -> int:
        """Number of heads ``H``."""
        return int(self.attentions.shape[1])

    @property
    def num_tokens(self) -> int:
        """Sequence length ``T``."""
        return int(self.attentions.shape[-1])

    def check_layer(self, layer: int) -> int:
        """Validate a 0-based layer index (negative counts from the end)."""
        try:
            i = int(layer)
        except (TypeError, ValueError):
            raise ValueError(f"layer must be an integer, got {layer!r}") from None
        if not -self.depth <= i < self.depth:
            raise ValueError(f"layer must be 0..{self.depth - 1} (this {self.part} has {self.depth}), got {layer}")
        return i % self.depth

    def layer(self, layer: int) -> np.ndarray:
        """``(H, T, T)`` attention of one layer (0-based; -1 = last)."""
        return self.attentions[self.check_layer(layer)]

    def query(self, layer: int, token: int | str | tuple[int, int]) -> np.ndarray:
        """One token's attention over the image, per head.

        Args:
            layer: 0-based layer (-1 = last).
            token: ``cls``, ``dist``, a grid ``(row, col)`` or a sequence index.

        Returns:
            ``(H, gh, gw)`` float32 weights on the patch keys; NaN where no token is
            (hidden patches). They sum to less than 1 by the weight on prefix tokens
            (:meth:`prefix_share`).
        """
        i = self.layout.resolve(token)
        row = self.layer(layer)[:, i, self.layout.num_prefix:]
        return self.layout.scatter(row).astype(np.float32)

    def query_mean(self, layer: int, token: int | str | tuple[int, int]) -> np.ndarray:
        """:meth:`query` averaged over heads: ``(gh, gw)`` float32, NaN where no token is."""
        i = self.layout.resolve(token)
        row = self.layer(layer)[:, i, self.layout.num_prefix:].mean(axis=0)
        return self.layout.scatter(row).astype(np.float32)

    def prefix_share(self, layer: int, token: int | str | tuple[int, int]) -> dict[str, np.ndarray]:
        """Weight a token gives to each prefix token: ``{name: (H,) float}``."""
        i = self.layout.resolve(token)
        a = self.layer(layer)
        return {name: a[:, i, j].astype(np.float64) for j, name in enumerate(self.layout.prefix)}

    def prefix_share_mean(self, layer: int, token: int | str | tuple[int, int]) -> dict[str, float]:
        """:meth:`prefix_share` averaged over heads: ``{name: float}``."""
        return {name: float(v.mean()) for name, v in self.prefix_share(layer, token).items()}

    def mass_regions(self, layer: int, token: int | str | tuple[int, int], keep: float = 0.6) -> np.ndarray:
        """Per head, the patches holding ``keep`` of the token's patch attention (:func:`mass_region`).

        Returns:
            ``(H, gh, gw)`` bool.
        """
        return np.stack([mass_region(h, keep) for h in self.query(layer, token)])

    def rollout_matrix(self, head_fusion: str = "mean", discard_ratio: float = 0.0) -> np.ndarray:
        """``(T, T)`` rollout through every layer (see :func:`rollout_matrix`)."""
        return rollout_matrix(self.attentions, head_fusion, discard_ratio)

    def rollout(self, head_fusion: str = "mean", discard_ratio: float = 0.0,
                token: int | str | tuple[int, int] = "cls") -> np.ndarray:
        """Attention rollout of one output token over the image patches.

        The token's row of :func:`rollout_matrix`, restricted to the patch tokens and
        renormalised to sum 1 (the share that flows from prefix tokens is dropped).

        Args:
            head_fusion: ``mean``, ``max`` or ``min``.
            discard_ratio: share of the weakest off-diagonal entries of each row zeroed
                per layer, in [0, 0.99] (see :func:`discard_lowest`).
            token: whose rollout; default the class token.

        Returns:
            ``(gh, gw)`` float64 summing to 1; 0 at hidden patches.
        """
        i = self.layout.resolve(token)
        row = self.rollout_matrix(head_fusion, discard_ratio)[i, self.layout.num_prefix:]
        total = row.sum()
        row = row / total if total > 0 else np.full_like(row, 1.0 / max(row.size, 1))
        return self.layout.scatter(row, fill=0.0).astype(np.float64)

    def rollout_summary(self, rollout: np.ndarray, top: float = 0.1) -> dict[str, float]:
        """How concentrated a rollout map is.

        Args:
            rollout: ``(gh, gw)`` from :meth:`rollout`.
            top: share of the patch tokens counted in ``top_share``.

        Returns:
            ``sum`` (1 up to rounding), ``max_share`` (the strongest patch), ``top_share``
            (the strongest ``top`` of the patch tokens) and ``uniform_top_share`` (what
            ``top_share`` would be under a uniform map).
        """
        r = np.asarray(rollout, dtype=np.float64)
        n = max(1, self.layout.num_patches)
        k = max(1, int(round(top * n)))
        flat = np.sort(r.reshape(-1))[::-1]
        return {"sum": float(r.sum()), "max_share": float(flat[0]), "top_share": float(flat[:k].sum()),
                "uniform_top_share": k / n}

    def mean_distance(self) -> np.ndarray:
        """``(L, H)`` mean attention distance in input pixels (see :func:`mean_attention_distance`)."""
        return mean_attention_distance(self.attentions, self.layout)

    def uniform_distance(self) -> float:
        """Mean distance in pixels under uniform attention over this sequence's patches."""
        return uniform_distance(self.layout)

    def top_k(self, k: int = 5) -> list[tuple[str, float]]:
        """Top-``k`` ImageNet-1k labels with probabilities; ``[]`` for models without a classifier."""
        if self.logits is None:
            return []
        from .labels import top_k

        return top_k(self.logits, k)


# --------------------------------------------------------------------------------------
# Capturing a loaded model
# --------------------------------------------------------------------------------------


def model_view(model: LoadedModel, image: ImageInput) -> np.ndarray:
    """The model's view of an image: ``(S, S, 3)`` uint8 (shorter side resized, centre crop).

    An ``(S, S, 3)`` uint8 array already at the input size is used as it is.
    """
    s = model.data_config.input_size
    if isinstance(image, np.ndarray) and image.shape == (s, s, 3) and image.dtype == np.uint8:
        return image
    return to_uint8(square_resize(load_image(image), s))


def check_part(model: LoadedModel, part: str) -> str:
    """Validate ``part`` for ``model``: ``encoder`` always, ``decoder`` for MAE models."""
    valid = PARTS if isinstance(model.module, MaskedAutoencoderViT) else ("encoder",)
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
    module: Any = model.module
    return len(module.decoder_blocks if part == "decoder" else module.blocks)


def prefix_tokens(model: LoadedModel) -> tuple[str, ...]:
    """Names of the model's prefix tokens (``cls``, ``dist``, ``reg0``...), without a forward pass."""
    if isinstance(model.module, MaskedAutoencoderViT):
        return ("cls",)
    if _timm_vit(model.module):
        return vit_layout(model.module).prefix
    return ()


def _timm_vit(module: nn.Module) -> bool:
    from timm.models.vision_transformer import VisionTransformer

    return isinstance(module, VisionTransformer)


def capture(model: LoadedModel, image: ImageInput, mask: np.ndarray | torch.Tensor | None = None,
            part: str = "encoder") -> AttentionMaps:
    """Run the model once and capture every layer's attention (uncached; see :func:`attention`).

    Args:
        model: a loaded ViT, DeiT, DINO (timm ``VisionTransformer``) or MAE.
        image: anything :func:`vitviz.load_image` reads, or an ``(S, S, 3)`` uint8 view.
        mask: MAE only: ``(gh, gw)`` bool, True = hidden from the encoder (None = all
            visible). The encoder runs on the visible patches only, so hidden patches
            never appear in its layout; the decoder sees mask tokens there.
        part: ``encoder``, or ``decoder`` for an MAE.

    Returns:
        :class:`AttentionMaps`.

    Raises:
        ValueError: unsupported model (Swin has windowed attention: see :mod:`vitviz.swin`),
        bad part or mask. ImageError: unreadable image.
    """
    module = model.module
    check_part(model, part)
    view = np.array(model_view(model, image), dtype=np.uint8, copy=True)  # our own copy: made read-only below
    x = normalize(uint8_to_unit(view), model.data_config).unsqueeze(0).to(model.device)
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
    a = attn[:, 0].numpy()  # (L, H, T, T)
    if a.shape[-1] != layout.num_tokens:
        raise RuntimeError(f"captured {a.shape[-1]} tokens but the layout has {layout.num_tokens}")
    for arr in (a, view) + ((logits,) if logits is not None else ()):
        arr.setflags(write=False)
    return AttentionMaps(model.name, part, a, layout, view, logits, bool(getattr(model, "random_init", False)))


# --------------------------------------------------------------------------------------
# A small cache: clicking patches is a lookup, not a new forward pass
# --------------------------------------------------------------------------------------


def _cache_size() -> int:
    try:
        return max(1, int(os.environ.get("VITVIZ_ATTENTION_CACHE", "6")))
    except ValueError:
        return 6


class AttentionCache:
    """Bounded LRU of :class:`AttentionMaps`, keyed by model, image content, mask and part.

    Thread-safe; concurrent requests for one key compute it once. A ViT-B entry is
    about 22 MB (12 x 12 x 197 x 197 float32).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, int(capacity))
        self._items: OrderedDict[tuple, AttentionMaps] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[tuple, threading.Lock] = {}
        self.computed = 0

    def get(self, key: tuple, compute: Callable[[], AttentionMaps]) -> AttentionMaps:
        """The cached value for ``key``, computing it with ``compute()`` on a miss."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key]
            value = compute()
            with self._lock:
                self.computed += 1
                self._items[key] = value
                while len(self._items) > self.capacity:
                    self._items.popitem(last=False)
                self._key_locks.pop(key, None)
            return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._items.clear()


CACHE = AttentionCache(_cache_size())


def _key(model: LoadedModel, view: np.ndarray, mask: np.ndarray | torch.Tensor | None, part: str) -> tuple:
    digest = hashlib.blake2b(np.ascontiguousarray(view).tobytes(), digest_size=16).hexdigest()
    mkey = None if mask is None else np.asarray(mask, dtype=bool).tobytes() + repr(np.shape(mask)).encode()
    return (model.name, bool(getattr(model, "random_init", False)), str(model.device), id(model.module),
            digest, mkey, part)


def attention(model: LoadedModel, image: ImageInput, mask: np.ndarray | torch.Tensor | None = None,
              part: str = "encoder") -> AttentionMaps:
    """Every layer's attention for an image, cached per (model, image, mask, part).

    ``a = vitviz.attention(m, img)`` then ``a.rollout()``, ``a.query(layer, (row, col))``,
    ``a.mean_distance()``, ``a.top_k(5)``. Arguments as :func:`capture`; the image
    is keyed by the content of the model's view, so the same photo from another path
    is a cache hit.
    """
    check_part(model, part)
    view = model_view(model, image)
    return CACHE.get(_key(model, view, mask, part), lambda: capture(model, view, mask, part))


def masked_attention(model: LoadedModel, image: ImageInput, mask_ratio: float = 0.0, seed: int = 0,
                     part: str = "encoder") -> AttentionMaps:
    """:func:`attention` under a seeded random MAE mask (``mask_ratio`` 0 = no mask).

    Args:
        mask_ratio: share of patches hidden from an MAE encoder, in [0, 0.95]; must be
            0 for models that are not MAEs.
        seed: seed of the mask (:func:`vitviz.masking.make_mask`, pattern ``random``).

    Raises:
        ValueError: a ratio outside [0, 0.95], or a non-zero ratio for a non-MAE model.
    """
    from .masking import make_mask, validate_ratio

    r = validate_ratio(mask_ratio)
    if r == 0:
        return attention(model, image, None, part)
    if not isinstance(model.module, MaskedAutoencoderViT):
        raise ValueError(f"{model.name} is not a masked autoencoder; masking applies to MAE models only")
    return attention(model, image, make_mask(model.module.config.grid, r, seed, "random"), part)
