"""The one attention-capture mechanism of vitviz, for every attention module it shows.

timm's ``Attention`` (ViT, DeiT, DINO and vitviz's MAE) and Swin's ``WindowAttention``
share one explicit path: ``softmax(QK^T + bias/mask)`` then ``attn_drop``. For the
duration of one call, each captured module is switched to that path (``fused_attn =
False``: the fused ``scaled_dot_product_attention`` never forms the matrix) and a
forward hook on its ``attn_drop`` records the softmax that enters it: ``(B, H, T, T)``
for a ViT, ``(B * windows, H, A, A)`` for a Swin block. On exit every hook is removed
and every ``fused_attn`` flag restored, even when the forward pass raises. Only the
modules being captured are touched.

Concurrency: models are shared between requests, so the switch to the explicit path
is *per thread*: the first capture of a module gives it a ``fused_attn`` property
(:func:`thread_local_fusion`) that reads False only in a thread capturing that module.
A concurrent plain forward of the same model in another thread keeps the fused kernel.
(It used to flip a shared flag; the explicit path rounds differently from the fused
kernel, so reconstructions computed during someone else's capture differed by one
level in a few pixels, and whichever version was cached first was what users saw.)
Captures are serialised by a lock, and a hook records only the forward pass of the
thread that installed it.

:func:`capture_gradients` is the same mechanism with the matrices left in the autograd
graph: one forward pass with gradients enabled locally, then the gradient of a score
with respect to every block's attention and to the tokens entering the last block
(what gradient-weighted explanations need). Parameters never receive a ``.grad`` and
the global grad mode is never changed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from torch import nn

from ..cache import acquired

#: Serialises captures: hooks are set on modules shared between requests.
_CAPTURE_LOCK = threading.RLock()
#: ``id``s of the attention modules the current thread is capturing.
_LOCAL = threading.local()
#: Original attention class -> its subclass with a per-thread ``fused_attn``.
_THREAD_LOCAL_CLASSES: dict[type, type] = {}


class _PerThreadFusion:
    """Mixin: ``fused_attn`` reads False in a thread that is capturing this module, else its own value."""

    @property
    def fused_attn(self) -> bool:
        capturing_here = getattr(_LOCAL, "modules", None)
        if capturing_here and id(self) in capturing_here:
            return False
        return self.__dict__["_vitviz_fused_attn"]

    @fused_attn.setter
    def fused_attn(self, value: bool) -> None:
        self.__dict__["_vitviz_fused_attn"] = bool(value)


def thread_local_fusion(module: nn.Module) -> nn.Module:
    """Give ``module`` a per-thread ``fused_attn`` (once; idempotent; same value for everyone else).

    The module's class becomes a subclass of its own (same name, ``isinstance`` holds,
    state dict unchanged) whose ``fused_attn`` property is False only in a thread
    inside :func:`capturing` for this module.
    """
    with acquired(_CAPTURE_LOCK):
        cls = type(module)
        if isinstance(module, _PerThreadFusion):
            return module
        sub = _THREAD_LOCAL_CLASSES.get(cls)
        if sub is None:
            sub = type(cls.__name__, (_PerThreadFusion, cls), {"__module__": cls.__module__,
                                                                "__qualname__": cls.__qualname__})
            _THREAD_LOCAL_CLASSES[cls] = sub
        module.__dict__["_vitviz_fused_attn"] = bool(module.__dict__.get("fused_attn", False))
        module.__class__ = sub  # from here on the property answers; the old attribute is shadowed
        module.__dict__.pop("fused_attn", None)
        return module


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


def _record(store: list[torch.Tensor], thread: int, keep_graph: bool, _module: nn.Module, inputs: tuple,
            _output: Any) -> None:
    """Forward hook on ``attn_drop``: keep the softmax entering it (this thread's passes only),
    detached unless ``keep_graph``."""
    if threading.get_ident() == thread:
        store.append(inputs[0] if keep_graph else inputs[0].detach())


@contextmanager
def capturing(modules: Sequence[nn.Module], keep_graph: bool = False) -> Iterator[list[list[torch.Tensor]]]:
    """Record the attention matrices of timm ``Attention`` modules while the body runs.

    For each module: in this thread only, ``fused_attn`` reads False
    (:func:`thread_local_fusion`), and a forward hook on ``attn_drop`` records its input,
    the ``(B, H, T, T)`` softmax (masked keys included, dropout not applied). On exit
    the hooks are removed and the thread's explicit path ends, whatever happened in
    the body; other threads never see the explicit path.

    Args:
        modules: attention modules (see :func:`attention_modules`).
        keep_graph: record the matrices as they are, still in the autograd graph (for
            :func:`capture_gradients`); by default they are detached.

    Yields:
        One list per module, receiving one ``(B, H, T, T)`` tensor per forward call.
    """
    thread = threading.get_ident()
    store: list[list[torch.Tensor]] = [[] for _ in modules]
    with acquired(_CAPTURE_LOCK):
        handles = []
        outer = getattr(_LOCAL, "modules", None)
        try:
            for m, s in zip(modules, store):
                thread_local_fusion(m)
                handles.append(m.attn_drop.register_forward_hook(partial(_record, s, thread, keep_graph)))
            _LOCAL.modules = (outer or frozenset()) | {id(m) for m in modules}
            yield store
        finally:
            _LOCAL.modules = outer
            for h in handles:
                h.remove()


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

    with acquired(_CAPTURE_LOCK):
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


@dataclass(frozen=True)
class Gradients:
    """Attention and tokens of one forward pass with the gradient of a score with respect to them.

    Shapes: ``L`` blocks, ``B`` images, ``H`` heads, ``T`` tokens, ``D`` channels. Every
    tensor is float32 on CPU, detached (no graph is kept).

    Attributes:
        attn: ``(L, B, H, T, T)`` the softmax of every block.
        attn_grad: ``(L, B, H, T, T)`` d score / d attn.
        tokens: ``(B, T, D)`` the tokens entering the last block (the output of the one before).
        tokens_grad: ``(B, T, D)`` d score / d tokens.
        out: what ``run`` returned, detached.
    """

    attn: torch.Tensor
    attn_grad: torch.Tensor
    tokens: torch.Tensor
    tokens_grad: torch.Tensor
    out: Any


def capture_gradients(blocks: Sequence[nn.Module], run: Callable[[], Any],
                      score: Callable[[Any], torch.Tensor]) -> Gradients:
    """Run ``run()`` once with gradients, and differentiate ``score(out)`` with respect to
    every block's attention and to the tokens entering the last block.

    The same mechanism as :func:`capture_blocks` (hooks on ``attn_drop``, the per-thread
    explicit path, the capture lock), with the matrices kept in the graph. A pre-hook on
    the first block hands it a copy of its input that requires grad, so the graph exists
    even though the model's parameters do not require grad; parameters never receive a
    ``.grad`` (``torch.autograd.grad`` returns the gradients instead of accumulating
    them). Gradients are enabled only inside this call (``torch.enable_grad`` outside any
    inference mode); every hook is removed on exit, whatever happens. The model's
    training mode is left as it is (call it on a model in eval mode).

    Args:
        blocks: transformer blocks with timm ``Attention`` (``blk.attn``).
        run: the forward pass (called once).
        score: ``out -> scalar tensor``, e.g. one class logit of image 0.

    Raises:
        RuntimeError: a block that did not run exactly once.
    """
    mods = attention_modules(blocks)
    thread = threading.get_ident()
    entering: list[torch.Tensor] = []

    def leaf(_module: nn.Module, inputs: tuple) -> tuple | None:
        if threading.get_ident() != thread:
            return None
        return (inputs[0].detach().clone().requires_grad_(True),) + tuple(inputs[1:])

    def last(_module: nn.Module, inputs: tuple) -> None:
        if threading.get_ident() == thread:
            entering.append(inputs[0])

    with acquired(_CAPTURE_LOCK):
        handles = [blocks[0].register_forward_pre_hook(leaf)]
        try:
            handles.append(blocks[-1].register_forward_pre_hook(last))
            with torch.inference_mode(False), torch.enable_grad(), capturing(mods, keep_graph=True) as store:
                out = run()
                bad = [i for i, s in enumerate(store) if len(s) != 1]
                if bad or len(entering) != 1:
                    raise RuntimeError(f"blocks {bad or [len(blocks) - 1]} did not run exactly once")
                wrt = [s[0] for s in store] + [entering[0]]
                grads = torch.autograd.grad(score(out), wrt, allow_unused=True)
        finally:
            for h in handles:
                h.remove()
    grads = [torch.zeros_like(t) if g is None else g for t, g in zip(wrt, grads)]
    cpu = lambda ts: torch.stack([t.detach().float().cpu() for t in ts])  # noqa: E731
    detached = out.detach() if isinstance(out, torch.Tensor) else out
    return Gradients(cpu(wrt[:-1]), cpu(grads[:-1]), wrt[-1].detach().float().cpu(), grads[-1].detach().float().cpu(),
                     detached)
