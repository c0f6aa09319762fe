"""Checkpoint layouts of models people train themselves, read safely into one naming.

Every file is read with safetensors or ``torch.load(..., weights_only=True)``; the only
class allowed beyond tensors and plain containers is ``argparse.Namespace`` (the
``args`` that facebookresearch/mae, DeiT and DINO save beside the weights), allow-listed
for that one call with ``torch.serialization.safe_globals``. Nothing is ever unpickled
otherwise.

========================================  ===============================================================
layout                                    what is read
========================================  ===============================================================
facebookresearch/mae ``checkpoint-N.pth``  ``["model"]``; ``args.model`` names the heads, ``args.norm_pix_loss``
                                          the targets (pretrain or visualize, decoder or not)
timm / DeiT                               a state dict, or ``["model"]`` / ``["state_dict"]`` /
                                          ``["model_ema"]``; ``module.`` prefixes removed
DINO                                      ``["teacher"]`` (what DINO evaluates; else ``["student"]``):
                                          ``module.`` / ``backbone.`` removed, the projection head
                                          (``head.*``) dropped and said so
vitviz safetensors                        an exported MAE with its config in the metadata
Hugging Face snapshot folder              ``config.json`` + ``model.safetensors`` / ``pytorch_model.bin``:
                                          ViTMAE, ViT, DeiT (renamed by :mod:`vitviz.models.convert`),
                                          BEiT (``BeitForMaskedImageModeling``), Dinov2, Swin
                                          (:mod:`vitviz.models.swin_hf`)
========================================  ===============================================================
"""

from __future__ import annotations

import argparse
import json
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..errors import ModelUnavailable
from .checkpoint import _tensor_dict, read_mae_file, read_state_dict
from .convert import hf_to_official
from .infer import found
from .swin_hf import SwinArch, hf_swin_to_timm

#: Keys of a training checkpoint that may hold the model's weights, in order of preference.
WEIGHT_KEYS = ("model", "state_dict", "teacher", "model_ema", "student", "module", "net")
#: Hugging Face ``model_type`` values read as ViT-style encoders.
HF_VIT_TYPES = ("vit", "deit", "vit_mae")
#: Weight files of a Hugging Face snapshot, in order of preference.
HF_FILES = ("model.safetensors", "pytorch_model.bin")


@dataclass
class Checkpoint:
    """A checkpoint's tensors in timm / facebookresearch/mae names, with what its layout told.

    Attributes:
        state_dict: ``{name: tensor}`` on CPU.
        layout: the layout recognised, in words (``facebookresearch/mae checkpoint (epoch 399)``).
        heads, decoder_heads: head counts the file's config / arguments name (None: not named).
        heads_from: where they were read (``args.model = mae_vit_base_patch16``).
        norm_pix: the model was trained on per-patch normalised pixels (None: not said).
        mean, std: the preprocessing the file names (None: not said).
        dropped: tensors left out, with why.
        beit_config: a Hugging Face BEiT config (``config.json``), for BEiT snapshots.
        mae_config: an MAE config stored with the weights (vitviz's own files).
        swin: a Hugging Face Swin snapshot's architecture (its tensors already in timm's names).
    """

    state_dict: dict[str, torch.Tensor]
    layout: str
    heads: int | None = None
    decoder_heads: int | None = None
    heads_from: str = ""
    norm_pix: bool | None = None
    mean: tuple[float, float, float] | None = None
    std: tuple[float, float, float] | None = None
    dropped: list[str] = field(default_factory=list)
    beit_config: dict | None = None
    mae_config: dict | None = None
    swin: SwinArch | None = None


def _load_pickle(path: Path, what: str) -> Any:
    """``torch.load(weights_only=True)`` with ``argparse.Namespace`` allow-listed for this call only."""
    try:
        with torch.serialization.safe_globals([argparse.Namespace]):
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelUnavailable(f"refused to read {what}: it holds pickled objects other than tensors, plain "
                               f"containers and argparse.Namespace, and vitviz never unpickles arbitrary objects "
                               f"({first})") from None
    except (OSError, RuntimeError, EOFError, ValueError, IndexError, KeyError, TypeError) as exc:  # a foreign file trips the unpickler anywhere
        raise ModelUnavailable(f"cannot read {what} (truncated, or not a PyTorch file?): "
                               f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None


def _describe(obj: Any) -> str:
    if isinstance(obj, dict):
        keys = list(obj)[:10]
        return f"a dict with keys {', '.join(map(repr, keys))}{', ...' if len(obj) > 10 else ''}"
    return f"a {type(obj).__name__}"


def _is_tensor_dict(obj: Any) -> bool:
    return isinstance(obj, dict) and bool(obj) and all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                                       for k, v in obj.items())


def _strip(sd: dict[str, torch.Tensor], prefix: str) -> tuple[dict[str, torch.Tensor], bool]:
    if sd and all(k.startswith(prefix) for k in sd):
        return {k[len(prefix):]: v for k, v in sd.items()}, True
    return sd, False


def _mae_heads(name: str) -> tuple[int, int] | None:
    """Encoder and decoder heads of a facebookresearch/mae ``models_mae`` name (the published configs)."""
    from .mae import MAE_BASE_CONFIG, MAE_HUGE_CONFIG, MAE_LARGE_CONFIG

    for size, c in (("base", MAE_BASE_CONFIG), ("large", MAE_LARGE_CONFIG), ("huge", MAE_HUGE_CONFIG)):
        if name.startswith(f"mae_vit_{size}_"):
            return c.num_heads, c.decoder_num_heads
    return None


#: DINO's own architecture names (facebookresearch/dino ``vision_transformer.py``) -> heads.
DINO_ARCH_HEADS = {"vit_tiny": 3, "vit_small": 6, "vit_base": 12}


def _timm_heads(name: str) -> int | None:
    """Heads of a timm model name (built on the meta device: no weights, no download), or None."""
    import timm

    try:
        with torch.device("meta"):
            model = timm.create_model(name, pretrained=False)
        return int(model.blocks[0].attn.num_heads)
    except Exception:  # noqa: BLE001 - an unknown or non-ViT name simply names no heads
        return None


def _from_args(ck: Checkpoint, args: Any) -> None:
    """Head counts and targets from a training run's ``args`` (Namespace or dict)."""
    a = vars(args) if isinstance(args, argparse.Namespace) else args if isinstance(args, dict) else {}
    if isinstance(a.get("norm_pix_loss"), bool):
        ck.norm_pix = a["norm_pix_loss"]
    for key in ("model", "arch"):
        name = a.get(key)
        if not isinstance(name, str):
            continue
        mae = _mae_heads(name)
        heads = mae[0] if mae else DINO_ARCH_HEADS.get(name) or _timm_heads(name)
        if heads is not None:
            ck.heads, ck.heads_from = heads, f"args.{key} = {name}"
            ck.decoder_heads = mae[1] if mae else None
            return


def read_training_file(path: Path) -> Checkpoint:
    """A ``.pth`` / ``.bin`` / ``.safetensors`` file of a timm, DeiT, DINO or facebookresearch/mae run."""
    what = f"{path}"
    if path.suffix == ".safetensors":
        sd, meta = read_mae_file(path)
        ck = Checkpoint({k: v.clone() for k, v in sd.items()}, "safetensors state dict")
        if meta.get("format") == "vitviz-mae" and "config" in meta:
            ck.mae_config, ck.layout = json.loads(meta["config"]), "vitviz MAE export (config in its metadata)"
    else:
        obj = _load_pickle(path, what)
        if _is_tensor_dict(obj):
            ck = Checkpoint(dict(obj), "state dict")
        elif isinstance(obj, dict):
            key = next((k for k in WEIGHT_KEYS if _is_tensor_dict(obj.get(k))), None)
            if key is None:
                raise ModelUnavailable(f"{what} fits no layout vitviz knows: it holds {_describe(obj)}, and none of "
                                       f"{', '.join(WEIGHT_KEYS)} is a dict of tensors")
            epoch = f", epoch {obj['epoch']}" if isinstance(obj.get("epoch"), int) else ""
            others = [k for k in WEIGHT_KEYS if k != key and _is_tensor_dict(obj.get(k))]
            also = f"; also holds {', '.join(others)}, not used" if others else ""
            ck = Checkpoint(dict(obj[key]), f"training checkpoint, weights from [{key!r}]{epoch}{also}")
            _from_args(ck, obj.get("args"))
        else:
            raise ModelUnavailable(f"{what} fits no layout vitviz knows: it holds {_describe(obj)}")
    _tensor_dict(ck.state_dict, what)
    sd, _ = _strip(ck.state_dict, "module.")
    if any(k.startswith("backbone.") for k in sd):  # DINO's MultiCropWrapper: backbone + projection head
        heads = sorted(k for k in sd if k.startswith("head."))
        sd = {k.removeprefix("backbone."): v for k, v in sd.items() if not k.startswith("head.")}
        if heads:
            ck.dropped.append(f"DINO's projection head ({len(heads)} tensors: {', '.join(heads[:3])}"
                              f"{', ...' if len(heads) > 3 else ''}): vitviz shows the backbone")
        ck.layout += "; DINO MultiCropWrapper (backbone. prefix)"
    ck.state_dict = {k: v.float() if v.is_floating_point() else v for k, v in sd.items()}
    return ck


def _hf_rgb(folder: Path) -> tuple[tuple[float, float, float] | None, tuple[float, float, float] | None]:
    pre = folder / "preprocessor_config.json"
    try:
        data = json.loads(pre.read_text()) if pre.is_file() else {}
    except (OSError, ValueError):
        return None, None
    mean, std = data.get("image_mean"), data.get("image_std")
    ok = all(isinstance(x, list) and len(x) == 3 for x in (mean, std))
    return (tuple(map(float, mean)), tuple(map(float, std))) if ok else (None, None)  # type: ignore[return-value]


def _hf_vit_to_official(sd: dict[str, torch.Tensor], model_type: str, what: str) -> tuple[dict, list[str]]:
    """Hugging Face ViT / DeiT / ViTMAE names -> timm / official names, reusing ViTMAE's one key map.

    The encoder names of ``ViTModel``, ``DeiTModel`` and ``ViTMAEModel`` are the same under
    their prefix (``vit.`` / ``deit.``, or none in a bare model): they are read by
    :func:`vitviz.models.convert.hf_to_official`. Classifiers: ``classifier`` -> ``head``;
    DeiT's ``cls_classifier`` / ``distillation_classifier`` -> ``head`` / ``head_dist``;
    ``distillation_token`` -> ``dist_token``. A ``ViTModel`` pooler is dropped (unused by
    timm's read-out), and said so.
    """
    extra: dict[str, torch.Tensor] = {}
    dropped: list[str] = []
    renamed: dict[str, torch.Tensor] = {}
    heads = {"classifier.": "head.", "cls_classifier.": "head.", "distillation_classifier.": "head_dist."}
    for key, value in sd.items():
        if key.startswith(("deit.", "vit.")):
            body = key.split(".", 1)[1]
        else:
            body = key
        top = next((h for h in heads if key.startswith(h)), None)
        if top is not None:
            extra[heads[top] + key[len(top):]] = value
        elif body.startswith("pooler."):
            dropped.append(key)
        elif body == "embeddings.distillation_token":
            extra["dist_token"] = value
        elif body.startswith(("embeddings.", "encoder.", "layernorm.")):
            renamed["vit." + body] = value
        else:
            renamed[key] = value  # decoder.* (ViTMAE) or a key hf_to_official names as unexpected
    out = hf_to_official(renamed, what)
    out.update(extra)
    notes = [f"the pooler ({', '.join(sorted(dropped))}): timm reads the class token itself"] if dropped else []
    return out, notes


def read_hf_folder(folder: Path) -> Checkpoint:
    """A Hugging Face snapshot folder: ``config.json`` and a weight file.

    Raises:
        ModelUnavailable: no config or weights, or a ``model_type`` vitviz does not build (naming it).
    """
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise ModelUnavailable(f"cannot read {folder / 'config.json'}: {exc}") from None
    weights = next((folder / f for f in HF_FILES if (folder / f).is_file()), None)
    if weights is None:
        raise ModelUnavailable(f"{folder} has a config.json but none of {', '.join(HF_FILES)}")
    mtype = str(config.get("model_type", ""))
    archs = ", ".join(config.get("architectures") or []) or "no architectures listed"
    what = f"{weights}"
    sd = read_state_dict(weights, what)
    layout = f"Hugging Face {mtype or '?'} snapshot ({archs})"
    mean, std = _hf_rgb(folder)
    heads = config.get("num_attention_heads")
    if mtype in HF_VIT_TYPES:
        if int(config.get("num_channels", 3)) != 3:
            raise ModelUnavailable(f"{folder}: num_channels={config.get('num_channels')}; vitviz shows RGB models only")
        out, dropped = _hf_vit_to_official(sd, mtype, what)
        ck = Checkpoint(out, layout, heads=heads, decoder_heads=config.get("decoder_num_attention_heads"),
                        heads_from="config.json", mean=mean, std=std, dropped=dropped)
        if isinstance(config.get("norm_pix_loss"), bool):
            ck.norm_pix = config["norm_pix_loss"]
        return ck
    if mtype == "beit":
        return Checkpoint(sd, layout, heads=heads, heads_from="config.json", mean=mean, std=std, beit_config=config)
    if mtype == "dinov2":
        return _read_dinov2(sd, config, layout, what, mean, std)
    if mtype == "swin":
        head = sd.get("classifier.weight")
        arch = SwinArch.from_config(config, int(head.shape[0]) if head is not None else 0, str(folder))
        out, dropped = hf_swin_to_timm(sd, what)
        return Checkpoint(out, layout, heads_from="config.json", mean=mean, std=std, dropped=dropped, swin=arch)
    raise ModelUnavailable(f"{folder}: model_type {mtype!r} ({archs}) is not one vitviz builds from a snapshot "
                           f"(it reads {', '.join(HF_VIT_TYPES)}, dinov2, beit and swin); the file holds {found(sd)}")


def _read_dinov2(sd: dict[str, torch.Tensor], config: dict, layout: str, what: str, mean: Any, std: Any) -> Checkpoint:
    """A Hugging Face ``Dinov2Model`` snapshot, renamed by :mod:`vitviz.models.dinov2`'s one converter."""
    try:
        from .dinov2 import Dinov2Arch, hf_to_timm
    except ImportError:  # the Dinov2 converter is not in this build
        raise ModelUnavailable(f"{what}: Dinov2 snapshots need vitviz.models.dinov2, which this build lacks") from None
    d, p = int(config["hidden_size"]), int(config["patch_size"])
    prefix = "" if "embeddings.cls_token" in sd else "dinov2."
    sd = {k.removeprefix(prefix): v for k, v in sd.items()}
    grid = int(config.get("image_size", 518)) // p
    ratio = int(config.get("mlp_ratio", 4))
    arch = Dinov2Arch(embed_dim=d, depth=int(config["num_hidden_layers"]), num_heads=int(config["num_attention_heads"]),
                      patch_size=p, mlp_ratio=ratio, native_grid=grid)
    dropped = ["embeddings.mask_token (used only when training with masks)"] if "embeddings.mask_token" in sd else []
    return Checkpoint(hf_to_timm(sd, arch, what), layout, heads=arch.num_heads, heads_from="config.json",
                      mean=mean, std=std, dropped=dropped)


def read_local(path: Path) -> Checkpoint:
    """Read any supported layout at ``path`` (a file or a Hugging Face snapshot folder)."""
    path = Path(path).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelUnavailable(f"{path} is a folder without config.json: vitviz reads Hugging Face snapshot "
                                   f"folders (config.json + {' or '.join(HF_FILES)}) or single checkpoint files")
        return read_hf_folder(path)
    if not path.is_file():
        raise ModelUnavailable(f"{path} does not exist")
    return read_training_file(path)
