"""A linear classifier head that vitviz trains on a frozen backbone, shipped on its own.

The head file (fp16 safetensors, a few KB) holds ``weight`` ``(C, D)`` and ``bias`` ``(C,)``
and, as metadata, its class names, the backbone's registry name and the head's input. The
backbone's weights are never copied: a registry entry with ``head`` set loads its backbone
from the backbone's own sources and :func:`attach` puts the head on it.

The head reads timm's ``global_pool='token'`` input: the class token after the backbone's
final LayerNorm, ``logits = weight @ norm(x)[0] + bias``.

Trained by ``python -m vitviz.training.linear_head`` (card: ``assets/labelled/head/``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..assets import assets_dir
from ..errors import ModelUnavailable

#: The ``format`` metadata of a head file.
HEAD_FORMAT = "vitviz-linear-head-1"
#: What the head reads (metadata ``input``): the class token after the final norm.
HEAD_INPUT = "cls-after-final-norm"


@dataclass(frozen=True, eq=False)
class LinearHead:
    """A trained linear head.

    Attributes:
        weight: ``(C, D)`` float32 (stored fp16).
        bias: ``(C,)`` float32.
        classes: the ``C`` class names, in logit order.
        backbone: registry name of the backbone it was trained on.
        meta: every metadata string of the file.
    """

    weight: torch.Tensor
    bias: torch.Tensor
    classes: tuple[str, ...]
    backbone: str
    meta: dict[str, str]

    @property
    def num_classes(self) -> int:
        """``C``."""
        return len(self.classes)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """``(N, D)`` classifier inputs -> ``(N, C)`` float32 logits."""
        return x.float() @ self.weight.T + self.bias


def head_dir() -> Path:
    """``assets/labelled/head``: the shipped heads, their cards and their inputs."""
    return assets_dir() / "labelled" / "head"


def write_head(path: Path, weight: torch.Tensor, bias: torch.Tensor, classes: tuple[str, ...] | list[str],
               backbone: str, extra: dict[str, str] | None = None) -> None:
    """Save a head as fp16 safetensors with its metadata (the inverse of :func:`read_head`)."""
    from safetensors.torch import save_file

    meta = {"format": HEAD_FORMAT, "classes": json.dumps(list(classes)), "backbone": backbone,
            "input": HEAD_INPUT, **(extra or {})}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({"weight": weight.detach().to(torch.float16).contiguous(),
               "bias": bias.detach().to(torch.float16).contiguous()}, str(path), metadata=meta)


@functools.lru_cache(maxsize=8)
def _read(path: str, mtime_ns: int) -> LinearHead:
    from safetensors import SafetensorError, safe_open

    what = f"head file {Path(path).name}"
    try:
        with safe_open(path, framework="pt") as fh:
            meta = dict(fh.metadata() or {})
            tensors = {k: fh.get_tensor(k) for k in fh.keys()}
    except (SafetensorError, OSError, ValueError) as exc:
        raise ModelUnavailable(f"cannot read {what}: {exc}") from None
    if meta.get("format") != HEAD_FORMAT or meta.get("input") != HEAD_INPUT:
        raise ModelUnavailable(f"{what} is not a {HEAD_FORMAT} file reading the {HEAD_INPUT}")
    if set(tensors) != {"weight", "bias"}:
        raise ModelUnavailable(f"{what} must hold exactly weight and bias, it holds {sorted(tensors)}")
    w, b = tensors["weight"].float(), tensors["bias"].float()
    classes = tuple(json.loads(meta.get("classes", "[]")))
    if w.dim() != 2 or tuple(b.shape) != (w.shape[0],) or len(classes) != w.shape[0]:
        raise ModelUnavailable(f"{what}: weight {tuple(w.shape)}, bias {tuple(b.shape)} and {len(classes)} class "
                               "names do not agree")
    return LinearHead(w, b, classes, meta.get("backbone", ""), meta)


def read_head(path: Path) -> LinearHead:
    """Read a head file (cached by path and modification time).

    Raises:
        ModelUnavailable: a file that cannot be read, or whose tensors, metadata and class names disagree.
    """
    p = Path(path)
    try:
        stamp = p.stat().st_mtime_ns
    except OSError as exc:
        raise ModelUnavailable(f"the head file {p} is missing: {exc.strerror}") from None
    return _read(str(p), stamp)


def attach(module: nn.Module, head: LinearHead, what: str) -> nn.Module:
    """Put ``head`` on a timm ``VisionTransformer`` backbone (``num_classes=0``, class-token pooling).

    Returns:
        the same module, now a ``C``-class classifier whose ``forward`` gives the head's logits.

    Raises:
        ModelUnavailable: the head's width is not the backbone's.
    """
    width = int(module.embed_dim)
    if head.weight.shape[1] != width:
        raise ModelUnavailable(f"{what}: the head reads {head.weight.shape[1]} channels, the backbone gives {width}")
    if getattr(module, "global_pool", None) != "token" or getattr(module, "cls_token", None) is None:
        raise ModelUnavailable(f"{what}: the backbone does not pool its class token")
    device = module.cls_token.device
    linear = nn.utils.skip_init(nn.Linear, width, head.num_classes, device=device)  # no random init to draw
    with torch.no_grad():
        linear.weight.copy_(head.weight)
        linear.bias.copy_(head.bias)
    module.head = linear.train(module.training)
    module.num_classes = head.num_classes
    return module
