"""The shipped classifier head's inputs and its evaluation on the labelled set's splits.

``python -m vitviz.training.linear_head`` runs the backbone once over every labelled photo,
keeps each photo's classifier input (the class token after the final LayerNorm, ``(D,)``,
stored fp16 in ``assets/labelled/head/<model>.inputs.npz``), fits the head on the train
photos and writes what :func:`evaluate` gives into the card's JSON. So the card's figures
can be recomputed from shipped files alone, without the backbone
(``tests/probing/test_lab8_head.py``).

Shapes: ``N`` photos, ``D`` channels, ``C`` classes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..models.linear_head import HEAD_INPUT, LinearHead, head_dir
from .features import SPLITS

INPUTS_FORMAT = "vitviz-head-inputs-1"


@dataclass(frozen=True, eq=False)
class HeadInputs:
    """Every labelled photo's classifier input for one backbone.

    Attributes:
        x: ``(N, D)`` float32 (stored fp16). labels: ``(N,)`` int64. split: ``(N,)`` str.
        ids: photo ids. classes: class names. digest: the manifest's
            :func:`~vitviz.probing.features.manifest_digest`. backbone: registry name.
    """

    x: np.ndarray
    labels: np.ndarray
    split: np.ndarray
    ids: tuple[str, ...]
    classes: tuple[str, ...]
    digest: str
    backbone: str


def inputs_path(model: str) -> Path:
    """``assets/labelled/head/<model>.inputs.npz``."""
    return head_dir() / f"{model}.inputs.npz"


def card_json_path(model: str) -> Path:
    """``assets/labelled/head/<model>.json``: the figures the card states."""
    return head_dir() / f"{model}.json"


def save_inputs(path: Path, inputs: HeadInputs) -> None:
    """Write :class:`HeadInputs` as compressed ``.npz`` (fp16 vectors, no pickles)."""
    meta = {"format": INPUTS_FORMAT, "input": HEAD_INPUT, "classes": list(inputs.classes), "digest": inputs.digest,
            "backbone": inputs.backbone}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, x=inputs.x.astype(np.float16), labels=inputs.labels.astype(np.int16),
                        split=np.array([SPLITS.index(s) for s in inputs.split], np.int8), ids=np.array(inputs.ids),
                        meta=np.array(json.dumps(meta)))


def load_inputs(path: Path) -> HeadInputs:
    """Read a file written by :func:`save_inputs`."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        if meta.get("format") != INPUTS_FORMAT:
            raise ValueError(f"{path} is not a {INPUTS_FORMAT} file")
        return HeadInputs(z["x"].astype(np.float32), z["labels"].astype(np.int64),
                          np.array([SPLITS[i] for i in z["split"]]), tuple(str(s) for s in z["ids"]),
                          tuple(meta["classes"]), meta["digest"], meta["backbone"])


def predict(head: LinearHead, x: np.ndarray) -> np.ndarray:
    """``(N, D)`` inputs -> ``(N,)`` int64 predicted classes (float32 arithmetic, as the model runs)."""
    with torch.no_grad():
        return head.logits(torch.from_numpy(np.asarray(x, np.float32))).argmax(dim=1).numpy().astype(np.int64)


def evaluate(head: LinearHead, inputs: HeadInputs) -> dict:
    """Accuracy of ``head`` on every split, overall and per class.

    Returns:
        ``{"accuracy": {split: float}, "correct": {split: int}, "count": {split: int},
        "per_class": {split: {class: float}}}``.

    Raises:
        ValueError: head and inputs name different classes.
    """
    if tuple(head.classes) != tuple(inputs.classes):
        raise ValueError(f"the head's classes {head.classes} are not the inputs' {inputs.classes}")
    pred = predict(head, inputs.x)
    out: dict = {"accuracy": {}, "correct": {}, "count": {}, "per_class": {}}
    for s in SPLITS:
        idx = np.flatnonzero(inputs.split == s)
        hit = pred[idx] == inputs.labels[idx]
        out["accuracy"][s] = float(hit.mean()) if len(idx) else 0.0
        out["correct"][s], out["count"][s] = int(hit.sum()), int(len(idx))
        out["per_class"][s] = {c: float(hit[inputs.labels[idx] == i].mean())
                               for i, c in enumerate(inputs.classes) if (inputs.labels[idx] == i).any()}
    return out
