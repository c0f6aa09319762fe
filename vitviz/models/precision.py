"""Numeric precision of model runs: fp32 on CPU, bf16 autocast on CUDA.

``VITVIZ_PRECISION`` chooses: ``auto`` (default: bf16 autocast on CUDA, fp32
elsewhere, since bf16 is several times slower on AVX2-only CPUs), ``fp32`` or
``bf16`` (autocast on any device; on CPU it exists to check the bf16 error without a
GPU), or ``int8`` (CPU only: models loaded from then on get dynamically quantised int8
linear layers, see :mod:`vitviz.models.kernels`; runs are otherwise fp32). Measured on CPU with mae-tiny at 75% on three example photos: bf16 changed the
hidden-patch MSE by at most 0.04% (relative) and reconstruction pixels by 0.2 levels
of 255 on average, 6 at most; tests/models/test_precision.py allows 2% and 8 levels.
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
