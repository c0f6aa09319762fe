"""A diagnosis: findings in sentences, ordered by severity, with the measurements they rest on.

Each :class:`Finding` says what was found (a sentence), the evidence (numbers or names read
from the file), what to do, and, where a figure is compared with an expected one, where that
expected figure comes from (a paper and its table, the upstream code, or "measured on
mae-tiny"). A :class:`Diagnosis` is plain data: :meth:`Diagnosis.to_json` and
:meth:`Diagnosis.to_text` give the same findings to a program and to a person.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Severities, worst first: ``problem`` explains wrong reconstructions or blocks them; ``warning`` may
#: mislead; ``note`` is worth knowing; ``ok`` is a check that passed.
SEVERITIES: tuple[str, ...] = ("problem", "warning", "note", "ok")


@dataclass(frozen=True)
class Finding:
    """One check's outcome.

    Attributes:
        severity: one of :data:`SEVERITIES`.
        topic: ``format``, ``keys``, ``targets``, ``preprocessing``, ``reconstruction`` or ``training``.
        title: a few words (``the decoder is missing``).
        sentence: what was found, as a sentence.
        evidence: what it rests on (names, shapes, measured numbers).
        action: what to do ("" when nothing is needed).
        expected: the expected figure and its source ("" when none is quoted).
    """

    severity: str
    topic: str
    title: str
    sentence: str
    evidence: str = ""
    action: str = ""
    expected: str = ""

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}, got {self.severity!r}")

    def to_dict(self) -> dict[str, str]:
        """JSON-ready fields."""
        return {"severity": self.severity, "topic": self.topic, "title": self.title, "sentence": self.sentence,
                "evidence": self.evidence, "action": self.action, "expected": self.expected}


def _plain(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays as Python numbers and lists; non-finite floats as None."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(float(value)) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


@dataclass(frozen=True)
class Diagnosis:
    """The doctor's report on one checkpoint or model.

    Attributes:
        subject: what was examined (a path or a registry name).
        layout: the layout recognised, in words ("" when the file could not be read).
        architecture: the architecture read from the file, in words ("" when unknown).
        findings: ordered worst first (:data:`SEVERITIES`), then by topic order of the checks.
        measurements: the numbers the findings quote, JSON-ready (per model: ``checkpoint``,
            ``random_twin``, ``mae-tiny``).
        panels: name -> ``(H, W, 3)`` uint8 images (the same mask on the checkpoint and mae-tiny);
            not part of the JSON.
    """

    subject: str
    layout: str
    architecture: str
    findings: tuple[Finding, ...]
    measurements: dict[str, Any] = field(default_factory=dict)
    panels: dict[str, np.ndarray] = field(default_factory=dict)

    @staticmethod
    def ordered(findings: list[Finding]) -> tuple[Finding, ...]:
        """``findings`` sorted worst first; the order of the checks is kept within a severity."""
        return tuple(sorted(findings, key=lambda f: SEVERITIES.index(f.severity)))

    @property
    def healthy(self) -> bool:
        """True when no finding is a problem or a warning."""
        return not any(f.severity in ("problem", "warning") for f in self.findings)

    def counts(self) -> dict[str, int]:
        """Findings per severity (every severity listed)."""
        return {s: sum(f.severity == s for f in self.findings) for s in SEVERITIES}

    def verdict(self) -> str:
        """One sentence: how many problems and warnings, or that the report is clean."""
        c = self.counts()
        if self.healthy:
            return f"Clean report: no problem and no warning ({c['ok']} checks passed, {c['note']} notes)."
        parts = [f"{c[s]} {s}{'s' if c[s] != 1 else ''}" for s in ("problem", "warning") if c[s]]
        return f"{' and '.join(parts)} found ({c['ok']} checks passed, {c['note']} notes)."

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: subject, layout, architecture, verdict, counts, findings, measurements."""
        return {"subject": self.subject, "layout": self.layout, "architecture": self.architecture,
                "healthy": self.healthy, "verdict": self.verdict(), "counts": self.counts(),
                "findings": [f.to_dict() for f in self.findings], "measurements": _plain(self.measurements),
                "panels": sorted(self.panels)}

    def to_json(self, indent: int | None = 2) -> str:
        """The report as a JSON string (:meth:`as_dict`)."""
        return json.dumps(self.as_dict(), indent=indent, allow_nan=False)

    def to_text(self) -> str:
        """The report for a terminal: the verdict, then each finding with its evidence and what to do."""
        lines = [f"Checkpoint doctor: {self.subject}"]
        if self.layout:
            lines.append(f"  read as: {self.layout}")
        if self.architecture:
            lines.append(f"  architecture: {self.architecture}")
        lines += [f"  {self.verdict()}", ""]
        for f in self.findings:
            lines.append(f"[{f.severity.upper()}] {f.topic}: {f.title}")
            lines.append(f"    {f.sentence}")
            if f.evidence:
                lines.append(f"    evidence: {f.evidence}")
            if f.expected:
                lines.append(f"    expected: {f.expected}")
            if f.action:
                lines.append(f"    what to do: {f.action}")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The report as Markdown (the app's section): verdict, then one block per finding."""
        out = [f"**{self.verdict()}**", ""]
        if self.layout:
            out.append(f"Read as: {self.layout}. " + (f"Architecture: {self.architecture}." if self.architecture else ""))
            out.append("")
        for f in self.findings:
            out.append(f"**{f.severity.upper()} · {f.title}**: {f.sentence}")
            extra = [("Evidence", f.evidence), ("Expected", f.expected), ("What to do", f.action)]
            out += [f"<br>&nbsp;&nbsp;*{k}:* {v}" for k, v in extra if v]
            out.append("")
        return "\n".join(out)
