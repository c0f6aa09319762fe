"""Loading models: strict, safe (no unpickling), cached and thread-safe.

A :class:`LoadedModel` bundles the torch module (in eval mode, on its device) with
its preprocessing config. Loads go through a small LRU cache guarded by a lock:
concurrent requests for one model load it once; at most ``VITVIZ_MAX_MODELS``
models stay in memory.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from ..errors import ModelUnavailable
from ..images import DataConfig
from .mae import MAEConfig, MaskedAutoencoderViT
from .registry import ASSETS, ModelSpec, get_spec, model_names

MAX_MODELS = int(os.environ.get("VITVIZ_MAX_MODELS", "3"))


@dataclass(frozen=True)
class ModelInfo:
    """A registry entry with its availability on this machine."""

    name: str
    family: str
    architecture: str
    source: str
    licence: str
    input_size: int
    description: str
    available: bool
    reason: str


@dataclass
class LoadedModel:
    """A ready-to-run model.

    Attributes:
        name: registry name.
        spec: the registry entry.
        module: the torch module, eval mode, on ``device``.
        data_config: input size and normalisation.
        device: where the module lives.
        norm_pix: True if predictions are per-patch normalised pixels.
    """

    name: str
    spec: ModelSpec
    module: nn.Module
    data_config: DataConfig
    device: torch.device
    norm_pix: bool = False

    @property
    def family(self) -> str:
        """The model family (``mae``, ``vit``, ...)."""
        return self.spec.family


def check_keys(expected: set[str], found: set[str], what: str) -> None:
    """Raise ``ModelUnavailable`` naming missing and unexpected keys, if any."""
    missing = sorted(expected - found)
    extra = sorted(found - expected)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {len(missing)} keys ({', '.join(missing[:8])}{', ...' if len(missing) > 8 else ''})")
        if extra:
            parts.append(f"unexpected {len(extra)} keys ({', '.join(extra[:8])}{', ...' if len(extra) > 8 else ''})")
        raise ModelUnavailable(f"{what} does not match the architecture: " + "; ".join(parts))


def export_mae(model: MaskedAutoencoderViT, path: Path, extra: dict[str, str] | None = None) -> None:
    """Write an MAE's weights as fp16 safetensors with its config in the metadata."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sd = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()}
    meta = {"format": "vitviz-mae", "config": json.dumps(model.config.to_dict())}
    meta.update(extra or {})
    tmp = path.with_suffix(".tmp")
    save_file(sd, str(tmp), metadata=meta)
    os.replace(tmp, path)


def read_mae_file(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """Read a vitviz MAE safetensors file: ``(state_dict, metadata)``."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as fh:
            meta = fh.metadata() or {}
        return load_file(str(path)), meta
    except (SafetensorError, OSError, ValueError) as exc:
        raise ModelUnavailable(f"cannot read weights file {Path(path).name}: {exc}") from None


def build_mae_strict(config: MAEConfig, state_dict: dict[str, torch.Tensor], what: str) -> MaskedAutoencoderViT:
    """Build an MAE and load ``state_dict`` strictly (every key, every shape)."""
    model = MaskedAutoencoderViT(config)
    expected = model.state_dict()
    check_keys(set(expected), set(state_dict), what)
    for k, v in state_dict.items():
        if tuple(v.shape) != tuple(expected[k].shape):
            raise ModelUnavailable(f"{what}: {k} has shape {tuple(v.shape)}, expected {tuple(expected[k].shape)}")
    model.load_state_dict({k: v.float() for k, v in state_dict.items()}, strict=True)
    return model


def default_device() -> torch.device:
    """CUDA when present, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _asset_path(spec: ModelSpec) -> Path:
    return ASSETS / "models" / spec.files[0]


def _availability(spec: ModelSpec) -> tuple[bool, str]:
    path = _asset_path(spec)
    if path.is_file():
        return True, ""
    return False, f"embedded weights {path.name} are missing from assets/models (run python -m vitviz.train)"


def available_models() -> list[ModelInfo]:
    """Every registered model with whether it can be loaded here and why not.

    Never downloads and never raises for an unavailable model.
    """
    out = []
    for name in model_names():
        spec = get_spec(name)
        ok, reason = _availability(spec)
        out.append(ModelInfo(spec.name, spec.family, spec.architecture, spec.source, spec.licence,
                             spec.input_size, spec.description, ok, reason))
    return out


def _load_uncached(spec: ModelSpec, device: torch.device) -> LoadedModel:
    ok, reason = _availability(spec)
    if not ok:
        raise ModelUnavailable(f"{spec.name} is unavailable: {reason}")
    sd, meta = read_mae_file(_asset_path(spec))
    config = spec.mae_config
    if "config" in meta:
        config = MAEConfig(**json.loads(meta["config"]))
    assert config is not None
    module = build_mae_strict(config, sd, f"weights file {_asset_path(spec).name}")
    module.eval().requires_grad_(False).to(device)
    return LoadedModel(spec.name, spec, module, DataConfig(input_size=config.img_size), device,
                       norm_pix=config.norm_pix_loss)


class _ModelCache:
    """LRU of loaded models; one lock per key so a model loads once under concurrency."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._models: OrderedDict[tuple[str, str], LoadedModel] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[tuple[str, str], threading.Lock] = {}
        self.loads = 0

    def get(self, spec: ModelSpec, device: torch.device) -> LoadedModel:
        key = (spec.name, str(device))
        with self._lock:
            if key in self._models:
                self._models.move_to_end(key)
                return self._models[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._models:
                    self._models.move_to_end(key)
                    return self._models[key]
            model = _load_uncached(spec, device)
            with self._lock:
                self.loads += 1
                self._models[key] = model
                while len(self._models) > self.capacity:
                    self._models.popitem(last=False)
            return model

    def clear(self) -> None:
        with self._lock:
            self._models.clear()


CACHE = _ModelCache(MAX_MODELS)


def load_model(name: str, device: str | torch.device | None = None) -> LoadedModel:
    """Load a registered model (cached).

    Args:
        name: a registry name (see :func:`available_models`).
        device: ``None`` picks CUDA when present, else CPU.

    Raises:
        ValueError: unknown name (the message lists the valid ones).
        ModelUnavailable: weights cannot be had here, with the reason.
    """
    spec = get_spec(name)
    dev = default_device() if device is None else torch.device(device)
    return CACHE.get(spec, dev)
