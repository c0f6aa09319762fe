"""The shipped fine-tuning and from-scratch runs: their logs, curves and summary table.

The runs were trained by ``python -m vitviz.training.finetune`` (CI never trains); each
left one JSONL log in ``assets/labelled/finetune/<schedule>/<run>-s<seed>.jsonl``: a
``recipe`` line, one ``epoch`` line per epoch (train loss and accuracy, validation
accuracy) and a ``final`` line (test accuracy, scored once after the last epoch).
``summary.json`` beside them is :func:`summarise` of those logs, so a test can check
that the table shown matches the logs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .features import labelled_dir

#: Runs in display order, with a readable name.
RUN_NAMES: dict[str, str] = {
    "ft-llrd": "mae-tiny fine-tuned, layer-wise LR decay 0.75",
    "ft": "mae-tiny fine-tuned, no decay (1.0)",
    "scratch-vit": "same ViT from scratch",
    "scratch-cnn": "ResNet-10-T (CNN) from scratch",
}


@dataclass(frozen=True)
class RunLog:
    """One run's log: ``recipe`` (dict), ``epochs`` (list of dicts) and ``final`` (dict)."""

    recipe: dict
    epochs: tuple[dict, ...]
    final: dict

    @property
    def run(self) -> str:
        return str(self.recipe["run"])

    @property
    def seed(self) -> int:
        return int(self.recipe["seed"])


def read_log(path: Path) -> RunLog:
    """Parse one JSONL log (raises ValueError when it lacks its recipe or final line)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    recipe = [r for r in rows if r.get("kind") == "recipe"]
    final = [r for r in rows if r.get("kind") == "final"]
    if len(recipe) != 1 or len(final) != 1:
        raise ValueError(f"{path} is not a finished run log (needs one recipe and one final line)")
    epochs = tuple(r for r in rows if r.get("kind") == "epoch")
    return RunLog(recipe[0], epochs, final[0])


def schedules(root: Path | None = None) -> list[str]:
    """Schedules shipped (folders of logs), sorted."""
    base = root or labelled_dir() / "finetune"
    return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def read_logs(schedule: str, root: Path | None = None) -> list[RunLog]:
    """Every finished run of a schedule, in :data:`RUN_NAMES` then seed order."""
    base = (root or labelled_dir() / "finetune") / schedule
    if not base.is_dir():
        raise ValueError(f"no shipped runs {schedule!r}; shipped: {', '.join(schedules(root)) or 'none'}")
    logs = [read_log(p) for p in sorted(base.glob("*.jsonl"))]
    order = list(RUN_NAMES)
    return sorted(logs, key=lambda r: (order.index(r.run) if r.run in order else len(order), r.seed))


def summarise(logs: list[RunLog]) -> dict:
    """Per run: seeds, test accuracy per seed, mean and spread (std over seeds), epochs, val curve mean."""
    out: dict[str, dict] = {}
    for run in dict.fromkeys(r.run for r in logs):
        mine = [r for r in logs if r.run == run]
        test = np.array([r.final["test_acc"] for r in mine])
        val = np.array([[e["val_acc"] for e in r.epochs] for r in mine])
        out[run] = {"name": RUN_NAMES.get(run, run), "seeds": [r.seed for r in mine],
                    "test_acc": test.round(6).tolist(), "mean": round(float(test.mean()), 6),
                    "spread": round(float(test.std()), 6), "epochs": int(mine[0].recipe["epochs"]),
                    "val_curve_mean": val.mean(axis=0).round(6).tolist(),
                    "train_loss_mean": np.array([[e["train_loss"] for e in r.epochs] for r in mine])
                    .mean(axis=0).round(6).tolist()}
    return out


def shipped_summary(schedule: str, root: Path | None = None) -> dict:
    """The shipped ``summary.json`` of a schedule."""
    path = (root or labelled_dir() / "finetune") / schedule / "summary.json"
    return json.loads(path.read_text())
