"""Painting the MAE tab's mask: a stroke of the brush on the Original panel, the slider stop it starts from, the
painted mask the page sends (checked: any visitor can send anything), and the slider's label while painting.

No UI code here: :mod:`vitviz.ui.mae_paint` wires it; the page applies a stroke by the same rule
(``vitviz/web/static/mae_core.js``) when mae-tiny runs there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..core.masking import make_mask
from ..core.patches import pixel_to_patch
from ..mae.sweep import stop_of
from ..models.loading import load_model
from .common import as_seed, require_image


def paint_stroke(mask: np.ndarray, points: list) -> np.ndarray:
    """Apply one stroke of the brush (a click or a drag) to a painted mask.

    Args:
        mask: ``(gh, gw)`` bool, True = hidden.
        points: ``(x, y)`` fractions of the panel (0..1, x right, y down), in the order the
            pointer passed them; malformed points are ignored.

    Returns:
        A new ``(gh, gw)`` bool: every patch the stroke crossed is hidden when the first one
        was visible, shown when it was hidden. One patch always stays visible.
    """
    m = np.array(mask, dtype=bool, copy=True)
    cells: list[tuple[int, int]] = []
    for p in points or ():
        try:
            x, y = p
            if not (0.0 <= float(x) <= 1.0 and 0.0 <= float(y) <= 1.0):
                continue
            cell = pixel_to_patch(x, y, m.shape, 1.0)
        except (TypeError, ValueError):
            continue
        if cell not in cells:
            cells.append(cell)
    if not cells:
        return m
    hide = not m[cells[0]]
    for cell in cells:
        m[cell] = hide
    if m.all():
        m[cells[-1]] = False  # keep at least one patch visible
    return m


#: The slider's label while the mask is painted (the page fills it: ``vitviz.mae.controls`` in the page module).
PAINTED_LABEL = ("Masking ratio: off while painting ({hidden} of {total} patches hidden, {share}); "
                 "untick “Paint the mask” to use the slider")


def painted_label(mask: np.ndarray) -> str:
    """The slider's label while the mask is painted: how much is hidden, and how to get the slider back."""
    m = np.asarray(mask, dtype=bool)
    return PAINTED_LABEL.format(hidden=int(m.sum()), total=m.size, share=f"{round(100 * m.mean())}%")


def painted_mask(paint: bool, painted: list | None) -> np.ndarray | None:
    """The painted mask as a ``(gh, gw)`` bool array while painting, else None (the slider's stop).

    The page sends it (any visitor can send anything): it must be rows of true/false values; the model
    checks its shape against its own grid (:func:`vitviz.core.masking.check_mask`).

    Raises:
        ValueError: not a grid of true/false values.
    """
    if not paint or painted is None:
        return None
    try:
        m = np.asarray(painted)
    except (TypeError, ValueError):
        m = None
    if m is None or m.ndim != 2 or m.size == 0 or m.dtype.kind not in "bi":
        raise ValueError("the painted mask must be rows of true/false values, one per patch; paint it again")
    return m.astype(bool)


def stop_mask(model_name: str, ratio: float, seed: int, pattern: str) -> np.ndarray:
    """The ``(gh, gw)`` bool mask of the slider stop on screen (the page may have shown it without a server call)."""
    model = load_model(model_name)
    return make_mask(model.architecture.config.grid, stop_of(ratio), seed, pattern).numpy()


@dataclass(frozen=True)
class Stroke:
    """The painted mask after a stroke or a tick (``(gh, gw)`` bool as lists), and whether painting is on."""

    painted: list | None
    paint: bool


def request_kind(request: str | None) -> str:
    """``stroke`` or ``tick`` from the page's request (``{"kind": ..., "n": ...}``); anything else is a stroke."""
    try:
        kind = json.loads(request or "{}").get("kind")
    except (ValueError, AttributeError):
        kind = None
    return "tick" if kind == "tick" else "stroke"


def after_request(request: str | None, stroke: str | None, painted: list | None, image: str | None, model_name: str,
                  mask_ratio: float, seed: float, pattern: str, paint: bool) -> Stroke:
    """The painted mask after a stroke or a tick the page left to the server.

    A stroke (``{"points": [[x, y], ...]}``, fractions of the panel) changes the painted mask and turns painting
    on; outside paint mode the mask on screen is the slider stop's, so painting starts from that mask. A tick
    starts from the slider stop on screen; an untick leaves the mask as it is.
    """
    if request_kind(request) == "tick":
        if not paint or image is None:
            return Stroke(painted, bool(paint))
        return Stroke(stop_mask(model_name, mask_ratio, as_seed(seed), pattern).tolist(), True)
    require_image(image)
    try:
        points = json.loads(stroke or "{}").get("points", [])
    except (ValueError, AttributeError):
        points = []
    shown = painted_mask(paint, painted)
    if shown is None:
        shown = stop_mask(model_name, mask_ratio, as_seed(seed), pattern)
    return Stroke(paint_stroke(shown, points).tolist(), True)
