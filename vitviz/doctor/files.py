"""What a checkpoint file holds, read safely before any model is built.

Files are read as :mod:`vitviz.models.layouts` reads them (safetensors, or
``torch.load(weights_only=True)`` with only ``argparse.Namespace`` allowed besides tensors and
plain containers); nothing else is ever unpickled. This module records what the layout
reader smooths over -- the wrapper key, ``module.`` prefixes, EMA copies, the training
arguments, the epoch -- and says in words why a file cannot be read (truncated, not a
PyTorch file, pickled objects).
"""

from __future__ import annotations

import argparse
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import ModelUnavailable
from ..models.layouts import HF_FILES, WEIGHT_KEYS, _load_pickle

#: Keys of a training checkpoint that hold EMA copies of the weights (timm: ``state_dict_ema``).
EMA_KEYS = ("model_ema", "state_dict_ema", "ema", "ema_state_dict", "model_ema_state_dict")

_BLOCK = re.compile(r"^(decoder_blocks|blocks)\.(\d+)\.")


@dataclass
class FileFacts:
    """What one checkpoint file or snapshot folder holds.

    Attributes:
        path: the file or folder.
        size: bytes of the weight file.
        container: ``safetensors``, ``torch.save (zip)``, ``torch.save (legacy pickle)``, ``folder``.
        top_keys: the top-level keys of a dict checkpoint (empty for a bare state dict).
        weights_key: the key the weights were read from (None: a bare state dict).
        ema: ``{key: tensors}`` of EMA copies beside the weights.
        args: the training arguments (``args`` as a dict), or None.
        epoch: the saved epoch, or None.
        module_prefix: every weight key started with ``module.`` (DistributedDataParallel).
        n_tensors: tensors in the weights.
        metadata: a safetensors file's metadata.
        config: a Hugging Face snapshot's ``config.json``.
        error: why the file cannot be read, in words (None: it was read).
        error_kind: ``truncated``, ``missing``, ``pickle``, ``layout`` or ``unreadable``.
    """

    path: Path
    size: int = 0
    container: str = ""
    top_keys: list[str] = field(default_factory=list)
    weights_key: str | None = None
    ema: dict[str, int] = field(default_factory=dict)
    args: dict[str, Any] | None = None
    epoch: int | None = None
    module_prefix: bool = False
    n_tensors: int = 0
    metadata: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] | None = None
    error: str | None = None
    error_kind: str = ""


def _tensor_dict(obj: Any) -> bool:
    return isinstance(obj, dict) and bool(obj) and all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                                       for k, v in obj.items())


def _zip_is_whole(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path):
            return True
    except (zipfile.BadZipFile, OSError, EOFError):
        return False


def _unreadable(facts: FileFacts, exc: Exception) -> FileFacts:
    """Say why the file cannot be read: a truncated zip, a foreign file, or pickled objects."""
    msg = str(exc)
    head = b""
    try:
        with open(facts.path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        pass
    if "never unpickles arbitrary objects" in msg:
        facts.error_kind, facts.error = "pickle", msg
    elif head.startswith(b"PK") and not _zip_is_whole(facts.path):
        facts.error_kind = "truncated"
        facts.error = (f"the file is truncated: it starts as a torch.save zip archive but its {facts.size:,} bytes end "
                       f"before the archive's directory (an interrupted download or copy)")
    elif facts.path.suffix == ".safetensors" and facts.size >= 8:
        facts.error_kind = "truncated" if "incomplete" in msg.lower() or "header" in msg.lower() else "unreadable"
        facts.error = f"the safetensors file cannot be read ({msg}); a truncated copy fails this way"
    else:
        facts.error_kind = "unreadable"
        facts.error = f"the file is not a PyTorch or safetensors checkpoint vitviz can read ({msg})"
    return facts


def inspect_file(path: str | Path) -> FileFacts:
    """What ``path`` holds (never raises for a bad file: :attr:`FileFacts.error` says what is wrong)."""
    p = Path(path).expanduser()
    facts = FileFacts(p)
    if p.is_dir():
        facts.container = "folder"
        weights = next((p / f for f in HF_FILES if (p / f).is_file()), None)
        try:
            facts.config = json.loads((p / "config.json").read_text())
        except (OSError, ValueError) as exc:
            facts.error_kind, facts.error = "layout", f"the folder has no readable config.json ({exc})"
            return facts
        if weights is None:
            facts.error_kind, facts.error = "layout", f"the folder has config.json but none of {', '.join(HF_FILES)}"
            return facts
        facts.size = weights.stat().st_size
        facts.n_tensors = -1  # counted by the layout reader
        return facts
    if not p.is_file():
        facts.error_kind, facts.error = "missing", f"{p} does not exist"
        return facts
    facts.size = p.stat().st_size
    if p.suffix == ".safetensors":
        from safetensors import SafetensorError, safe_open

        facts.container = "safetensors"
        try:
            with safe_open(str(p), framework="pt") as fh:
                facts.metadata = dict(fh.metadata() or {})
                keys = list(fh.keys())
        except (SafetensorError, OSError, ValueError) as exc:
            return _unreadable(facts, exc)
        facts.n_tensors = len(keys)
        facts.module_prefix = bool(keys) and all(k.startswith("module.") for k in keys)
        return facts
    try:
        obj = _load_pickle(p, str(p))
    except ModelUnavailable as exc:
        return _unreadable(facts, exc)
    facts.container = "torch.save (zip)" if zipfile.is_zipfile(p) else "torch.save (legacy pickle)"
    weights: dict | None = None
    if _tensor_dict(obj):
        weights = obj
    elif isinstance(obj, dict):
        facts.top_keys = [str(k) for k in obj]
        key = next((k for k in WEIGHT_KEYS if _tensor_dict(obj.get(k))), None)
        facts.weights_key = key
        weights = obj.get(key) if key is not None else None
        facts.ema = {k: len(obj[k]) for k in EMA_KEYS if k != key and _tensor_dict(obj.get(k))}
        args = obj.get("args")
        if isinstance(args, argparse.Namespace):
            facts.args = dict(vars(args))
        elif isinstance(args, dict):
            facts.args = dict(args)
        if isinstance(obj.get("epoch"), int):
            facts.epoch = obj["epoch"]
    if weights is None:
        facts.error_kind = "layout"
        facts.error = ("it holds no dict of tensors vitviz recognises (" +
                       (f"top-level keys: {', '.join(facts.top_keys[:10])}" if facts.top_keys else
                        f"a {type(obj).__name__}") + f"; weights are looked for under {', '.join(WEIGHT_KEYS)})")
        return facts
    keys = list(weights)
    facts.n_tensors = len(keys)
    facts.module_prefix = bool(keys) and all(k.startswith("module.") for k in keys)
    return facts


# ----------------------------------------------------------------------------------------- key groups


def group_of(key: str) -> str:
    """The part of a ViT / MAE a key belongs to, in words."""
    if key.startswith(("decoder", "mask_token")):
        return "the decoder"
    if key.startswith(("head.", "head_dist.", "fc_norm.")):
        return "the classifier head"
    if key.startswith("blocks."):
        return "the encoder blocks"
    if key.startswith(("cls_token", "pos_embed", "patch_embed.", "dist_token", "reg_token")):
        return "the embeddings"
    if key.startswith("norm."):
        return "the encoder's final norm"
    return f"{key.split('.')[0]}"


def describe_keys(keys: list[str], limit: int = 4) -> str:
    """Keys grouped in words: ``the decoder (56 tensors: decoder_blocks.0-3, decoder_embed, ...)``."""
    groups: dict[str, list[str]] = {}
    for k in sorted(keys):
        groups.setdefault(group_of(k), []).append(k)
    parts = []
    for g, ks in groups.items():
        names: dict[str, set[int]] = {}
        for k in ks:
            m = _BLOCK.match(k)
            stem = m.group(1) if m else k.rsplit(".", 1)[0] if k.endswith((".weight", ".bias")) else k
            names.setdefault(stem, set()).update({int(m.group(2))} if m else set())
        shown = [f"{s}.{min(i)}-{max(i)}" if len(i) > 1 else f"{s}.{min(i)}" if i else s for s, i in names.items()]
        more = f", ... {len(shown) - limit} more" if len(shown) > limit else ""
        parts.append(f"{g} ({len(ks)} tensor{'s' if len(ks) != 1 else ''}: {', '.join(shown[:limit])}{more})")
    return "; ".join(parts)


# ----------------------------------------------------------------------------------------- position tables


def _interp(table: torch.Tensor, old: int, new: int) -> list[torch.Tensor]:
    """``(old*old, D)`` resampled to ``(new*new, D)`` both ways people do it: facebookresearch/mae's
    ``interpolate_pos_embed`` (bicubic, ``align_corners=False``) and timm's (bicubic, antialiased)."""
    import torch.nn.functional as F

    grid = table.reshape(1, old, old, -1).permute(0, 3, 1, 2)
    out = [F.interpolate(grid, size=(new, new), mode="bicubic", align_corners=False)]
    out.append(F.interpolate(grid, size=(new, new), mode="bicubic", align_corners=False, antialias=True))
    return [o.permute(0, 2, 3, 1).reshape(new * new, -1) for o in out]


@dataclass(frozen=True)
class PositionTable:
    """What a position table is: MAE's sin-cos for its grid, a resampled one, or learned.

    Attributes:
        grid: patches per side of the table.
        kind: ``sincos`` (equals MAE's table for ``grid``), ``resampled`` (MAE's table for
            ``source_grid`` resampled bicubically to ``grid``) or ``learned`` (neither).
        source_grid: the grid it was resampled from (``resampled`` only).
        difference: largest absolute difference from the closest of those tables.
    """

    grid: int
    kind: str
    source_grid: int | None
    difference: float


def position_table(pos: torch.Tensor, num_prefix: int = 1, tol: float = 1e-3) -> PositionTable:
    """Classify a ``(1, prefix + g*g, D)`` position table (see :class:`PositionTable`)."""
    from ..core.pos_embed import sincos_pos_embed

    table = pos.detach().float().reshape(pos.shape[-2], pos.shape[-1])[num_prefix:]
    n, d = table.shape
    g = int(round(n ** 0.5))
    own = torch.from_numpy(sincos_pos_embed(d, (g, g), cls_token=False))
    diff = float((table - own).abs().max())
    if diff < tol:
        return PositionTable(g, "sincos", None, diff)
    best: tuple[float, int] = (diff, g)
    for old in range(2, 2 * g + 9):
        if old == g:
            continue
        src = torch.from_numpy(sincos_pos_embed(d, (old, old), cls_token=False))
        for cand in _interp(src, old, g):
            best = min(best, (float((table - cand).abs().max()), old))
    if best[0] < 5 * tol and best[1] != g:
        return PositionTable(g, "resampled", best[1], best[0])
    return PositionTable(g, "learned", None, diff)


def grid_of(shape: tuple[int, ...], num_prefix: int = 1) -> int | None:
    """Patches per side of a ``(1, prefix + g*g, D)`` table, or None when no square fits."""
    n = int(shape[-2]) - num_prefix
    g = int(round(max(n, 0) ** 0.5))
    return g if g * g == n and n > 0 else None


def args_summary(args: dict[str, Any] | None) -> str:
    """The training arguments the doctor reads, in one line."""
    if not args:
        return ""
    keys = ("model", "arch", "input_size", "mask_ratio", "norm_pix_loss", "epochs", "batch_size", "blr", "lr")
    return ", ".join(f"{k}={args[k]!r}" for k in keys if k in args)


def is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
