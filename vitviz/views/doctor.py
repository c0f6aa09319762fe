"""What the *Check a checkpoint* section shows: the doctor's report as Markdown, its panels, its data.

A registry model (a picker value, ``NAME`` or ``NAME:random``) is examined by name; a path only where the
host allows it (never on a public host: :data:`vitviz.settings.PUBLIC_LOCAL_REFUSAL`). Reports of registry
models are kept (they do not change while the app runs); a path is examined each time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import settings
from ..cache import LRU
from ..doctor.diagnose import diagnose
from ..doctor.report import Diagnosis
from ..models.loading import load_choice
from ..models.registry import parse_choice
from ..render.doctor import doctor_panels

#: What a healthy report looks like, said above a registry model's report.
HEALTHY = ("This is the app's own model: its report shows what a healthy MAE looks like. Check your own "
           "checkpoint with `python -m vitviz doctor PATH` (or a path below, when vitviz runs on your machine).")


@dataclass(frozen=True)
class DoctorView:
    """The section's outputs.

    Attributes:
        report: Markdown: the verdict, then each finding with its evidence, expected figure and what to do.
        panel: ``(H, W, 3)`` uint8 (the same mask: masked input, ring baseline, this checkpoint, mae-tiny),
            or None when nothing was reconstructed.
        data: the report as JSON-ready data (:meth:`vitviz.doctor.report.Diagnosis.as_dict`).
    """

    report: str
    panel: np.ndarray | None
    data: dict[str, Any]


def view_of(d: Diagnosis, intro: str = "") -> DoctorView:
    """A :class:`DoctorView` of a diagnosis."""
    head = f"### Checkpoint doctor: `{d.subject}`\n\n" + (f"{intro}\n\n" if intro else "")
    return DoctorView(head + d.to_markdown(), doctor_panels(d.panels) if d.panels else None, d.as_dict())


#: Reports of registry models, by picker value.
REPORTS: LRU[str, DoctorView] = LRU(8, name="doctor.reports")


def doctor_view(model_name: str | None, path: str | None = None) -> DoctorView:
    """The report on a picked registry model, or on the checkpoint at ``path`` when one is given.

    Raises:
        ValueError: no model picked, an unknown name, or a path on a public host.
        ModelUnavailable: the picked registry model's weights cannot be had here.
    """
    path = (path or "").strip()
    if path:
        if settings.public():
            raise ValueError(settings.PUBLIC_LOCAL_REFUSAL)
        return view_of(diagnose(Path(path)))
    name, random_init = parse_choice(model_name)
    choice = model_name or name

    def compute() -> DoctorView:
        subject = load_choice(choice) if random_init else name
        return view_of(diagnose(subject), "" if random_init else HEALTHY if name == "mae-tiny" else "")

    return REPORTS.get_or_compute(choice, compute)
