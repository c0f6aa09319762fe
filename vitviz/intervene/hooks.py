"""Interventions on a ViT's forward pass: heads switched off or held at their mean, tokens hidden or held at theirs.

Every change is a forward *pre*-hook (it edits what a module receives; nothing is recorded, which is
:mod:`vitviz.explain.capture`'s job), set on the modules of one model for the duration of one ``with``
block, acting only on the forward passes of the thread that set it, and removed on exit whatever
happens. Without any change nothing is hooked, so the model runs exactly as it does plainly.

Heads. timm's ``Attention`` concatenates the ``H`` head outputs ``z_h`` (``(B, T, d)`` each, ``d =
D / H``) into ``(B, T, H*d)`` and applies the output projection ``W_O z + b_O``. A head's
contribution to the attention branch is taken as ``W_O[:, h] z_h + b_O / H``: the bias is shared
evenly, so the ``H`` contributions add up to the branch and removing all of them removes the
branch (TransformerLens and Michel et al. keep ``b_O`` whole; the difference is the constant
``b_O / H`` per removed head).

* ``zero``: a pre-hook on ``attn.proj`` sets the head's slice of its input to 0, and a pre-hook on
  ``attn.proj_drop`` (the projection's output) subtracts ``k / H * b_O`` for the ``k`` heads removed.
* ``mean``: the head's slice is replaced by its mean over reference photos at each token position
  (:mod:`vitviz.intervene.means`); the bias stays, since the mean output includes it.

Tokens (sequence positions of the layout: prefix tokens first, then patches).

* ``zero`` (drop): no other token reads them: in every block their keys are masked out of the
  attention (a pre-hook on ``attn`` that passes an ``attn_mask``). Since LayerNorm and the MLP act
  per token, every other token then computes exactly what it would without them; the dropped
  tokens still compute their own outputs, which nothing reads (except a pooled class token).
* ``mean``: at the input of every block they are replaced by their mean over the reference photos.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
from torch import nn

#: Ablation modes: ``zero`` (heads' outputs zeroed, tokens dropped) or ``mean`` (held at the reference mean).
MODES: tuple[str, ...] = ("zero", "mean")


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES`, else a ``ValueError`` naming them."""
    if mode not in MODES:
        raise ValueError(f"unknown ablation mode {mode!r}; choose one of {', '.join(MODES)}")
    return mode


@dataclass(frozen=True)
class Means:
    """Reference means of one model's activations (one entry per block, float32 on the model's device).

    Attributes:
        heads: ``L`` tensors ``(T, H*d)``: the input of each block's ``attn.proj`` (the heads' outputs,
            concatenated) averaged over the reference photos, at each token position.
        tokens: ``L`` tensors ``(T, D)``: the tokens entering each block, averaged likewise.
        photos: how many photos were averaged.
    """

    heads: tuple[torch.Tensor, ...]
    tokens: tuple[torch.Tensor, ...]
    photos: int = 0


@dataclass(frozen=True)
class Change:
    """What to change in one forward pass.

    Attributes:
        heads: ``(layer, head)`` pairs, counted from 0.
        tokens: sequence positions (prefix tokens first), counted from 0.
        mode: ``zero`` or ``mean`` (:data:`MODES`).
        means: the reference means (needed for ``mean`` mode).
    """

    heads: tuple[tuple[int, int], ...] = ()
    tokens: tuple[int, ...] = ()
    mode: str = "zero"
    means: Means | None = field(default=None, compare=False)

    @property
    def empty(self) -> bool:
        """True when nothing is changed."""
        return not self.heads and not self.tokens


def check_heads(heads: Sequence[Sequence[int]], depth: int, num_heads: int) -> tuple[tuple[int, int], ...]:
    """Validated, sorted, de-duplicated ``(layer, head)`` pairs.

    Raises:
        ValueError: a pair out of range, naming the valid ranges.
    """
    out = set()
    for pair in heads:
        try:
            layer, head = (int(v) for v in pair)
        except (TypeError, ValueError):
            raise ValueError(f"a head is a (layer, head) pair of integers, got {pair!r}") from None
        if not (0 <= layer < depth and 0 <= head < num_heads):
            raise ValueError(f"head ({layer}, {head}) does not exist: layers are 0..{depth - 1} and heads "
                             f"0..{num_heads - 1} (counted from 0)")
        out.add((layer, head))
    return tuple(sorted(out))


def _mine(thread: int) -> bool:
    return threading.get_ident() == thread


def _zero_heads(thread: int, heads: list[int], num_heads: int, _m: nn.Module, inputs: tuple) -> tuple | None:
    """Pre-hook on ``attn.proj``: ``(B, T, H*d)`` with the given heads' slices set to 0."""
    if not _mine(thread):
        return None
    x = inputs[0].clone()
    b, t, c = x.shape
    x.view(b, t, num_heads, c // num_heads)[:, :, heads] = 0
    return (x,) + tuple(inputs[1:])


def _mean_heads(thread: int, heads: list[int], num_heads: int, mean: torch.Tensor, _m: nn.Module,
                inputs: tuple) -> tuple | None:
    """Pre-hook on ``attn.proj``: the given heads' slices replaced by the reference mean ``(T, H*d)``."""
    if not _mine(thread):
        return None
    x = inputs[0].clone()
    b, t, c = x.shape
    if mean.shape[0] != t:
        raise RuntimeError(f"the reference mean has {mean.shape[0]} tokens, this pass {t}")
    d = c // num_heads
    ref = mean.to(x.dtype).view(1, t, num_heads, d)
    x.view(b, t, num_heads, d)[:, :, heads] = ref[:, :, heads]
    return (x,) + tuple(inputs[1:])


def _bias_share(thread: int, share: float, bias: torch.Tensor, _m: nn.Module, inputs: tuple) -> tuple | None:
    """Pre-hook on ``attn.proj_drop``: the projection's output minus ``share * b_O``."""
    if not _mine(thread):
        return None
    return (inputs[0] - share * bias.to(inputs[0].dtype),) + tuple(inputs[1:])


def _drop_keys(thread: int, tokens: list[int], _m: nn.Module, args: tuple, kwargs: dict) -> tuple | None:
    """Pre-hook (with keyword arguments) on ``attn``: the tokens' keys masked out for every query."""
    if not _mine(thread):
        return None
    x = args[0]
    keep = torch.ones(x.shape[1], dtype=torch.bool, device=x.device)
    keep[tokens] = False
    keep = keep.view(1, 1, 1, -1)
    old = kwargs.get("attn_mask")
    if old is None:
        mask = keep
    elif old.dtype == torch.bool:
        mask = old & keep
    else:
        mask = old.masked_fill(~keep, float("-inf"))
    return args, {**kwargs, "attn_mask": mask}


def _mean_tokens(thread: int, tokens: list[int], mean: torch.Tensor, _m: nn.Module, inputs: tuple) -> tuple | None:
    """Pre-hook on a block: the tokens of its input ``(B, T, D)`` replaced by the reference mean ``(T, D)``."""
    if not _mine(thread):
        return None
    x = inputs[0].clone()
    if mean.shape[0] != x.shape[1]:
        raise RuntimeError(f"the reference mean has {mean.shape[0]} tokens, this pass {x.shape[1]}")
    x[:, tokens] = mean[tokens].to(x.dtype)
    return (x,) + tuple(inputs[1:])


@contextmanager
def intervening(blocks: Sequence[nn.Module], change: Change) -> Iterator[None]:
    """Apply ``change`` to every forward pass of ``blocks`` run by this thread inside the ``with`` body.

    Args:
        blocks: the transformer blocks (timm ``Block`` with a timm ``Attention``), in depth order.
        change: the heads and tokens to change (layers index ``blocks``).

    Raises:
        ValueError: ``mean`` mode without reference means, or heads out of range.
    """
    check_mode(change.mode)
    if change.empty:
        yield
        return
    if change.mode == "mean" and change.means is None:
        raise ValueError("mean ablation needs the reference means (vitviz.intervene.means.reference_means)")
    thread = threading.get_ident()
    by_layer: dict[int, list[int]] = {}
    for layer, head in change.heads:
        by_layer.setdefault(layer, []).append(head)
    handles: list[Any] = []
    try:
        for layer, heads in by_layer.items():
            attn = blocks[layer].attn
            h = int(attn.num_heads)
            if change.mode == "zero":
                handles.append(attn.proj.register_forward_pre_hook(partial(_zero_heads, thread, heads, h)))
                bias = getattr(attn.proj, "bias", None)
                if bias is not None:
                    hook = partial(_bias_share, thread, len(heads) / h, bias.detach())
                    handles.append(attn.proj_drop.register_forward_pre_hook(hook))
            else:
                assert change.means is not None
                hook = partial(_mean_heads, thread, heads, h, change.means.heads[layer])
                handles.append(attn.proj.register_forward_pre_hook(hook))
        if change.tokens:
            tokens = sorted(set(change.tokens))
            for i, blk in enumerate(blocks):
                if change.mode == "zero":
                    handles.append(blk.attn.register_forward_pre_hook(partial(_drop_keys, thread, tokens),
                                                                      with_kwargs=True))
                else:
                    assert change.means is not None
                    handles.append(blk.register_forward_pre_hook(
                        partial(_mean_tokens, thread, tokens, change.means.tokens[i])))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _record(thread: int, store: list[torch.Tensor], _m: nn.Module, inputs: tuple) -> None:
    if _mine(thread):
        store.append(inputs[0].detach())


@contextmanager
def recording_inputs(blocks: Sequence[nn.Module]) -> Iterator[tuple[list[list[torch.Tensor]], list[list[torch.Tensor]]]]:
    """Record, for each block, what its ``attn.proj`` receives (the heads' outputs, ``(B, T, H*d)``) and
    what the block receives (``(B, T, D)``), for this thread's passes inside the body (pre-hooks, removed
    on exit). Used to average them over reference photos.

    Yields:
        ``(heads, tokens)``: one list per block each, one tensor per forward pass.
    """
    thread = threading.get_ident()
    heads: list[list[torch.Tensor]] = [[] for _ in blocks]
    tokens: list[list[torch.Tensor]] = [[] for _ in blocks]
    handles: list[Any] = []
    try:
        for blk, hs, ts in zip(blocks, heads, tokens):
            handles.append(blk.attn.proj.register_forward_pre_hook(partial(_record, thread, hs)))
            handles.append(blk.register_forward_pre_hook(partial(_record, thread, ts)))
        yield heads, tokens
    finally:
        for handle in handles:
            handle.remove()
