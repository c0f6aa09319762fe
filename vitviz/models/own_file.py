"""vitviz's own model files: fp16 safetensors with the architecture in the metadata.

One writer and one reader for every model the project trains (MAE, the VQ tokenizer,
BEiT): the file holds the state dict in float16 and the metadata ``{"format": FORMAT,
"config": JSON of the model's config, ...extra}`` (a training step, a digest of the data).
Writes are atomic: a reader never sees a half-written file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

M = TypeVar("M", bound=nn.Module)


def export_fp16(model: nn.Module, path: Path, fmt: str, extra: dict[str, str] | None = None) -> None:
    """Write ``model``'s weights as fp16 safetensors, its config in the metadata, atomically.

    Args:
        model: a module with a ``config`` that has ``to_dict()``.
        path: the ``.safetensors`` file to write (its folder is created).
        fmt: the file's ``format`` tag (``vitviz-mae``, ``vitviz-vqvae``, ``vitviz-beit``).
        extra: more metadata strings (training step, images seen, ...).
    """
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sd = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()}
    meta = {"format": fmt, "config": json.dumps(model.config.to_dict())}  # type: ignore[operator]
    meta.update(extra or {})
    tmp = path.with_suffix(".tmp")
    save_file(sd, str(tmp), metadata=meta)
    os.replace(tmp, path)


def load_own_file(path: Path, fmt: str, build: Callable[[dict[str, Any]], M]) -> tuple[M, dict[str, str]]:
    """Build a model from one of vitviz's own files, strictly: fp32, eval mode.

    Args:
        path: the file.
        fmt: the ``format`` tag it must carry.
        build: config dict (from the metadata) -> an untrained module of that architecture.

    Returns:
        ``(model, metadata)``.

    Raises:
        ValueError: the file does not carry ``fmt``.
        RuntimeError: keys or shapes do not match the config in its metadata.
    """
    from safetensors import safe_open
    from safetensors.torch import load_file

    with safe_open(str(path), framework="pt") as fh:
        meta = fh.metadata() or {}
    if meta.get("format") != fmt:
        raise ValueError(f"{Path(path).name} is not a {fmt} file (format={meta.get('format')!r})")
    model = build(json.loads(meta["config"]))
    model.load_state_dict({k: v.float() for k, v in load_file(str(path)).items()}, strict=True)
    return model.eval(), meta
