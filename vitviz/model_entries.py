"""The starter's own checkpoints as ``VITVIZ_MODELS`` and ``app.py --model`` name them: ``[NAME=]PATH[,heads=N]
[,decoder_heads=N]`` entries, parsed into :class:`LocalModelEntry` (read through :mod:`vitviz.settings`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LocalModelEntry:
    """One of the starter's own checkpoints (``VITVIZ_MODELS``, ``--model NAME=PATH``).

    Attributes:
        name: the name it is picked by (``mine``).
        path: a checkpoint file or a Hugging Face snapshot folder.
        heads: encoder heads, overriding the file's config and the width / 64 convention.
        decoder_heads: an MAE decoder's heads, overriding the file and the width / 32 convention.
    """

    name: str
    path: Path
    heads: int | None = None
    decoder_heads: int | None = None


#: Separator of entries in VITVIZ_MODELS.
MODELS_SEPARATOR = ";"
_ENTRY_NAME = r"[a-z0-9][a-z0-9._-]{0,63}"


def local_name(path: Path) -> str:
    """The name a checkpoint is picked by when none is given: its file or folder name, lower-case."""
    stem = Path(path).name.removesuffix(".safetensors").removesuffix(".pth").removesuffix(".pt").removesuffix(".bin")
    name = re.sub(r"[^a-z0-9._-]+", "-", stem.lower()).strip("-._")
    return name or "local"


def parse_model_entry(text: str) -> LocalModelEntry:
    """``[NAME=]PATH[,heads=N][,decoder_heads=N]`` -> a :class:`LocalModelEntry`.

    Raises:
        ValueError: a sentence saying what the entry should look like.
    """
    parts = text.strip().split(",")
    opts: dict[str, int] = {}
    while len(parts) > 1 and (m := re.fullmatch(r"\s*(heads|decoder_heads|decoder-heads)=(\d+)\s*", parts[-1])):
        opts[m.group(1).replace("-", "_")] = int(m.group(2))
        parts.pop()
    body = ",".join(parts).strip()
    m = re.fullmatch(rf"({_ENTRY_NAME})=(.+)", body)
    name, path = (m.group(1), m.group(2).strip()) if m else (None, body)
    if not path:
        raise ValueError(f"{text!r}: expected NAME=PATH or PATH, optionally followed by ,heads=N and ,decoder_heads=N")
    if any(v < 1 for v in opts.values()):
        raise ValueError(f"{text!r}: head counts must be at least 1")
    p = Path(path).expanduser()
    return LocalModelEntry(name or local_name(p), p, opts.get("heads"), opts.get("decoder_heads"))


def model_entries(text: str) -> tuple[LocalModelEntry, ...]:
    """Entries separated by ``;`` or new lines (``VITVIZ_MODELS``); a name given twice is refused."""
    entries = tuple(parse_model_entry(t) for t in re.split(rf"[{MODELS_SEPARATOR}\n]", text) if t.strip())
    names = [e.name for e in entries]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"the name {', '.join(twice)} is given to more than one checkpoint")
    return entries


__all__ = ["MODELS_SEPARATOR", "LocalModelEntry", "local_name", "model_entries", "parse_model_entry"]
