"""Client-side scrubbing: after a sweep, slider moves swap panels in the page, with no server call.

Every move of a slider that goes to the server costs Gradio's round trip (a queue
join, an event stream, four image downloads): about 100 ms on a 2-core machine even
when the server does nothing. Once a sweep has computed every stop, the page already
could know everything: this module ships it once and lets the browser do the rest.

- **Server** (:func:`build_payload`): the encoded PNG panels of every stop are
  concatenated into one *pack* file in Gradio's cache (one download, served as a
  static file, no Python handler), and a small JSON *payload* lists, per stop, each
  panel's byte range in the pack and the metrics line. It goes to the page through a
  hidden textbox (:func:`build`).
- **Browser** (:data:`LOAD_JS`): when the payload changes, the page downloads the pack
  once, cuts it into one ``blob:`` URL per panel and decodes them.
- **Moves** (:data:`MOVE_JS`, a JavaScript-only Gradio event on the slider's
  ``change``; :data:`PICK_JS` on the seed's and the pattern's): when the stop is in the
  payload, and the payload belongs to the current image, model, seed and pattern, and
  neither the painted mask nor a comparison is on, the handler returns the stop's panels
  and metrics as the outputs' new values; Gradio renders them like any server result, so
  component state and page always agree. Otherwise, with mae-tiny loaded in the page
  (``vitviz.inpage``, :mod:`vitviz.web`'s ``mae_tab.js``), the page computes the panels
  itself; otherwise it bumps a hidden counter (``scrub_request``) whose ``change``
  runs the server view (a new seed or pattern also bumps ``scrub_sweep``, whose
  ``change`` runs the sweep).
- **No stale panels**: each move decides synchronously on the slider's current value,
  in event order, so the last move wins. A server view still in flight from before
  the payload arrived could land after a newer client-side move; :data:`RESYNC_JS`
  runs after every server view and puts the slider's own stop back.

The panels are the server's own PNG files, byte for byte, so what the page shows for a
stop is exactly what the server path would show for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gradio as gr

from ..views.mae import NO_COMPARE
from ..views.mae_scrub import PANEL_KINDS, StopPanels, pack, payload_json
from . import js
from .binder import Binder
from .common import hidden, in_page
from .serve import files

def build_payload(key: Mapping[str, Any], stops: Sequence[StopPanels], cache_dir: str) -> str:
    """Pack every stop's panel files into one file in Gradio's cache folder ``cache_dir`` (served to the page,
    deleted by Gradio's cleaner after ``VITVIZ_CACHE_SECONDS``) and describe it for the page
    (:func:`vitviz.views.mae_scrub.payload_json`; ``key``: the image's file path, model, seed, pattern)."""
    packed = pack(stops)
    path = files.write_once(Path(cache_dir) / f"scrub-{packed.ident}", "panels.bin", packed.blob).resolve()
    files.record(path)
    return payload_json(key, path, packed)


# --- Browser side: vitviz.scrub of the page module (vitviz/ui/js/page.js), called by these handlers ----------

#: Slider ``change``: the stop's panels from the page, or a bump of the request counter (server path).
#: Arguments: (ratio, image, model, seed, pattern, paint, compare, payload, request);
#: outputs: (masked, reconstruction, pasted, error, metrics, request). ``undefined`` leaves an output as is.
MOVE_JS = js.read("mae_inpage_move", kinds=list(PANEL_KINDS), no_compare=NO_COMPARE, sweep=False)
#: Seed or pattern ``change``: as :data:`MOVE_JS`, and the server path also bumps the sweep's counter.
PICK_JS = js.read("mae_inpage_move", kinds=list(PANEL_KINDS), no_compare=NO_COMPARE, sweep=True)
#: After a server view: if the page holds the slider's stop, show it (a late server answer never wins).
RESYNC_JS = js.read("scrub_resync", kinds=list(PANEL_KINDS), no_compare=NO_COMPARE)
#: Payload ``change``: download and cut the pack (or forget the old one when the payload is empty).
LOAD_JS = js.read("scrub_load", kinds=list(PANEL_KINDS))
#: Image, model, seed or pattern ``change``: the page's stops no longer apply (the payload is emptied).
FORGET_JS = js.read("scrub_forget")


def build(ui: Binder) -> None:
    """Create the hidden components of client-side scrubbing on the MAE tab's binder, inside the caller's Blocks
    context (kept in the page, not shown):

    - ``ui.payload``: hidden textbox holding :func:`build_payload`'s JSON (empty: none);
    - ``ui.scrub_request``: hidden counter; a ``change`` means "this move needs the server";
    - ``ui.scrub_sweep``: hidden counter; a ``change`` means "this seed or pattern needs the server's sweep".
    """
    ui.payload = hidden(gr.Textbox, "", "mae-scrub-payload")
    ui.scrub_request = hidden(gr.Number, 0, "mae-scrub-request")
    ui.scrub_sweep = hidden(gr.Number, 0, "mae-scrub-sweep")


def wire(ui: Binder, panels: Sequence[gr.components.Component], forget_on: Sequence[Any]
         ) -> list[gr.components.Component]:
    """Attach the browser-side handlers to the MAE tab's binder: :func:`build`'s components, the ``mask_ratio``
    slider, the ``metrics`` and the guards ``image``, ``model_name``, ``seed``, ``pattern``, ``paint``,
    ``compare_name`` (a change of the seed or the pattern is decided in the page like a slider move).

    Args:
        ui: the MAE tab's binder.
        panels: the four ratio-dependent image outputs, in :data:`PANEL_KINDS` order.
        forget_on: triggers (``component.change`` methods) after which the page's stops no longer apply.

    Returns:
        The inputs of :data:`RESYNC_JS` (for ``.then(None, inputs, outputs, js=RESYNC_JS)``
        after the server view); its outputs are ``[*panels, ui.metrics, ui.scrub_request]``.
    """
    inputs = ui.components(("mask_ratio", "image", "model_name", "seed", "pattern", "paint", "compare_name",
                            "payload", "scrub_request", "scrub_sweep"))
    outputs = [*panels, ui.metrics, ui.scrub_request, ui.scrub_sweep]
    in_page(ui.mask_ratio.change, inputs, MOVE_JS, outputs, show_progress="hidden")
    in_page([ui.seed.change, ui.pattern.change], inputs, PICK_JS, outputs, show_progress="hidden")
    in_page(ui.payload.change, [ui.payload], LOAD_JS, show_progress="hidden")
    in_page(list(forget_on), None, FORGET_JS, ui.payload, show_progress="hidden")
    return inputs
