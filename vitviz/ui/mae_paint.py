"""Painting the MAE tab's mask: a click or drag on the Original panel hides or shows patches.

Handlers, and their wiring on the MAE tab's binder (:mod:`vitviz.ui.mae_tab`); the stroke geometry
is :func:`vitviz.views.mae.paint_stroke`. While painting, the slider, seed and pattern are off
and the reconstruction follows the painted mask exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gradio as gr
import numpy as np

from ..views import mae as mae_view
from .binder import Binder
from .common import as_seed, require_image, user_errors
from .serve.costs import cost, model_cost


@dataclass(frozen=True)
class Stroke:
    """The painted mask after a stroke, and paint mode on."""

    painted: list
    paint: bool


@dataclass(frozen=True)
class Sliders:
    """Slider, seed and pattern: off while painting, the slider saying what is painted."""

    mask_ratio: Any
    seed: Any
    pattern: Any


@cost(model_cost(3))
@user_errors
def paint_stroke(stroke: str | None, painted: list | None, image: str | None, model_name: str, mask_ratio: float,
                 seed: float, pattern: str, paint: bool) -> Stroke:
    """One click or drag on the Original panel (points sent by :data:`vitviz.ui.urlstate.PAINT_JS`) -> the
    painted mask; paint mode on.

    Outside paint mode the mask on screen is the slider stop's (the page may have shown it
    without a server call, see :mod:`vitviz.ui.scrub`), so painting starts from that mask.
    """
    require_image(image)
    try:
        points = json.loads(stroke or "{}").get("points", [])
    except (ValueError, AttributeError):
        points = []
    if not paint or painted is None:
        painted = mae_view.stop_mask(model_name, mask_ratio, as_seed(seed), pattern)
    return Stroke(mae_view.paint_stroke(np.asarray(painted, dtype=bool), points).tolist(), True)


@cost(model_cost(3))
@user_errors
def start_paint(paint: bool, painted: list | None, image: str | None, model_name: str, mask_ratio: float,
                seed: float, pattern: str) -> list | None:
    """The user ticked "Paint the mask": painting starts from the slider stop on screen."""
    if not paint or image is None:
        return painted
    return mae_view.stop_mask(model_name, mask_ratio, as_seed(seed), pattern).tolist()


def paint_controls(paint: bool, painted: list | None) -> Sliders:
    """Slider, seed and pattern while painting: off, and the slider says what is painted."""
    if paint and painted is not None:
        return Sliders(gr.update(interactive=False, label=mae_view.painted_label(np.asarray(painted, dtype=bool))),
                       gr.update(interactive=False), gr.update(interactive=False))
    return Sliders(gr.update(interactive=True, label="Masking ratio"), gr.update(interactive=True),
                   gr.update(interactive=True))


def painted_controls(paint: bool, painted: list | None) -> Sliders:
    """:func:`paint_controls` after a new mask, only while painting (otherwise nothing changes)."""
    if not paint:
        return Sliders(gr.skip(), gr.skip(), gr.skip())
    return paint_controls(paint, painted)


def wire(ui: Binder, view: dict) -> None:
    """Painting on the MAE tab: a click or drag on the Original panel (``ui.stroke``, urlstate.PAINT_JS) sends
    its points; ticking the box starts from the slider stop on screen; then the view (``view``: its listener's
    arguments) redraws. While painting, slider, seed and pattern are off and the slider says how much is painted;
    the URL carries the mask (``ui.mask_code``, urlstate.MASK_JS). The slider's label follows the painted mask
    after each stroke or tick, not on every view's new mask (a round trip that changed nothing while not
    painting: every page load and server view made one)."""
    relabel = ui.bind(painted_controls, quick=False, queue=False)
    for painted in (ui.stroke.change(**ui.bind(paint_stroke, quick=False)),
                    ui.paint.input(**ui.bind(start_paint, outputs="painted", quick=False))):
        painted.then(**view)
        painted.then(**relabel)
    ui.paint.change(**ui.bind(paint_controls, quick=False, queue=False))
