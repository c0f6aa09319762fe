"""The MAE slider's stops as the page holds them: every stop's panel files packed into one file, and the payload
that tells the page where each panel lies in it (the page then moves the slider with no server call).

No UI code here: :mod:`vitviz.ui.scrub` writes the pack into Gradio's cache and wires the page's handlers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Panel kinds that change with the masking ratio, in output order.
PANEL_KINDS: tuple[str, ...] = ("masked", "reconstruction", "pasted", "error")


@dataclass(frozen=True)
class StopPanels:
    """One slider stop as the page shows it.

    Attributes:
        ratio: the stop (0.0 ... 0.95).
        files: panel kind -> path of its PNG file (as Gradio's image cache wrote it).
        metrics: the metrics line (Markdown) shown under the panels.
    """

    ratio: float
    files: Mapping[str, str]
    metrics: str


def stop_key(ratio: float) -> str:
    """The payload's key of a stop: the ratio with two decimals (``0.75`` -> ``"0.75"``)."""
    return f"{round(float(ratio) * 20) / 20:.2f}"


@dataclass(frozen=True)
class Pack:
    """Every stop's panels as one file: its content name (a digest of bytes and entries), its bytes, and per stop
    (:func:`stop_key`) each panel's ``[offset, length]`` in it, its own file's path and the metrics line."""

    ident: str
    blob: bytes
    entries: dict[str, dict]


def pack(stops: Sequence[StopPanels]) -> Pack:
    """The panel files of ``stops`` (any subset of the slider's stops), concatenated in :data:`PANEL_KINDS` order."""
    chunks: list[bytes] = []
    entries: dict[str, dict] = {}
    offset = 0
    for stop in stops:
        ranges: dict[str, list[int]] = {}
        for kind in PANEL_KINDS:
            data = Path(stop.files[kind]).read_bytes()
            ranges[kind] = [offset, len(data)]
            chunks.append(data)
            offset += len(data)
        entries[stop_key(stop.ratio)] = {"files": ranges, "paths": {k: str(stop.files[k]) for k in PANEL_KINDS},
                                         "metrics": stop.metrics}
    blob = b"".join(chunks)
    digest = hashlib.blake2b(blob, digest_size=16)
    digest.update(json.dumps(entries, sort_keys=True).encode())
    return Pack(digest.hexdigest(), blob, entries)


def payload_json(key: Mapping[str, Any], path: Path, packed: Pack) -> str:
    """The payload the page reads, as JSON text: ``{"id", "image", "model", "seed", "pattern", "pack",
    "stops": {"0.75": {"files": {kind: [offset, length]}, "paths": {kind: path}, "metrics": str}}}``.

    ``key``: what the stops belong to, checked by the page before using them: ``image`` (the image input's file
    path), ``model``, ``seed``, ``pattern``; ``path``: where the pack's bytes are served from.
    """
    return json.dumps({
        "id": packed.ident, "image": str(key["image"]), "model": key["model"], "seed": int(key["seed"]),
        "pattern": key["pattern"], "pack": str(path), "stops": packed.entries,
    })
