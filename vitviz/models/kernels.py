"""Faster CPU inference for loaded models: oneDNN-packed linear layers, and int8 as an opt-in.

Packed linears (the default on CPU). A transformer's time on CPU is spent almost
entirely in its linear layers. PyTorch's plain ``F.linear`` re-reads the weight in its
stored layout on every call; oneDNN can instead reorder the weight once into its
blocked layout (``torch.ops.mkldnn._reorder_linear_weight``, what ``torch.compile``'s
freezing pass does for CPU inference) and run ``torch.ops.mkldnn._linear_pointwise``,
optionally with the MLP's GELU fused into the same kernel. Results stay fp32 (they
differ from ``F.linear`` by float rounding, about 5e-6 on MAE-Base). On this project's
2-core AVX-512 CPU it made MAE-Base reconstruction about 25% faster, and the small
matrices of heavily masked encoders (10 tokens) about 3x faster; see ``bench/README.md``.

:class:`PackedLinear` replaces ``nn.Linear`` in place and keeps the same ``weight`` and
``bias`` parameters, so state-dict keys, hooks on other modules and attention capture
are unchanged. It falls back to ``F.linear`` (same result) whenever the fast kernel does
not apply: gradients enabled, autocast active, a non-CPU or non-fp32 input, or a
``TorchDispatchMode`` active (so ``FlopCounterMode`` still counts the matmuls). If the
weight is modified in place, it is repacked before its next use.

int8 (``VITVIZ_PRECISION=int8``, CPU only): every linear layer is replaced by PyTorch's
dynamically quantised int8 linear (weights int8 per tensor, activations quantised per
call). Several times faster, with a measured error stated in ``bench/README.md`` and
checked by ``tests/models/test_kernels.py``.
"""

from __future__ import annotations

import copy
import threading
import warnings
import weakref

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import _get_current_dispatch_mode

from .. import settings

#: Token-count hint for oneDNN's weight layout (it works for any count).
_PACK_HINT = 64


def onednn_available() -> bool:
    """True when this PyTorch build has the oneDNN linear kernels."""
    return bool(torch.backends.mkldnn.is_available()) and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def packing_enabled() -> bool:
    """Whether loaded CPU models get packed linears (``VITVIZ_ONEDNN``, default ``1``)."""
    return bool(settings.get("VITVIZ_ONEDNN")) and onednn_available()


class PackedLinear(nn.Module):
    """``nn.Linear`` (optionally followed by exact GELU) on a oneDNN-packed weight.

    Shapes: ``(..., in_features) -> (..., out_features)``.

    Args:
        linear: the layer to wrap; its ``weight`` and ``bias`` parameters are shared.
        gelu: apply the exact (erf) GELU after the affine map, fused into the kernel.
    """

    def __init__(self, linear: nn.Linear, gelu: bool = False) -> None:
        super().__init__()
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        self.weight = linear.weight
        self.bias = linear.bias
        self.gelu = gelu
        self._packed: torch.Tensor | None = None
        self._packed_version = -1

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, gelu={self.gelu}, onednn"

    def _fast(self, x: torch.Tensor) -> bool:
        return (
            x.device.type == "cpu"
            and x.dtype == torch.float32
            and self.weight.dtype == torch.float32
            and not torch.is_grad_enabled()
            and not torch.is_autocast_enabled("cpu")
            and _get_current_dispatch_mode() is None
        )

    def _weight(self) -> torch.Tensor:
        version = self.weight._version
        if self._packed is None or version != self._packed_version:
            self._packed = torch.ops.mkldnn._reorder_linear_weight(self.weight.detach(), _PACK_HINT)
            self._packed_version = version
        return self._packed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._fast(x):
            if self.gelu:
                return torch.ops.mkldnn._linear_pointwise(x, self._weight(), self.bias, "gelu", [], "none")
            return torch.ops.mkldnn._linear_pointwise(x, self._weight(), self.bias, "none", [], "")
        y = F.linear(x, self.weight, self.bias)
        return F.gelu(y) if self.gelu else y


def _is_exact_gelu(act: nn.Module) -> bool:
    return isinstance(act, nn.GELU) and act.approximate == "none"


def pack_linears(module: nn.Module) -> int:
    """Replace every ``nn.Linear`` in ``module`` by a :class:`PackedLinear`, in place.

    A ``fc1 -> GELU`` pair (timm's ``Mlp``) becomes one fused layer and the GELU an
    ``nn.Identity``. Call it on a model in eval mode after its weights are loaded.

    Returns:
        The number of linear layers packed (0 when oneDNN is unavailable).
    """
    if not onednn_available():
        return 0
    count = 0
    for parent in list(module.modules()):
        fc1, act = getattr(parent, "fc1", None), getattr(parent, "act", None)
        if isinstance(fc1, nn.Linear) and act is not None and _is_exact_gelu(act):
            parent.fc1 = PackedLinear(fc1, gelu=True)
            parent.act = nn.Identity()
            count += 1
        for name, child in list(parent.named_children()):
            if type(child) is nn.Linear:
                setattr(parent, name, PackedLinear(child))
                count += 1
    return count


def quantize_int8(module: nn.Module) -> nn.Module:
    """Dynamic int8 quantisation of every ``nn.Linear`` (CPU; returns the converted module).

    Weights become int8 (per tensor); activations are quantised on the fly per call;
    everything else stays fp32.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch flags its quantised-tensor API as deprecated
        return torch.ao.quantization.quantize_dynamic(module, {nn.Linear}, dtype=torch.qint8, inplace=True)


KERNEL_MODES = ("onednn", "eager", "int8")


def kernel_mode(device: torch.device, requested: str | None = None) -> str:
    """How a model loaded now for ``device`` runs: ``int8``, ``onednn`` or ``eager``.

    Args:
        device: where the model will run.
        requested: an explicit mode; ``None`` follows the settings (``VITVIZ_PRECISION=int8``
            gives int8; otherwise oneDNN on CPU unless ``VITVIZ_ONEDNN=0``; eager on GPUs).
            ``onednn`` falls back to ``eager`` where oneDNN is not available.

    Raises:
        ValueError: an unknown mode, or int8 asked for a non-CPU device.
    """
    from .precision import precision

    if requested is not None and requested not in KERNEL_MODES:
        raise ValueError(f"kernels must be one of {', '.join(KERNEL_MODES)}, got {requested!r}")
    mode = requested or ("int8" if precision() == "int8" else "onednn" if packing_enabled() else "eager")
    if mode == "int8" and device.type != "cpu":
        raise ValueError("int8 kernels (VITVIZ_PRECISION=int8) run on CPU only; use auto or bf16 on a GPU")
    if mode == "onednn" and (device.type != "cpu" or not onednn_available()):
        return "eager"
    return mode


def optimize_for_inference(module: nn.Module, mode: str) -> nn.Module:
    """Apply :func:`kernel_mode`'s choice to an eval-mode module (in place; returned)."""
    if mode == "int8":
        return quantize_int8(module)
    if mode == "onednn":
        pack_linears(module)
    return module


#: Inference module -> its bfloat16 copy (:func:`bf16_copy`); an entry goes with its module.
_BF16_COPIES: weakref.WeakKeyDictionary[nn.Module, nn.Module] = weakref.WeakKeyDictionary()
_BF16_LOCK = threading.Lock()


def bf16_copy(module: nn.Module) -> nn.Module:
    """A bfloat16 copy of an eval-mode fp32 module, made once per module and kept while it lives.

    Every parameter and buffer is cast to bfloat16; a :class:`PackedLinear` of the copy runs
    ``F.linear`` in bfloat16 (its fp32 packing does not apply), which oneDNN computes with fp32
    accumulation on a CPU with :func:`vitviz.models.precision.bf16_native`. The original is not touched. Costs half the
    module's fp32 size in memory (44 MB for a ViT-S).

    Raises:
        ValueError: an int8 (dynamically quantised) module: it has no float weights to cast.
    """
    with _BF16_LOCK:
        found = _BF16_COPIES.get(module)
        if found is not None:
            return found
        if any(type(m).__module__.startswith("torch.ao.nn.quantized") for m in module.modules()):
            raise ValueError("an int8 model has no bfloat16 copy; load it with fp32 kernels")
        # fp32 packed weights (oneDNN's opaque tensors, which cannot be copied) are left out of the copy
        skip = {id(m._packed): None for m in module.modules() if isinstance(m, PackedLinear) and m._packed is not None}
        twin = copy.deepcopy(module, memo=skip).to(torch.bfloat16).eval().requires_grad_(False)
        for m in twin.modules():
            if isinstance(m, PackedLinear):
                m._packed, m._packed_version = None, -1
        _BF16_COPIES[module] = twin
        return twin
