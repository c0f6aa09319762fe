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
import numpy as np

from ..views import provenance as pv
from ..views.common import as_int
from . import js
from .common import as_seed, endpoint, require_image, user_errors
from .serve.costs import cost, model_cost

PROMPT = ("Click a hidden patch (grey in *Masked input*) on *Reconstruction + visible* or *Reconstruction (raw)* "
          "to see where the decoder copied it from.")
HELP_PROVENANCE = (
    "**Where the decoder copied a patch from**: the decoder sees the encoded visible patches, the class token and, "
    "at every hidden position, the same learned *mask token* plus that position's embedding, so a mask token "
    "starts with no image content at all. The pixels predicted for a hidden patch are read off its mask token "
    "after the last decoder block; attention is the only way image content reaches it. Each tile shows that "
    "token's attention in one decoder layer (heads averaged) over the masked input; the last tile is the "
    "**rollout** through the whole decoder: each layer's attention plus the identity of the residual "
    "connection, renormalised and multiplied layer by layer. The table says how much went to visible patches, "
    "to other mask tokens (which hold only what they gathered themselves), to the token itself and to the class "
    "token. Attention shows where information *can* flow, not proof of what the prediction used, and a map "
    "that looks image-dependent may not be: under the table the app compares it with the same patch's map on "
    "the other example photos. In MAE a single decoder block is the least that can carry information from the "
    "visible tokens to the mask tokens; a deeper decoder lifted linear probing (65.5 with 1 block, 73.5 with 8) "
    "and left fine-tuning flat (84.8 / 84.9). *(MAE: He et al. 2021, §3, §4.1 and table 1a; attention "
    "rollout: Abnar & Zuidema 2020)*"
)
#: Browser code of a hidden component: a click on a reconstruction panel sends where it landed, as fractions of
#: the picture as drawn (object-fit: contain). Gradio's own ``select`` index assumes a picture is never drawn
#: larger than its pixels, and these 224-px panels usually are, so it names the wrong patch or none.
PICK_JS = js.read("mae_pick")  # vitviz.mae.pick in vitviz/ui/js/page.js
#: Browser-only: a new picture (any change of the metrics line, server view or slider scrub) clears the map.
CLEAR_JS = js.read("provenance_clear", prompt=PROMPT)
#: Page styles (added to the app's): the map's frame is shown only while it holds a map, so the page has no
#: empty frame before a click, after a visible patch or once a new picture has cleared it (any layout).
CSS = "#mae-provenance:not(:has(img)) { display: none !important; }\n"


@dataclass
class ProvenanceBox:
    """Handles on the provenance components."""

    panel: gr.Image
    text: gr.Markdown
    numbers: gr.JSON
    mask_tokens: gr.Checkbox
    row: gr.Number
    col: gr.Number
    pick: gr.HTML  # receives the clicks on the reconstruction panels (PICK_JS)

    @property
    def outputs(self) -> list[Any]:
        """What a provenance call fills: panel, words, numbers."""
        return [self.panel, self.text, self.numbers]


def _outputs(view: pv.ProvenanceView) -> tuple:
    return view.panel, view.text, view.summary


def _painted(paint: bool, painted: list | None) -> np.ndarray | None:
    return np.asarray(painted, dtype=bool) if paint and painted is not None else None


@cost(model_cost(2))
@user_errors
def pick_provenance(pick: str | None, image: str | None, model_name: str, ratio: float, seed: float,
                    pattern: str, paint: bool, painted: list | None, mask_tokens: bool) -> tuple:
    """A click on a reconstruction panel (``{"x", "y"}`` fractions of the picture, sent by :data:`PICK_JS`) ->
    the provenance of the patch under it, and its (row, col) (private)."""
    try:
        point = json.loads(pick or "{}")
        fx, fy = float(point["x"]), float(point["y"])
    except (ValueError, KeyError, TypeError):
        return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
    require_image(image)
    view = pv.click_view(image, model_name, ratio, as_seed(seed), pattern, _painted(paint, painted), fx, fy,
                         size=1.0, mask_tokens=bool(mask_tokens))
    return _outputs(view) + (view.patch[0], view.patch[1])


@cost(model_cost(1))
@user_errors
def redraw(image: str | None, model_name: str, ratio: float, seed: float, pattern: str, paint: bool,
           painted: list | None, row: float | None, col: float | None, mask_tokens: bool) -> tuple:
    """The checkbox "colour the other mask tokens too" redraws the patch on screen (none shown: nothing to do)."""
    if row is None or col is None or image is None:
        return gr.skip(), gr.skip(), gr.skip()
    view = pv.patch_view(image, model_name, ratio, as_seed(seed), pattern, _painted(paint, painted),
                         (int(row), int(col)), bool(mask_tokens))
    return _outputs(view)


#: The largest row / col an API call may name (a model's grid is checked by the view).
MAX_CELL = 1024


@cost(model_cost(1))
@user_errors
def run_provenance(image: str | None, model_name: str, mask_ratio: float, seed: float, pattern: str, row: float,
                   col: float, mask_tokens: bool = False) -> tuple:
    """Endpoint ``decoder_provenance``: (image, model, ratio, seed, pattern, row, col, mask tokens) -> panel,
    Markdown table, numbers (JSON). A visible patch gives no panel and a sentence saying so."""
    require_image(image)
    cell = (as_int(row, "row (of the hidden patch, from 0)", 0, MAX_CELL),
            as_int(col, "col (of the hidden patch, from 0)", 0, MAX_CELL))
    return _outputs(pv.patch_view(image, model_name, mask_ratio, as_seed(seed), pattern, None, cell,
                                  bool(mask_tokens)))


def build() -> ProvenanceBox:
    """Create the provenance components in the caller's layout context (below the reconstruction panels)."""
    with gr.Group(elem_id="mae-provenance-box"):
        text = gr.Markdown(PROMPT, elem_id="mae-provenance-text")
        panel = gr.Image(label="Decoder attention from the clicked mask token: per layer, then rolled out",
                         show_label=False, type="numpy", format="png", interactive=False, buttons=["download"],
                         elem_id="mae-provenance")  # the tiles carry their own titles
        with gr.Row():
            mask_tokens = gr.Checkbox(False, label="Colour the other mask tokens too (hatched)",
                                      elem_id="mae-provenance-mask-tokens", elem_classes=["vitviz-secondary"])
            row = gr.Number(None, precision=0, label="Row", visible=False, elem_id="mae-provenance-row")
            col = gr.Number(None, precision=0, label="Col", visible=False, elem_id="mae-provenance-col")
        with gr.Accordion("Provenance numbers (JSON)", open=False, elem_classes=["vitviz-secondary"]):
            numbers = gr.JSON(elem_id="mae-provenance-json")
        gr.Markdown(HELP_PROVENANCE, elem_classes=["vitviz-help"])
    pick = gr.HTML("", html_template="<span></span>", js_on_load=PICK_JS, elem_id="mae-provenance-pick",
                   padding=False, container=False)
    return ProvenanceBox(panel, text, numbers, mask_tokens, row, col, pick)


def wire(box: ProvenanceBox, controls: list[Any], metrics: gr.Markdown) -> None:
    """Connect the box: clicks on the reconstruction panels, the checkbox, the clearing, the named endpoint.

    Args:
        controls: ``[image, model, ratio, seed, pattern, paint, painted mask state]``, the view's inputs.
        metrics: the metrics line; any change means a new picture, so the map is cleared (in the page).
    """
    image, model, ratio, seed, pattern = controls[:5]
    box.pick.change(pick_provenance, [box.pick] + controls + [box.mask_tokens], box.outputs + [box.row, box.col],
                    api_visibility="private", trigger_mode="always_last", show_progress="minimal")
    box.mask_tokens.input(redraw, controls + [box.row, box.col, box.mask_tokens], box.outputs,
                          api_visibility="private", trigger_mode="always_last", show_progress="minimal")
    metrics.change(None, None, box.outputs + [box.row, box.col], js=CLEAR_JS, queue=False, api_visibility="private")
    endpoint(run_provenance, [image, model, ratio, seed, pattern, box.row, box.col, box.mask_tokens],
             box.outputs, api_name="decoder_provenance")
