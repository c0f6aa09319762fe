"""Loading models: strict, safe (no unpickling), cached and thread-safe.

A :class:`LoadedModel` bundles the torch module (in eval mode, on its device) with
its preprocessing config. Loads go through a small LRU cache guarded by a lock:
concurrent requests for one model load it once; at most ``VITVIZ_MAX_MODELS``
models stay in memory.

Where weights come from, in order (the first that exists wins):

1. the weights folder named by ``VITVIZ_WEIGHTS_DIR`` (the CLI's ``--weights-dir``),
   holding files under their upstream names: ``mae_visualize_vit_base.pth``, a
   Hugging Face snapshot folder ``vit-mae-base/`` (``model.safetensors`` or
   ``pytorch_model.bin``, optionally ``config.json``), or a timm
   ``model.safetensors`` in a folder named after the timm model;
2. the download caches: torch hub's ``checkpoints/`` and the Hugging Face hub cache;
3. unless offline (``HF_HUB_OFFLINE=1``), a download at first use into those caches.

Every checkpoint is read with safetensors or ``torch.load(..., weights_only=True)``
and loaded strictly: a missing or unexpected key, or a wrong shape, raises
:class:`~vitviz.errors.ModelUnavailable` naming it.
"""

from __future__ import annotations

import json
import os
import pickle
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from ..errors import ModelUnavailable
from ..images import DataConfig
from ..seeding import isolated_seed
from .kernels import kernel_mode, optimize_for_inference
from .mae import MAEConfig, MaskedAutoencoderViT
from .registry import (ASSETS, EMBEDDED, HF_VITMAE, MAE_OFFICIAL, TIMM_HF, ModelSpec, WeightSource, get_spec,
                       model_names)

#: Environment variable naming the local weights folder.
WEIGHTS_DIR_ENV = "VITVIZ_WEIGHTS_DIR"
#: Environment variable capping the number of models kept in memory.
MAX_MODELS_ENV = "VITVIZ_MAX_MODELS"


def _max_models() -> int:
    try:
        return max(1, int(os.environ.get(MAX_MODELS_ENV, "3")))
    except ValueError:
        return 3


MAX_MODELS = _max_models()


@dataclass(frozen=True)
class ModelInfo:
    """A registry entry with its availability on this machine.

    ``reason`` says why an unavailable model cannot be loaded and where to put its
    file; for an available one it is a note: ``""`` (embedded), ``"weights on disk:
    PATH"``, or ``"will download N MB at first use from HOST"``.
    """

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
        module: the torch module, eval mode, on ``device``: a
            :class:`~vitviz.models.mae.MaskedAutoencoderViT` for MAE models, a timm
            model for the others.
        data_config: input size and normalisation.
        device: where the module lives.
        norm_pix: True if predictions are per-patch normalised pixels.
        random_init: True when the module holds *random* weights (the architecture
            only, built by ``load_model(..., random_init=True)``): its maps show the
            architecture, not anything learned.
        kernels: how the linear layers run (:func:`vitviz.models.kernels.kernel_mode`):
            ``onednn`` (packed fp32, the CPU default), ``int8`` (opt-in) or ``eager``.
    """

    name: str
    spec: ModelSpec
    module: nn.Module
    data_config: DataConfig
    device: torch.device
    norm_pix: bool = False
    random_init: bool = False
    kernels: str = "eager"

    @property
    def family(self) -> str:
        """The model family (``mae``, ``vit``, ...)."""
        return self.spec.family


@dataclass(frozen=True)
class WeightFile:
    """A weight file found on disk (or just downloaded).

    Attributes:
        source: the registry source it belongs to.
        path: the weight file.
        config_path: the Hugging Face ``config.json`` beside it, if any.
        origin: ``weights dir``, ``torch hub cache``, ``Hugging Face cache``,
            ``embedded`` or ``download``.
    """

    source: WeightSource
    path: Path
    config_path: Path | None
    origin: str


# ----------------------------------------------------------------------------- strict loading


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


def default_device() -> torch.device:
    """CUDA when present, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


# ----------------------------------------------------------------------------- where weights live


def weights_dir() -> Path | None:
    """The local weights folder (``VITVIZ_WEIGHTS_DIR``), or None when unset."""
    value = os.environ.get(WEIGHTS_DIR_ENV, "").strip()
    return Path(value).expanduser() if value else None


def is_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set: no download is attempted (the network is never probed)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def torch_hub_checkpoints() -> Path:
    """torch hub's checkpoint cache (``$TORCH_HOME/hub/checkpoints``)."""
    return Path(torch.hub.get_dir()) / "checkpoints"


def _asset_path(spec: ModelSpec) -> Path:
    return ASSETS / "models" / spec.files[0]


def _hf_cached(repo_id: str, filename: str) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    try:
        hit = try_to_load_from_cache(repo_id, filename)
    except Exception:  # noqa: BLE001 - a broken cache must not break listing
        return None
    return Path(hit) if isinstance(hit, str) and os.path.isfile(hit) else None


def _in_weights_dir(src: WeightSource, wdir: Path) -> WeightFile | None:
    base = wdir / src.folder if src.folder else wdir
    for fname in src.filenames:
        path = base / fname
        if path.is_file():
            config = base / "config.json" if src.kind == HF_VITMAE else None
            return WeightFile(src, path, config if config is not None and config.is_file() else None, "weights dir")
    return None


def _in_caches(src: WeightSource) -> WeightFile | None:
    if src.kind == MAE_OFFICIAL:
        path = torch_hub_checkpoints() / src.filenames[0]
        return WeightFile(src, path, None, "torch hub cache") if path.is_file() else None
    if src.kind in (HF_VITMAE, TIMM_HF) and src.repo_id:
        for fname in src.filenames:
            path = _hf_cached(src.repo_id, fname)
            if path is not None:
                config = path.parent / "config.json" if src.kind == HF_VITMAE else None
                return WeightFile(src, path, config if config is not None and config.is_file() else None,
                                  "Hugging Face cache")
    return None


def find_weights(spec: ModelSpec) -> WeightFile | None:
    """The weight file for ``spec`` on this machine, without any network access.

    The weights folder is searched first (for every source), then the caches.
    """
    for src in spec.sources:
        if src.kind == EMBEDDED:
            path = ASSETS / "models" / src.filenames[0]
            if path.is_file():
                return WeightFile(src, path, None, "embedded")
    wdir = weights_dir()
    if wdir is not None and wdir.is_dir():
        for src in spec.sources:
            if src.kind != EMBEDDED and (hit := _in_weights_dir(src, wdir)) is not None:
                return hit
    for src in spec.sources:
        if (hit := _in_caches(src)) is not None:
            return hit
    return None


def where_to_put(spec: ModelSpec) -> str:
    """One sentence saying which file to place where, for error messages."""
    files = " or ".join(s.describe() for s in spec.sources if s.kind != EMBEDDED)
    wdir = weights_dir()
    folder = f"the weights folder {wdir}" if wdir is not None else (
        f"a folder named by {WEIGHTS_DIR_ENV} (or the CLI's --weights-dir)")
    return f"put {files} in {folder}"


def _download_host(spec: ModelSpec) -> str:
    src = next(s for s in spec.sources if s.kind != EMBEDDED)
    if src.url:
        return src.url.split("/")[2]
    return f"huggingface.co/{src.repo_id}"


def _availability(spec: ModelSpec) -> tuple[bool, str]:
    if any(s.kind == EMBEDDED for s in spec.sources):
        path = _asset_path(spec)
        if path.is_file():
            return True, ""
        return False, f"embedded weights {path.name} are missing from assets/models (run python -m vitviz.training.train_mae)"
    hit = find_weights(spec)
    if hit is not None:
        return True, f"weights on disk: {hit.path}"
    if is_offline():
        return False, f"not downloaded; offline (HF_HUB_OFFLINE=1): {where_to_put(spec)}"
    return True, f"will download {spec.download_mb} MB at first use from {_download_host(spec)}"


def available_models() -> list[ModelInfo]:
    """Every registered model with whether it can be loaded here and why not.

    Never downloads, never probes the network and never raises for an unavailable
    model: it looks in the weights folder and the download caches, and assumes the
    network is reachable unless ``HF_HUB_OFFLINE`` is set.
    """
    out = []
    for name in model_names():
        spec = get_spec(name)
        try:
            ok, reason = _availability(spec)
        except Exception as exc:  # noqa: BLE001 - listing must survive any local oddity
            ok, reason = False, f"cannot check the weights: {type(exc).__name__}: {exc}"
        out.append(ModelInfo(spec.name, spec.family, spec.architecture, spec.source, spec.licence,
                             spec.input_size, spec.description, ok, reason))
    return out


# ----------------------------------------------------------------------------- downloads (first use only)


def _download(spec: ModelSpec) -> WeightFile:
    """Download ``spec``'s weights into the caches, trying its sources in order."""
    errors: list[str] = []
    for src in spec.sources:
        try:
            if src.kind == MAE_OFFICIAL and src.url:
                dst = torch_hub_checkpoints() / src.filenames[0]
                dst.parent.mkdir(parents=True, exist_ok=True)
                torch.hub.download_url_to_file(src.url, str(dst), progress=True)
                return WeightFile(src, dst, None, "download")
            if src.kind in (HF_VITMAE, TIMM_HF) and src.repo_id:
                return _hf_download(src)
        except Exception as exc:  # noqa: BLE001 - network stacks raise many types
            errors.append(f"{src.describe()}: {type(exc).__name__}: {exc}")
    raise ModelUnavailable(f"{spec.name} could not be downloaded ({'; '.join(errors) or 'no source'}); "
                           f"{where_to_put(spec)}")


def _hf_download(src: WeightSource) -> WeightFile:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    assert src.repo_id is not None
    last: Exception | None = None
    for fname in src.filenames:
        try:
            path = Path(hf_hub_download(repo_id=src.repo_id, filename=fname))
        except EntryNotFoundError as exc:
            last = exc
            continue
        config = None
        if src.kind == HF_VITMAE:
            try:
                config = Path(hf_hub_download(repo_id=src.repo_id, filename="config.json"))
            except Exception:  # noqa: BLE001 - the config is optional (shapes are checked anyway)
                config = None
        return WeightFile(src, path, config, "download")
    raise last if last is not None else ModelUnavailable(f"no weight file in {src.repo_id}")


# ----------------------------------------------------------------------------- building modules


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


def _build_mae(spec: ModelSpec, hit: WeightFile) -> tuple[nn.Module, DataConfig, bool]:
    from .convert import hf_to_official, official_to_hf

    what = f"{spec.name} weights {hit.path}"
    if hit.source.kind == EMBEDDED:
        sd, meta = read_mae_file(hit.path)
        config = spec.mae_config
        if "config" in meta:
            config = MAEConfig(**json.loads(meta["config"]))
    else:
        config = spec.mae_config
        assert config is not None
        if hit.config_path is not None:
            check_hf_config(hit.config_path, config)
        sd = read_state_dict(hit.path, what)
        if hit.source.kind == HF_VITMAE:
            with torch.device("meta"):
                reference = MaskedAutoencoderViT(config).state_dict()
            check_keys(set(official_to_hf(reference)), set(sd), f"{what} (Hugging Face ViTMAE format)")
            sd = hf_to_official(sd, what)
    assert config is not None
    norm_pix = bool(config.norm_pix_loss or spec.norm_pix or hit.path.name.endswith("_full.pth"))
    module = build_mae_strict(config, sd, what)
    return module, DataConfig(input_size=config.img_size), norm_pix


def _build_timm(spec: ModelSpec, hit: WeightFile) -> tuple[nn.Module, DataConfig, bool]:
    from .timm_models import load_timm_strict, timm_data_config

    assert spec.timm_name is not None
    what = f"{spec.name} weights {hit.path}"
    module = load_timm_strict(spec.timm_name, read_state_dict(hit.path, what), what)
    return module, timm_data_config(module), False


#: Seed of the weights built by ``load_model(..., random_init=True)``.
RANDOM_INIT_SEED = 0


def _build_random(spec: ModelSpec) -> tuple[nn.Module, DataConfig, bool]:
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
        else:
            from .timm_models import create_timm, timm_data_config

            assert spec.timm_name is not None
            module = create_timm(spec.timm_name)
            data_config = timm_data_config(module)
    norm_pix = bool(spec.mae_config is not None and (spec.mae_config.norm_pix_loss or spec.norm_pix))
    return module, data_config, norm_pix


def _load_random(spec: ModelSpec, device: torch.device, kernels: str) -> LoadedModel:
    """:func:`_build_random` as a :class:`LoadedModel` (eval mode, gradients off, ``random_init=True``)."""
    with torch.no_grad():
        module, data_config, norm_pix = _build_random(spec)
        module = optimize_for_inference(module.eval().requires_grad_(False).to(device), kernels)
    return LoadedModel(spec.name, spec, module, data_config, device, norm_pix=norm_pix, random_init=True,
                       kernels=kernels)


def _load_uncached(spec: ModelSpec, device: torch.device, kernels: str) -> LoadedModel:
    ok, reason = _availability(spec)
    if not ok:
        raise ModelUnavailable(f"{spec.name} is unavailable: {reason}")
    hit = find_weights(spec)
    if hit is None:
        hit = _download(spec)
    with torch.no_grad():
        if spec.family == "mae":
            module, data_config, norm_pix = _build_mae(spec, hit)
        else:
            module, data_config, norm_pix = _build_timm(spec, hit)
        module = optimize_for_inference(module.eval().requires_grad_(False).to(device), kernels)
    return LoadedModel(spec.name, spec, module, data_config, device, norm_pix=norm_pix, kernels=kernels)


class _ModelCache:
    """LRU of loaded models; one lock per key so a model loads once under concurrency."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._models: OrderedDict[tuple[str, str, str, bool, str], LoadedModel] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[tuple[str, str, str, bool, str], threading.Lock] = {}
        self.loads = 0

    def get(self, spec: ModelSpec, device: torch.device, random_init: bool = False,
            kernels: str | None = None) -> LoadedModel:
        # The weights folder and kernel mode are part of the key: changing either must not
        # serve a model loaded under the other setting.
        kernels = kernel_mode(device, kernels)
        key = (spec.name, str(device), "" if random_init else str(weights_dir() or ""), random_init, kernels)
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
            model = _load_random(spec, device, kernels) if random_init else _load_uncached(spec, device, kernels)
            with self._lock:
                self.loads += 1
                self._models[key] = model
                while len(self._models) > self.capacity:
                    self._models.popitem(last=False)
            return model

    def __len__(self) -> int:
        with self._lock:
            return len(self._models)

    def clear(self) -> None:
        with self._lock:
            self._models.clear()


CACHE = _ModelCache(MAX_MODELS)


def load_model(name: str, device: str | torch.device | None = None, random_init: bool = False,
               kernels: str | None = None) -> LoadedModel:
    """Load a registered model (cached).

    Looks in the weights folder, then the caches, then (unless offline) downloads
    at first use; loads strictly and safely; the module is in eval mode with
    gradients off.

    Args:
        name: a registry name (see :func:`available_models`).
        device: ``None`` picks CUDA when present, else CPU.
        random_init: build the architecture with random weights instead (seeded,
            offline, never touches a weight file); the result has
            ``random_init=True`` so that views can say their maps show the
            architecture, not learned attention. Cached separately from the
            pretrained model.
        kernels: ``onednn``, ``eager`` or ``int8`` (see :mod:`vitviz.models.kernels`);
            ``None`` follows ``VITVIZ_PRECISION`` and ``VITVIZ_ONEDNN`` (oneDNN-packed fp32
            on CPU by default). Each mode is cached separately.

    Raises:
        ValueError: unknown name (the message lists the valid ones), or a kernel mode
            this device cannot run.
        ModelUnavailable: weights cannot be had here, with the reason and where to
            put the file; or the file does not match the architecture (naming the keys).
    """
    spec = get_spec(name)
    dev = default_device() if device is None else torch.device(device)
    return CACHE.get(spec, dev, bool(random_init), kernels)
