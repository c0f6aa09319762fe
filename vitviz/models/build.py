"""timm models (ViT, DeiT, DINO, Swin): timm's architecture, weights loaded strictly by vitviz.

The module is built with ``timm.create_model(name, pretrained=False)`` (no network)
and the weights come from a ``model.safetensors`` file in timm's own format (the
files of the ``timm/<name>`` repositories on the Hugging Face hub), loaded with
every key and shape checked. Keys in the file that name a *non-persistent* buffer
the model computes itself (Swin's ``relative_position_index`` and ``attn_mask``,
written by some exports) are accepted only when they equal the computed values.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from ..errors import ModelUnavailable
from ..images import DataConfig


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
    """The preprocessing of a timm model as a :class:`~vitviz.images.DataConfig`.

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


def load_timm_strict(timm_name: str, state_dict: Mapping[str, torch.Tensor], what: str) -> nn.Module:
    """Build ``timm_name`` and load ``state_dict`` into it strictly.

    Args:
        timm_name: the timm model name with its tag.
        state_dict: keys and shapes exactly as ``model.state_dict()``; keys of
            non-persistent buffers are allowed only when equal to the model's own.
        what: names the checkpoint in error messages.

    Returns:
        The model on CPU (train mode as timm creates it; the caller sets eval).

    Raises:
        ModelUnavailable: naming missing or unexpected keys, a wrong shape, or a
        non-persistent buffer that differs.
    """
    from .loading import check_keys  # loading imports this module lazily; no cycle at import

    model = create_timm(timm_name)
    expected = model.state_dict()
    buffers = dict(model.named_buffers())
    sd = dict(state_dict)
    for key in [k for k in sd if k not in expected and k in buffers]:
        value = sd.pop(key)
        if value.shape != buffers[key].shape or not torch.equal(value.to(buffers[key].dtype), buffers[key]):
            raise ModelUnavailable(f"{what}: {key} differs from the value the model computes")
    check_keys(set(expected), set(sd), what)
    for key, value in sd.items():
        if tuple(value.shape) != tuple(expected[key].shape):
            raise ModelUnavailable(f"{what}: {key} has shape {tuple(value.shape)}, expected {tuple(expected[key].shape)}")
    with torch.no_grad():
        model.load_state_dict(sd, strict=True)
    return model
