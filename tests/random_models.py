"""timm ViTs and DeiTs with seeded random weights, for tests that need the real architecture but not its training."""

from __future__ import annotations

import torch

from vitviz.core.images import DataConfig
from vitviz.models.build import timm_data_config
from vitviz.models.loading import LoadedModel
from vitviz.models.registry import get_spec


def random_timm(timm_name: str, seed: int, **kwargs) -> torch.nn.Module:
    """``timm.create_model(timm_name, pretrained=False, **kwargs)`` with weights drawn from ``seed``, in eval
    mode and without gradients; the global RNG is left as it was (a forked one draws the weights)."""
    import timm

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return timm.create_model(timm_name, pretrained=False, **kwargs).eval().requires_grad_(False)


def random_loaded(timm_name: str, registry_name: str, seed: int, img_size: int | None = None,
                  **kwargs) -> LoadedModel:
    """:func:`random_timm` as the registry's ``registry_name`` (``random_init=True``, on the CPU).

    Args:
        img_size: build it for ``img_size`` px and feed it ImageNet-normalised views of that size
            (``DataConfig(input_size=img_size)``); None: its own size and timm's data config.
        kwargs: more of timm's options (``depth=3``, ``num_classes=0``).
    """
    if img_size is None:
        module = random_timm(timm_name, seed, **kwargs)
        data = timm_data_config(module)
    else:
        module = random_timm(timm_name, seed, img_size=img_size, **kwargs)
        data = DataConfig(input_size=img_size)
    return LoadedModel(registry_name, get_spec(registry_name), module, data, torch.device("cpu"), random_init=True)
