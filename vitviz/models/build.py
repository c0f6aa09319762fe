"""Building modules: timm architectures (no download), their preprocessing, and the one
path to random weights.

:func:`isolated_seed` is the one place where vitviz seeds PyTorch's global RNG: timm
and torch constructors draw initial weights from it and take no generator, so a
random-weight architecture that depends only on a seed is built inside a forked RNG
state, seeded, and the caller's state is restored on exit. Everything else in vitviz
uses a ``torch.Generator`` per call.

:func:`parameters_on_meta` builds a module whose weights a checkpoint will replace without drawing them
first (the draws were most of a model's load: 0.2-0.7 s for a ViT-S or Swin-T on a 2-core CPU).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

from ..core.images import DataConfig
from .beit import BEiTForMIM
from .mae import MaskedAutoencoderViT
from .vqvae import VQTokenizer
from .vqkd import VQKD
from .spec import ModelSpec

#: Seed of every random-weight model (``load_model(..., random_init=True)``).
RANDOM_INIT_SEED = 0


@contextmanager
def isolated_seed(seed: int) -> Iterator[None]:
    """Seed the (forked, CPU) global RNG for the block; restore the caller's state after."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


_META = threading.local()
_PATCH_LOCK = threading.Lock()
_ORIGINAL_REGISTER = nn.Module.register_parameter


def _register_parameter(self: nn.Module, name: str, param: nn.Parameter | None) -> None:
    """``nn.Module.register_parameter``; inside :func:`parameters_on_meta` (this thread only) the parameter is
    registered as a ``meta`` tensor of the same shape and dtype, so the initialisation that follows is a no-op."""
    _ORIGINAL_REGISTER(self, name, param)
    if param is not None and getattr(_META, "depth", 0) and type(param) is nn.Parameter and not param.is_meta:
        self._parameters[name] = nn.Parameter(param.detach().to("meta"), requires_grad=param.requires_grad)


@contextmanager
def parameters_on_meta() -> Iterator[None]:
    """Modules built in this thread inside the block get their parameters on the ``meta`` device (shape and
    dtype, no storage, no random draws); buffers are built as usual (Swin's relative position index, masks).
    Other threads build as usual. The caller must then give every parameter a value
    (``load_state_dict(..., assign=True)``; :func:`vitviz.models.checkpoint.build_strict`)."""
    with _PATCH_LOCK:
        if nn.Module.register_parameter is not _register_parameter:
            nn.Module.register_parameter = _register_parameter  # type: ignore[method-assign]
    _META.depth = getattr(_META, "depth", 0) + 1
    try:
        yield
    finally:
        _META.depth -= 1


def create_timm(timm_name: str) -> nn.Module:
    """Build a timm model with random weights (never downloads).

    Args:
        timm_name: a timm model name with its pretrained tag
            (``deit_small_distilled_patch16_224.fb_in1k``); the tag selects the
            head (``vit_small_patch16_224.dino`` has none).
    """
    import timm

    return timm.create_model(timm_name, pretrained=False)


def timm_data_config(model: nn.Module) -> DataConfig:
    """The preprocessing of a timm model as a :class:`~vitviz.core.images.DataConfig`.

    From ``timm.data.resolve_model_data_config``: input size and mean/std. Its
    ``crop_pct`` and interpolation are not used: vitviz resizes the shorter side to
    the input size and centre-crops a square.

    Raises:
        ValueError: for a non-square input size.
    """
    from timm.data import resolve_model_data_config

    cfg = resolve_model_data_config(model)
    _, h, w = cfg["input_size"]
    if h != w:
        raise ValueError(f"vitviz needs a square input; this model wants {h}x{w}")
    return DataConfig(input_size=int(h), mean=tuple(float(x) for x in cfg["mean"]),
                      std=tuple(float(x) for x in cfg["std"]))


def build_random(spec: ModelSpec) -> tuple[nn.Module, DataConfig, bool]:
    """The architecture of ``spec`` with random weights (no file, no network).

    The initialisation runs inside ``torch.random.fork_rng`` seeded with
    :data:`RANDOM_INIT_SEED`, so the weights depend only on the model name and the
    caller's global RNG state is untouched.
    """
    with isolated_seed(RANDOM_INIT_SEED):
        if spec.family == "mae":
            assert spec.mae_config is not None
            module: nn.Module = MaskedAutoencoderViT(spec.mae_config)
            data_config = DataConfig(input_size=spec.mae_config.img_size)
        elif spec.family == "vq":
            assert spec.vq_config is not None
            module = VQTokenizer(spec.vq_config)
            data_config = DataConfig(input_size=spec.vq_config.img_size)
        elif spec.family == "vqkd":
            assert spec.vqkd_config is not None
            module = VQKD(spec.vqkd_config)
            data_config = DataConfig(input_size=spec.vqkd_config.img_size)
        elif spec.dinov2_arch is not None:
            from .dinov2 import build_dinov2, data_config as dinov2_data_config

            module = build_dinov2(spec.dinov2_arch, spec.input_size)
            data_config = dinov2_data_config(spec.input_size)
            if spec.head:  # the head's shape and class names, random numbers like the backbone's
                from .linear_head import head_dir, read_head

                module.reset_classifier(read_head(head_dir() / spec.head).num_classes)
        elif spec.family == "beit":
            assert spec.beit_config is not None
            module = BEiTForMIM(spec.beit_config)
            data_config = DataConfig(input_size=spec.beit_config.img_size)
        else:
            assert spec.timm_name is not None
            module = create_timm(spec.timm_name)
            data_config = timm_data_config(module)
    norm_pix = bool(spec.mae_config is not None and (spec.mae_config.norm_pix_loss or spec.norm_pix))
    return module, data_config, norm_pix
