"""The MAE tab's decoder provenance: click a hidden patch of a reconstruction, see where the decoder copied it from.

Wiring only: the panel, table and numbers come from :mod:`vitviz.views.provenance`. Nothing
here runs while the slider moves: the provenance is computed on a click (or by the named
endpoint ``decoder_provenance``), and a browser-only listener clears it when the picture
changes, with no server call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gradio as gr

from ..models.costs import model_cost
from ..views import mae_paint as mp
from ..views import provenance as pv
from ..views.common import as_int
from . import helptext, js
from .binder import Binder
from .common import as_seed, handler, help_text, in_page, picture, require_image, signal
PROMPT = ("Click a hidden patch (grey in *Masked input*) on *Reconstruction + visible* or *Reconstruction (raw)* "
          "to see where the decoder copied it from.")
#: Browser code of a hidden component: a click on a reconstruction panel sends where it landed, as fractions of
#: the picture as drawn (object-fit: contain). Gradio's own ``select`` index assumes a picture is never drawn
#: larger than its pixels, and these 224-px panels usually are, so it names the wrong patch or none.
PICK_JS = js.read("mae_pick")  # vitviz.mae.pick in vitviz/ui/js/page.js
#: Browser-only: a new picture (any change of the metrics line, server view or slider scrub) clears the map.
CLEAR_JS = js.read("provenance_clear", prompt=PROMPT)


@dataclass(frozen=True)
class Provenance:
    """What a provenance call fills: the map, its words, its numbers (endpoint ``decoder_provenance``)."""

    provenance: Any
    provenance_text: Any
    provenance_json: Any

    @classmethod
    def of(cls, view: pv.ProvenanceView) -> Provenance:
        return cls(view.panel, view.text, view.summary)


@dataclass(frozen=True)
class Picked(Provenance):
    """A clicked patch's provenance, and its (row, col)."""

    row: Any
    col: Any


@handler(model_cost(2))
def pick_provenance(pick: str | None, image: str | None, model_name: str, mask_ratio: float, seed: float,
                    pattern: str, paint: bool, painted: list | None, mask_tokens: bool) -> Picked:
    """A click on a reconstruction panel (``{"x", "y"}`` fractions of the picture, sent by :data:`PICK_JS`) ->
    the provenance of the patch under it, and its (row, col) (private)."""
    try:
        point = json.loads(pick or "{}")
        fx, fy = float(point["x"]), float(point["y"])
    except (ValueError, KeyError, TypeError):
        return Picked(*(gr.skip(),) * 5)
    require_image(image)
    view = pv.click_view(image, model_name, mask_ratio, as_seed(seed), pattern, mp.painted_mask(paint, painted),
                         fx, fy, size=1.0, mask_tokens=bool(mask_tokens))
    return Picked(**vars(Provenance.of(view)), row=view.patch[0], col=view.patch[1])


@handler(model_cost(1))
def redraw(image: str | None, model_name: str, mask_ratio: float, seed: float, pattern: str, paint: bool,
           painted: list | None, row: float | None, col: float | None, mask_tokens: bool) -> Provenance:
    """The checkbox "colour the other mask tokens too" redraws the patch on screen (none shown: nothing to do)."""
    if row is None or col is None or image is None:
        return Provenance(gr.skip(), gr.skip(), gr.skip())
    return Provenance.of(pv.patch_view(image, model_name, mask_ratio, as_seed(seed), pattern,
                                       mp.painted_mask(paint, painted), (int(row), int(col)), bool(mask_tokens)))


#: The largest row / col an API call may name (a model's grid is checked by the view).
MAX_CELL = 1024


@handler(model_cost(1))
def run_provenance(image: str | None, model_name: str, mask_ratio: float, seed: float, pattern: str, row: float,
                   col: float, mask_tokens: bool = False) -> Provenance:
    """Endpoint ``decoder_provenance``: (image, model, ratio, seed, pattern, row, col, mask tokens) -> panel,
    Markdown table, numbers (JSON). A visible patch gives no panel and a sentence saying so."""
    require_image(image)
    cell = (as_int(row, "row (of the hidden patch, from 0)", 0, MAX_CELL),
            as_int(col, "col (of the hidden patch, from 0)", 0, MAX_CELL))
    return Provenance.of(pv.patch_view(image, model_name, mask_ratio, as_seed(seed), pattern, None, cell,
                                       bool(mask_tokens)))


def build(ui: Binder) -> None:
    """Create the provenance components on the MAE tab's binder, in the caller's layout context (below the
    reconstruction panels)."""
    with gr.Group(elem_id="mae-provenance-box"):
        ui.provenance_text = gr.Markdown(PROMPT, elem_id="mae-provenance-text")
        # the tiles carry their own titles
        ui.provenance = picture("Decoder attention from the clicked mask token: per layer, then rolled out",
                                "mae-provenance", show_label=False)
        with gr.Row():
            ui.mask_tokens = gr.Checkbox(False, label="Colour the other mask tokens too (hatched)",
                                         elem_id="mae-provenance-mask-tokens", elem_classes=["vitviz-secondary"])
            ui.row = gr.Number(None, precision=0, label="Row", visible=False, elem_id="mae-provenance-row")
            ui.col = gr.Number(None, precision=0, label="Col", visible=False, elem_id="mae-provenance-col")
        with gr.Accordion("Provenance numbers (JSON)", open=False, elem_classes=["vitviz-secondary"]):
            ui.provenance_json = gr.JSON(elem_id="mae-provenance-json")
        help_text(helptext.read("mae", "provenance"))
    ui.pick = signal(PICK_JS, "mae-provenance-pick", container=False)


def wire(ui: Binder) -> None:
    """Clicks on the reconstruction panels, the checkbox, the clearing, the named endpoint. Any change of the
    metrics line means a new picture, so the map is cleared (in the page)."""
    ui.pick.change(**ui.bind(pick_provenance))
    ui.mask_tokens.input(**ui.bind(redraw))
    in_page(ui.metrics.change, None, CLEAR_JS, ui.components(("provenance", "provenance_text", "provenance_json", "row",
                                                              "col")))
    ui.endpoint(run_provenance, api_name="decoder_provenance")
