"""``vitviz.diagnose``: read a checkpoint, run the checks in order, and report in sentences.

The checks, in the order they run (each adds :class:`~vitviz.doctor.report.Finding` objects):

1. **format and keys** (:mod:`.keys`): can the file be
   read safely, which layout, ``module.`` prefixes, EMA copies, nesting; is there a decoder; does it
   load strictly, and if not, which groups of tensors are missing or unexpected. Where the fix is
   unambiguous the file is read anyway and the report says so (a prefix removed; an encoder
   read without its decoder; MAE's fixed sin-cos table restored where a resampled one stands).
2. **targets** (:mod:`.targets`): pixels or per-patch normalised pixels, from the file and from the decoder's output.
3. **preprocessing** (:mod:`.preprocessing`): input size, patch size, the position tables (MAE's sin-cos, resampled, or
   learned), mean/std.
4. **does it reconstruct** (:mod:`.reconstruction`): hidden-patch error at 75% on the example photos against the
   visible-ring baseline, the model's random-weight twin and mae-tiny; the ratio where error turns up.
5. **what training left** (:mod:`.training`): attention distance and entropy by depth, near-uniform and sink heads,
   high-norm tokens, each against mae-tiny and the random twin.
"""

from __future__ import annotations

from pathlib import Path

import torch

from .. import settings
from ..models.loading import LoadedModel, default_device, load_model
from ..models.registry import model_names
from . import keys, preprocessing, reconstruction, targets, training
from .case import Case
from .measure import measure, random_twin, reference
from .report import Diagnosis


def diagnose(subject: str | Path | LoadedModel, device: str | torch.device | None = None,
             photos: list[str] | None = None) -> Diagnosis:
    """Examine a checkpoint (a path), a registry model (a name) or a loaded model, and report.

    ``vitviz.diagnose("checkpoint-399.pth").to_text()``; ``.to_json()`` gives the same findings as data.

    Args:
        subject: a checkpoint file or Hugging Face snapshot folder, a registry name, or a :class:`LoadedModel`.
        device: where the models run (None: CUDA when present, else CPU).
        photos: the images measured on (default: the bundled example photos).

    Returns:
        A :class:`~vitviz.doctor.report.Diagnosis`; a file that cannot be read gives a report saying why,
        never an exception.

    Raises:
        ValueError: a path on a public host (:data:`vitviz.settings.PUBLIC_LOCAL_REFUSAL`).
    """
    dev = default_device() if device is None else torch.device(device)
    if isinstance(subject, LoadedModel):
        case = Case(subject.name, model=subject, layout=f"loaded model {subject.name} ({subject.origin or 'random weights'})")
        case.mae_expected = subject.family == "mae"
        tables = {}
    elif isinstance(subject, str) and subject in model_names():
        model = load_model(subject, device=dev)
        case = Case(subject, model=model, layout=f"registry model {subject}, loaded strictly from {model.origin}")
        case.mae_expected = model.family == "mae"
        tables = {}
    else:
        if settings.public():
            raise ValueError(settings.PUBLIC_LOCAL_REFUSAL)
        path = Path(subject).expanduser()
        case = Case(str(path), device=dev)
        if not keys.read(case, path):
            return Diagnosis(case.subject, case.layout, case.architecture, Diagnosis.ordered(case.findings))
        keys.architecture(case, path)
        tables = {}
        if case.la is not None and case.ck is not None:
            tables = preprocessing.tables(case)  # as the file has them, before any repair
            keys.load(case, path)
    model = case.model
    if model is not None and case.facts is None:
        case.architecture = model.spec.architecture
        case.add("ok", "format", "loaded strictly", f"The {case.layout}; every tensor loaded strictly.")
    preprocessing.check(case, tables)
    measurements: dict = {}
    panels: dict = {}
    if model is not None:
        case.twin = random_twin(model)
        ref = reference(dev, photos)
        own = model.name == "mae-tiny" and model.spec.local is None and not model.random_init
        m, twin = (ref if own else measure(model, photos)), measure(case.twin, photos)
        if m.mse75 is not None:
            targets.check(case, m)
        reconstruction.check(case, m, twin, ref)
        training.check(case, m, twin, ref)
        measurements = {"checkpoint": m.as_dict(), "random_twin": twin.as_dict(), "mae-tiny": ref.as_dict()}
        panels = reconstruction.panels(m, ref)
    return Diagnosis(case.subject, case.layout, case.architecture, Diagnosis.ordered(case.findings), measurements,
                     panels)
