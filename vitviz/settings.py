"""Every ``VITVIZ_*`` setting in one table: name, default, meaning, parser.

Values are read from the environment when they are needed (never at import), parsed
and validated here; a bad value raises ``ValueError`` naming the variable and what it
accepts. The table is the documentation: ``python -m vitviz settings`` prints it, and
``docs/architecture.md`` and the README list it.

Upload limit: ``VITVIZ_MAX_UPLOAD`` (``20mb``, ``512kb``, or plain bytes) is the one
name; the older ``VITVIZ_MAX_UPLOAD_BYTES`` is still read as a deprecated alias when
the new name is not set.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Setting:
    """One environment variable.

    Attributes:
        name: the variable (``VITVIZ_...``).
        default: its value when unset or empty, as text.
        parse: text -> value; raises ``ValueError`` saying what is accepted.
        doc: one sentence for people.
    """

    name: str
    default: str
    parse: Callable[[str], Any]
    doc: str


def _int(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"expected a whole number from {lo} to {hi}") from None
        if not lo <= value <= hi:
            raise ValueError(f"expected a whole number from {lo} to {hi}")
        return value
    return parse


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return value
    return parse


_TRUE, _FALSE = ("1", "true", "on", "yes"), ("0", "false", "off", "no")


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value not in _TRUE + _FALSE:
        raise ValueError("expected 0 or 1")
    return value in _TRUE


def _folder(text: str) -> Path | None:
    value = text.strip()
    return Path(value).expanduser() if value else None


_UNITS = {"": 1, "b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3}


def parse_bytes(text: str) -> int:
    """``'20mb'`` -> 20 MiB in bytes; ``'512kb'``, ``'1gb'`` and plain byte counts too."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]?b?)\s*", str(text).lower())
    if m is None or m.group(2) not in _UNITS:
        raise ValueError("expected a size such as 20mb, 512kb or a number of bytes")
    value = int(float(m.group(1)) * _UNITS[m.group(2)])
    if value < 1:
        raise ValueError("expected a positive size")
    return value


SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("VITVIZ_WEIGHTS_DIR", "", _folder,
            "Local folder of weights, searched before the download caches (the CLI's --weights-dir)."),
    Setting("VITVIZ_PRECISION", "auto", _choice("auto", "fp32", "bf16", "int8"),
            "auto: bf16 autocast on CUDA, fp32 elsewhere; fp32; bf16 (autocast anywhere); int8 (CPU, "
            "dynamically quantised linear layers)."),
    Setting("VITVIZ_ONEDNN", "1", _flag,
            "1: CPU models run their linear layers on oneDNN-packed weights; 0: plain PyTorch."),
    Setting("VITVIZ_MAX_MODELS", "3", _int(1, 64), "Loaded models kept in memory (least recently used go first)."),
    Setting("VITVIZ_ATTENTION_CACHE", "6", _int(1, 1024),
            "Captured attention results kept (image, model, mask, part); a ViT-B entry is about 22 MB."),
    Setting("VITVIZ_SWEEP_CACHE", "24", _int(1, 100_000),
            "Images whose slider stops are kept (each up to 20 reconstructions, about 0.7 MB each)."),
    Setting("VITVIZ_MAX_UPLOAD", "20mb", parse_bytes,
            "Largest image file accepted, by the library and by the app's uploads (deprecated alias: "
            "VITVIZ_MAX_UPLOAD_BYTES)."),
    Setting("VITVIZ_MAX_PIXELS", "40000000", _int(1, 10**10),
            "Largest decoded image in pixels, checked from the header before decoding."),
    Setting("VITVIZ_CACHE_SECONDS", "3600", _int(60, 10**7),
            "The app deletes the files it handed to browsers (panels, exports, CSVs) after this many seconds."),
    Setting("VITVIZ_CONCURRENCY", "2", _int(1, 256), "Requests the app computes at once (match the cores)."),
    Setting("VITVIZ_MAX_QUEUE", "64", _int(1, 100_000), "Requests the app queues before turning new ones away."),
)}

#: Old names still read when the new one is unset: old -> new.
DEPRECATED: dict[str, str] = {"VITVIZ_MAX_UPLOAD_BYTES": "VITVIZ_MAX_UPLOAD"}


@functools.lru_cache(maxsize=256)
def _parsed(name: str, raw: str) -> Any:
    try:
        return SETTINGS[name].parse(raw)
    except ValueError as exc:
        raise ValueError(f"{name}={raw!r}: {exc}") from None


def raw(name: str) -> str:
    """The text of a setting: the environment (or its deprecated alias), else the default."""
    if name not in SETTINGS:
        raise ValueError(f"unknown setting {name!r}; choose one of {', '.join(SETTINGS)}")
    value = os.environ.get(name, "")
    if not value.strip():
        for old, new in DEPRECATED.items():
            if new == name and os.environ.get(old, "").strip():
                warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=3)
                value = os.environ[old]
    return value if value.strip() else SETTINGS[name].default


def get(name: str) -> Any:
    """The parsed value of setting ``name`` (read from the environment now).

    Raises:
        ValueError: an unknown name (listing the valid ones), or a value the setting
            does not accept (naming the variable and what it accepts).
    """
    return _parsed(name, raw(name))


def max_upload_bytes() -> int:
    """``VITVIZ_MAX_UPLOAD`` in bytes."""
    return get("VITVIZ_MAX_UPLOAD")


def max_pixels() -> int:
    """``VITVIZ_MAX_PIXELS``."""
    return get("VITVIZ_MAX_PIXELS")


def weights_dir() -> Path | None:
    """``VITVIZ_WEIGHTS_DIR``, or None when unset."""
    return get("VITVIZ_WEIGHTS_DIR")


def offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set (Hugging Face's own variable): nothing is downloaded."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def check() -> list[str]:
    """Parse every setting; the problems found, one sentence each (empty when all are valid)."""
    problems = []
    for name in SETTINGS:
        try:
            get(name)
        except ValueError as exc:
            problems.append(str(exc))
    return problems


def table() -> str:
    """Every setting as a Markdown table (name, default, meaning)."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    rows += [f"| `{s.name}` | `{s.default or '(unset)'}` | {s.doc} |" for s in SETTINGS.values()]
    return "\n".join(rows)
