"""Checkpoints: reading weight files safely, checking them, loading them strictly.

Every file is read with safetensors or ``torch.load(..., weights_only=True)`` (no
arbitrary unpickling) and loaded strictly: a missing or unexpected key, or a wrong
shape, raises :class:`~vitviz.errors.ModelUnavailable` naming it. Keys in a timm file
that name a *non-persistent* buffer the model computes itself (Swin's
``relative_position_index`` and ``attn_mask``, written by some exports) are accepted
only when they equal the computed values.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from torch import nn

from ..errors import ModelUnavailable
from .build import create_timm, parameters_on_meta
from .mae import MAEConfig, MaskedAutoencoderViT
from .own_file import export_fp16


def check_keys(expected: set[str], found: set[str], what: str, hint: str = "") -> None:
    """Raise ``ModelUnavailable`` naming missing and unexpected keys, if any."""
    missing = sorted(expected - found)
    extra = sorted(found - expected)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {len(missing)} keys ({', '.join(missing[:8])}{', ...' if len(missing) > 8 else ''})")
        if extra:
            parts.append(f"unexpected {len(extra)} keys ({', '.join(extra[:8])}{', ...' if len(extra) > 8 else ''})")
        raise ModelUnavailable(f"{what} does not match the architecture: " + "; ".join(parts) + hint)


def export_mae(model: MaskedAutoencoderViT, path: Path, extra: dict[str, str] | None = None) -> None:
    """Write an MAE's weights as fp16 safetensors with its config in the metadata (atomic; :func:`export_fp16`)."""
    export_fp16(model, path, "vitviz-mae", extra)


def read_metadata(path: Path) -> dict[str, str]:
    """The metadata of a safetensors file (its header only; no tensor is read).

    Raises:
        ModelUnavailable: the file cannot be read as safetensors.
    """
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as fh:
            return fh.metadata() or {}
    except (SafetensorError, OSError, ValueError) as exc:
        raise ModelUnavailable(f"cannot read weights file {Path(path).name}: {exc}") from None


def read_mae_file(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """Read a vitviz MAE safetensors file: ``(state_dict, metadata)``."""
    meta = read_metadata(path)
    try:
        return load_file(str(path)), meta
    except (SafetensorError, OSError, ValueError) as exc:
        raise ModelUnavailable(f"cannot read weights file {Path(path).name}: {exc}") from None


def _tensor_dict(obj: Any, what: str) -> dict[str, torch.Tensor]:
    """Check that ``obj`` is a flat ``{str: Tensor}`` dict; name the first entry that is not."""
    if not isinstance(obj, dict):
        raise ModelUnavailable(f"{what} holds a {type(obj).__name__}, not a dict of tensors")
    for key, value in obj.items():
        if not isinstance(key, str) or not isinstance(value, torch.Tensor):
            raise ModelUnavailable(f"{what}: entry {key!r} is a {type(value).__name__}, not a tensor")
    return obj


def read_state_dict(path: Path, what: str | None = None) -> dict[str, torch.Tensor]:
    """Read a checkpoint file safely: a ``{name: tensor}`` dict on CPU.

    ``.safetensors`` files are read with safetensors (and copied out of the memory
    map); anything else (``.pth``, ``.bin``) with ``torch.load(..., weights_only=True)``,
    which refuses any pickled object that is not a tensor or a plain container. An official MAE checkpoint's
    ``{"model": state_dict}`` wrapper is unwrapped.

    Raises:
        ModelUnavailable: unreadable file, a pickle holding other objects, or
        entries that are not tensors.
    """
    path = Path(path)
    what = what or f"weights file {path}"
    if path.suffix == ".safetensors":
        try:
            mapped = load_file(str(path))
            # load_file's tensors are views of the memory-mapped file; copy them so that a
            # model never depends on a file that may be rewritten while it runs.
            return _tensor_dict({k: v.clone() for k, v in mapped.items()}, what)
        except (SafetensorError, OSError, ValueError) as exc:
            raise ModelUnavailable(f"cannot read {what}: {exc}") from None
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelUnavailable(
            f"refused to read {what}: it holds pickled objects that are not plain tensors, and vitviz never "
            f"unpickles arbitrary objects ({first})") from None
    except (OSError, RuntimeError, EOFError, ValueError) as exc:
        raise ModelUnavailable(f"cannot read {what}: {type(exc).__name__}: {exc}") from None
    if isinstance(obj, dict) and isinstance(obj.get("model"), dict):
        obj = obj["model"]
    return _tensor_dict(obj, what)


def _encoder_only_hint(missing: set[str]) -> str:
    if missing and all(k.startswith(("decoder", "mask_token")) for k in missing):
        return (". It has no decoder: mae_pretrain_vit_*.pth are encoder-only; reconstruction needs "
                "mae_visualize_vit_*.pth (or mae_pretrain_vit_*_full.pth)")
    return ""


def load_strict(module: nn.Module, state_dict: Mapping[str, torch.Tensor], what: str, hint: str = "") -> nn.Module:
    """Load ``state_dict`` into ``module`` strictly: every key, every shape, or ``ModelUnavailable``.

    Tensors are converted to float32. Returns ``module``.

    Raises:
        ModelUnavailable: naming missing or unexpected keys, or a wrong shape.
    """
    expected = module.state_dict()
    check_keys(set(expected), set(state_dict), what, hint)
    for k, v in state_dict.items():
        if tuple(v.shape) != tuple(expected[k].shape):
            raise ModelUnavailable(f"{what}: {k} has shape {tuple(v.shape)}, expected {tuple(expected[k].shape)}")
    module.load_state_dict({k: v.float() for k, v in state_dict.items()}, strict=True)
    return module


def build_strict(build: Callable[[], nn.Module], state_dict: Mapping[str, torch.Tensor], what: str,
                 hint: str = "", computed: bool = False) -> nn.Module:
    """``load_strict(build(), state_dict, ...)`` without drawing the random weights the checkpoint replaces.

    ``build`` runs under :func:`~vitviz.models.build.parameters_on_meta`; the checkpoint's tensors (cast to each
    entry's dtype) become the parameters and persistent buffers (``assign=True``), and computed buffers that
    were made from a parameter's device are computed again (timm's ``init_non_persistent_buffers``). Where a
    module cannot be built or completed that way, it is built and loaded as usual: same result, slower.

    Args:
        computed: accept keys naming a *non-persistent* buffer when they equal the value the module computes.

    Raises:
        ModelUnavailable: as :func:`load_strict`; or a non-persistent buffer's key whose value differs.
    """
    try:
        with parameters_on_meta():
            module = build()
    except Exception:  # noqa: BLE001 - an __init__ that reads a parameter's values: the usual way below
        module = None
    built = None if module is not None else build()  # the usual build, made once where the meta one failed
    sd, extra = dict(state_dict), {}
    if computed:
        ref = module if module is not None else built
        keep = set(ref.state_dict())
        extra = {k: sd.pop(k) for k in [k for k, _ in ref.named_buffers() if k in sd and k not in keep]}
    if module is not None:
        expected = module.state_dict()
        check_keys(set(expected), set(sd), what, hint)
        for k, v in sd.items():
            if tuple(v.shape) != tuple(expected[k].shape):
                raise ModelUnavailable(f"{what}: {k} has shape {tuple(v.shape)}, expected {tuple(expected[k].shape)}")
        module.load_state_dict({k: v.to(expected[k].dtype) for k, v in sd.items()}, strict=True, assign=True)
        for sub in module.modules():
            if any(b.is_meta for b in sub.buffers(recurse=False)) and hasattr(sub, "init_non_persistent_buffers"):
                sub.init_non_persistent_buffers()
        if any(t.is_meta for t in (*module.parameters(), *module.buffers())):
            module = None
    if module is None:
        module = load_strict(built if built is not None else build(), sd, what, hint)
    buffers = dict(module.named_buffers())
    for key, value in extra.items():
        if value.shape != buffers[key].shape or not torch.equal(value.to(buffers[key].dtype), buffers[key]):
            raise ModelUnavailable(f"{what}: {key} differs from the value the model computes")
    return module


def build_mae_strict(config: MAEConfig, state_dict: dict[str, torch.Tensor], what: str) -> MaskedAutoencoderViT:
    """Build an MAE and load ``state_dict`` strictly (every key, every shape).

    The module is built on the ``meta`` device and takes the checkpoint's tensors
    (as float32) as its parameters, so no random initialisation runs and no second
    copy of the weights is made.

    Raises:
        ModelUnavailable: naming missing or unexpected keys, or a wrong shape.
    """
    with torch.device("meta"):
        model = MaskedAutoencoderViT(config)
    expected = model.state_dict()
    check_keys(set(expected), set(state_dict), what, _encoder_only_hint(set(expected) - set(state_dict)))
    for k, v in state_dict.items():
        if tuple(v.shape) != tuple(expected[k].shape):
            raise ModelUnavailable(f"{what}: {k} has shape {tuple(v.shape)}, expected {tuple(expected[k].shape)}")
    model.load_state_dict({k: v.float() for k, v in state_dict.items()}, strict=True, assign=True)
    return model


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
    return build_strict(lambda: create_timm(timm_name), state_dict, what, computed=True)


def _hf_config_expectations(c: MAEConfig) -> dict[str, object]:
    """Hugging Face ViTMAE config fields implied by ``c``.

    ``layer_norm_eps`` and ``norm_pix_loss`` are not checked: see :mod:`vitviz.models.convert`.
    """
    return {
        "hidden_size": c.embed_dim,
        "num_hidden_layers": c.depth,
        "num_attention_heads": c.num_heads,
        "intermediate_size": int(c.embed_dim * c.mlp_ratio),
        "patch_size": c.patch_size,
        "image_size": c.img_size,
        "num_channels": c.in_chans,
        "decoder_hidden_size": c.decoder_embed_dim,
        "decoder_num_hidden_layers": c.decoder_depth,
        "decoder_num_attention_heads": c.decoder_num_heads,
        "decoder_intermediate_size": int(c.decoder_embed_dim * c.mlp_ratio),
        "qkv_bias": True,
    }


def check_hf_config(path: Path, config: MAEConfig) -> None:
    """Check a Hugging Face ``config.json`` against the architecture (head counts are not in the shapes).

    Raises:
        ModelUnavailable: naming every field that differs.
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ModelUnavailable(f"cannot read {path}: {exc}") from None
    wrong = [f"{k}={data[k]!r} (expected {v!r})" for k, v in _hf_config_expectations(config).items()
             if k in data and data[k] != v]
    if wrong:
        raise ModelUnavailable(f"{path} describes another architecture: {', '.join(wrong)}")


def torch_hub_checkpoints() -> Path:
    """torch hub's checkpoint cache (``$TORCH_HOME/hub/checkpoints``), where downloaded and converted
    weights are kept."""
    return Path(torch.hub.get_dir()) / "checkpoints"


#: Module -> sha256 of its state dict (computed once per module; dropped with the module).
_DIGESTS: weakref.WeakKeyDictionary[nn.Module, str] = weakref.WeakKeyDictionary()
_DIGEST_LOCK = threading.Lock()


def weights_digest(module: nn.Module) -> str:
    """sha256 over every tensor of ``module``'s state dict: names, dtypes, shapes and bytes (cached per module).

    About 0.1 s for dinov2-small's 22 M parameters, once per module: the loader computes it for
    ``dinov2-small`` (:mod:`vitviz.features.shipped` checks its shipped example tokens against it).
    A module whose weights are changed in place after that keeps its first digest.
    """
    with _DIGEST_LOCK:
        known = _DIGESTS.get(module)
        if known is not None:
            return known
        h = hashlib.sha256()
        for name, t in sorted(module.state_dict().items()):
            if not isinstance(t, torch.Tensor):  # int8 packed parameters: named, not hashed
                h.update(f"{name}|{type(t).__name__}|".encode())
                continue
            t = t.detach().cpu().contiguous()
            h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
            if t.numel():
                h.update(memoryview(t.reshape(-1).view(torch.uint8).numpy()))
        _DIGESTS[module] = digest = h.hexdigest()
        return digest
