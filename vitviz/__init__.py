"""vitviz: see how Vision Transformers and Masked Autoencoders work.

Public API::

    import vitviz
    vitviz.available_models()                       # list[ModelInfo]
    m = vitviz.load_model("mae-tiny")               # LoadedModel
    img = vitviz.load_image("cat.jpg")              # RGB PIL image
    r = vitviz.reconstruct(m, img, mask_ratio=0.75, seed=0, pattern="random")
    a = vitviz.attention(m, img)                    # per-layer (heads, T, T) + token layout
    a.rollout(head_fusion="mean", discard_ratio=0.0)  # (gh, gw), sums to 1

Note: ``vitviz.attention`` is the function (as the API above); import the module's
other names with ``from vitviz.attention import ...``.

Importing the package loads no model and touches no network.
"""

from __future__ import annotations

from .attention import AttentionMaps, TokenLayout, attention
from .errors import ImageError, ModelUnavailable
from .images import load_image
from .masking import PATTERNS, make_mask
from .models.loading import LoadedModel, ModelInfo, available_models, load_model
from .reconstruct import Reconstruction, reconstruct

__all__ = [
    "AttentionMaps",
    "TokenLayout",
    "attention",
    "ImageError",
    "LoadedModel",
    "ModelInfo",
    "ModelUnavailable",
    "PATTERNS",
    "Reconstruction",
    "available_models",
    "load_image",
    "load_model",
    "make_mask",
    "reconstruct",
]
__version__ = "0.1.0"
