"""What the doctor's checks learn as they go, and how numbers are written into their sentences.

One :class:`Case` is passed through the checks in order (:mod:`.keys`, :mod:`.targets`,
:mod:`.preprocessing`, :mod:`.reconstruction`, :mod:`.training`); each reads what the earlier ones
learned (the file's facts, the checkpoint, the built model) and appends its findings.
"""

from __future__ import annotations

import dataclasses

import torch

from ..models.layouts import Checkpoint
from ..models.loading import LoadedModel
from ..models.spec import LocalArch
from .files import FileFacts
from .report import Finding


@dataclasses.dataclass
class Case:
    """What the checks learn as they go.

    Attributes:
        subject: what is examined (a path or a registry name).
        findings: the findings so far, in the order the checks added them.
        layout: the layout recognised, in words.
        architecture: the architecture read from the file, in words.
        facts: what the file holds (None for a registry or loaded model).
        ck: the checkpoint as read (None for a registry or loaded model, or an unreadable file).
        la: the architecture inferred from the file.
        model: the model measured (None when none could be built).
        twin: the model's random-weight twin.
        norm_pix_said: what the file says about ``norm_pix_loss`` (None: nothing).
        norm_pix_from: where it says it (``args.norm_pix_loss``, ``config.json``, ...).
        mae_expected: the file says it is an MAE (its args' model name or its MAE config).
        device: where the models run.
    """

    subject: str
    findings: list[Finding] = dataclasses.field(default_factory=list)
    layout: str = ""
    architecture: str = ""
    facts: FileFacts | None = None
    ck: Checkpoint | None = None
    la: LocalArch | None = None
    model: LoadedModel | None = None
    twin: LoadedModel | None = None
    norm_pix_said: bool | None = None
    norm_pix_from: str = ""
    mae_expected: bool = False
    device: torch.device = torch.device("cpu")

    def add(self, severity: str, topic: str, title: str, sentence: str, evidence: str = "", action: str = "",
            expected: str = "") -> None:
        """Append one :class:`~vitviz.doctor.report.Finding`."""
        self.findings.append(Finding(severity, topic, title, sentence, evidence, action, expected))


def fmt(x: float | None, digits: int = 4) -> str:
    """``x`` with ``digits`` decimals, or ``n/a`` where it was not measured."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def row(values: list[float], digits: int = 2) -> str:
    """A list of numbers (one per layer) as ``[0.12, 0.34]``."""
    return "[" + ", ".join(f"{v:.{digits}f}" for v in values) + "]"
