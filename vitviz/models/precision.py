"""Numeric precision of model runs: fp32 on CPU, bf16 autocast on CUDA.

``VITVIZ_PRECISION`` chooses: ``auto`` (default: bf16 autocast on CUDA, fp32
elsewhere, since bf16 is several times slower on AVX2-only CPUs), ``fp32`` or
``bf16`` (autocast on any device; on CPU it exists to check the bf16 error without a
GPU), or ``int8`` (CPU only: models loaded from then on get dynamically quantised int8
linear layers, see :mod:`vitviz.models.kernels`; runs are otherwise fp32). Measured on CPU with mae-tiny at 75% on three example photos: bf16 changed the
hidden-patch MSE by at most 0.04% (relative) and reconstruction pixels by 0.2 levels
of 255 on average, 6 at most; tests/models/test_precision.py allows 2% and 8 levels.

Explain's deletion and insertion curves (about a hundred forward passes per image) are the
one place ``auto`` picks bf16 on a CPU too, where it multiplies bf16 in hardware
(:func:`curve_precision`); their measured error is stated in :mod:`vitviz.explain.faithfulness`.
"""

from __future__ import annotations

import contextlib

import torch

from .. import settings

PRECISIONS = ("auto", "fp32", "bf16", "int8")


def precision() -> str:
    """The configured precision (``VITVIZ_PRECISION``, validated by :mod:`vitviz.settings`)."""
    return settings.get("VITVIZ_PRECISION")


def autocast(device: torch.device) -> contextlib.AbstractContextManager:
    """The autocast context for a model run on ``device`` (a no-op in fp32)."""
    mode = precision()
    if mode in ("fp32", "int8") or (mode == "auto" and device.type != "cuda"):
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def bf16_native() -> bool:
    """True when this CPU multiplies bfloat16 matrices in hardware (AVX512-BF16 or AMX, oneDNN's check).

    Without it bf16 is emulated and several times slower than fp32 (module docstring).
    """
    return bool(torch.backends.mkldnn.is_available()) and bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def curve_precision(device: torch.device) -> str:
    """The arithmetic of Explain's deletion/insertion curves on ``device``: ``fp32`` or ``bf16``.

    ``VITVIZ_PRECISION=bf16`` gives bf16 and ``fp32`` or ``int8`` give the loaded model as is (fp32 here).
    ``auto`` gives bf16 on a CPU that multiplies bf16 in hardware (:func:`bf16_native`:
    2.6-3.4x faster there on dinov2-small-lab8, ``bench/explain.py --precision``), else fp32.
    """
    mode = precision()
    if mode == "bf16":
        return "bf16"
    if mode == "auto" and device.type == "cpu" and bf16_native():
        return "bf16"
    return "fp32"
