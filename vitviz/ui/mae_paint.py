"""Painting the MAE tab's mask: a click or drag on the Original panel hides or shows patches.

A stroke, or a tick of "Paint the mask", is decided in the page first (:data:`PAINT_JS`, :data:`TICK_JS`):
with mae-tiny in the page (``vitviz.inpage``) the page applies the stroke as
:func:`vitviz.views.mae_paint.paint_stroke` does and reconstructs, with no server call; otherwise it sets :attr:`painted_request`, whose change runs
:func:`paint_request` here and then the tab's view. The painted mask is a hidden component (the page writes it
too), so every server view reads the mask on screen. While painting, the slider, seed and pattern are off and
the slider says what is painted (:data:`CONTROLS_JS`, in the page for both paths).
"""

from __future__ import annotations

from ..models.costs import model_cost
from ..views import mae_paint as mp
from ..views.mae import NO_COMPARE
from . import js
from .binder import Binder
from .common import handler, in_page

#: A stroke's change: the painted mask and panels computed in the page, or the server's request.
PAINT_JS = js.read("mae_inpage_paint", tick=False, no_compare=NO_COMPARE)
#: "Paint the mask" ticked or unticked: the same, starting from the slider stop on screen.
TICK_JS = js.read("mae_inpage_paint", tick=True, no_compare=NO_COMPARE)
#: Paint mode or the painted mask changed: slider, seed and pattern off while painting, or back on.
CONTROLS_JS = js.read("mae_paint_controls", label=mp.PAINTED_LABEL)


@handler(model_cost(3))
def paint_request(painted_request: str | None, stroke: str | None, painted: list | None, image: str | None,
                  model_name: str, mask_ratio: float, seed: float, pattern: str, paint: bool) -> mp.Stroke:
    """The server's side of a stroke (points sent by :data:`vitviz.ui.urlstate.PAINT_JS`) or a tick the page left
    to it (another model, a comparison, no WebAssembly): :func:`vitviz.views.mae_paint.after_request`."""
    return mp.after_request(painted_request, stroke, painted, image, model_name, mask_ratio, seed, pattern, paint)


def wire(ui: Binder, view: dict) -> None:
    """Painting on the MAE tab: a click or drag on the Original panel (``ui.stroke``, urlstate.PAINT_JS) sends
    its points; ticking the box starts from the slider stop on screen. Both are decided in the page
    (:data:`PAINT_JS`), which writes the mask and the panels (original, masked, reconstruction, pasted, error,
    metrics); the server's path (``ui.painted_request``) then runs the view (``view``: its listener's
    arguments). The URL carries the mask (``ui.mask_code``, urlstate.MASK_JS)."""
    inputs = ui.components(("stroke", "paint", "painted", "image", "model_name", "mask_ratio", "seed", "pattern",
                            "compare_name", "painted_request"))
    outputs = ui.components(("painted", "paint", "original", "masked", "reconstruction", "pasted", "error", "metrics",
                             "mask_code", "painted_request"))
    in_page(ui.stroke.change, inputs, PAINT_JS, outputs, show_progress="hidden")
    in_page(ui.paint.input, inputs, TICK_JS, outputs, show_progress="hidden")
    ui.painted_request.change(**ui.bind(paint_request, quick=False)).then(**view)
    in_page([ui.paint.change, ui.painted.change], [ui.paint, ui.painted], CONTROLS_JS,
            [ui.mask_ratio, ui.seed, ui.pattern], show_progress="hidden")
