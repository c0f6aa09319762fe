"""The one attention-capture mechanism of vitviz, for every attention module it shows.

timm's ``Attention`` (ViT, DeiT, DINO and vitviz's MAE) and Swin's ``WindowAttention``
share one explicit path: ``softmax(QK^T + bias/mask)`` then ``attn_drop``. For the
duration of one call, each captured module is switched to that path (``fused_attn =
False``: the fused ``scaled_dot_product_attention`` never forms the matrix) and a
forward hook on its ``attn_drop`` records the softmax that enters it: ``(B, H, T, T)``
for a ViT, ``(B * windows, H, A, A)`` for a Swin block. On exit every hook is removed
and every ``fused_attn`` flag restored, even when the forward pass raises. Only the
modules being captured are touched.

Concurrency: models are shared between requests. Captures are serialised by a lock,
and a hook records only the forward pass of the thread that installed it, so a
concurrent plain forward of the same module (which briefly takes the explicit path:
same numbers, a little slower) never leaks into a capture.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

import torch
from torch import nn

#: Serialises captures: hooks and ``fused_attn`` flags are set on modules shared between requests.
_CAPTURE_LOCK = threading.RLock()


def attention_modules(blocks: Sequence[nn.Module]) -> list[nn.Module]:
    """The attention module of each block: timm ``Attention`` (ViT, DeiT, DINO, MAE) or
    ``WindowAttention`` (Swin); both apply ``attn_drop`` to their softmax on the explicit path.

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
                             "path; vitviz captures timm ViT and Swin attention only")
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


def capture_block_tokens(blocks: Sequence[nn.Module], run: Callable[[], Any]) -> tuple[list[torch.Tensor], Any]:
    """Run ``run()`` once and return the tokens entering the first block and leaving every block.

    Same rules as the attention capture: forward hooks on the blocks (a pre-hook on the
    first), recording only this thread's pass, serialised by the capture lock and removed
    on exit whatever happens.

    Args:
        blocks: the transformer blocks in order (ViT ``Block``, Swin ``SwinTransformerBlock``...).
        run: the forward pass (called once, under ``torch.inference_mode``).

    Returns:
        ``(tokens, out)``: ``tokens[0]`` is the input of ``blocks[0]`` and ``tokens[i]`` the
        output of ``blocks[i - 1]``, each as the block sees it (``(B, T, D)`` for a ViT,
        ``(B, H, W, C)`` for Swin), float32 on CPU; ``out`` is what ``run`` returned.

    Raises:
        RuntimeError: a block that did not run exactly once.
    """
    if not blocks:
        raise ValueError("no blocks to capture")
    thread = threading.get_ident()
    first: list[torch.Tensor] = []
    outs: list[list[torch.Tensor]] = [[] for _ in blocks]

    def pre(_module: nn.Module, inputs: tuple) -> None:
        if threading.get_ident() == thread:
            first.append(inputs[0].detach())

    def post(store: list[torch.Tensor], _module: nn.Module, _inputs: tuple, output: Any) -> None:
        if threading.get_ident() == thread:
            store.append((output[0] if isinstance(output, tuple) else output).detach())

    with _CAPTURE_LOCK:
        handles = [blocks[0].register_forward_pre_hook(pre)]
        try:
            handles += [b.register_forward_hook(partial(post, s)) for b, s in zip(blocks, outs)]
            with torch.inference_mode():
                out = run()
        finally:
            for h in handles:
                h.remove()
    bad = [i for i, s in enumerate(outs) if len(s) != 1]
    if len(first) != 1 or bad:
        raise RuntimeError(f"blocks {bad or [0]} did not run exactly once")
    return [t.float().cpu() for t in [first[0]] + [s[0] for s in outs]], out
