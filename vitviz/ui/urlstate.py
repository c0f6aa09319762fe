"""The browser's half of the shareable URL: scripts that write the view into the address bar as controls change.

What a URL means, read on the server when the page loads, is :mod:`vitviz.views.urlstate`
(``?tab=mae&model=mae-tiny&ratio=0.6&seed=3&pattern=block``, ``&mask=14x14.<hex>``, ...).
"""

from __future__ import annotations

import re

from . import js

#: Browser code run on every control change of the MAE and BEiT tabs: (model, ratio, seed, pattern) go into
#: the URL once the controls rest (``vitviz/ui/js/url_controls.js``).
WRITE_JS = js.read("url_controls")
#: Browser code run when the painted mask changes: ``mask=`` in the URL while painting, gone otherwise.
#: Its argument is :func:`vitviz.views.urlstate.encode_mask`'s text ("" when the mask is the slider's).
MASK_JS = js.read("url_mask")
#: Paint brush of the MAE tab (``js_on_load`` of a hidden ``gr.HTML``): a click or a drag on the
#: Original panel sends the points it crossed, as fractions of the image, in the component's value
#: (``{"points": [[x, y], ...], "t": time}``), which fires its ``change``; the server maps them to patches.
PAINT_JS = js.read("mae_paint")
#: Browser code run when the attention layer changes: writes ``layer`` into the URL.
LAYER_JS = js.read("url_layer")
#: Browser code run when the Ablate tab's model or heads switched off change: ``model`` and ``heads`` (none:
#: no ``heads=``) in the URL.
ABLATION_JS = js.read("url_ablation")


def tab_js(tab: str) -> str:
    """Browser code that records the selected tab in the URL (once the URL's own tab is open)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", str(tab)):
        raise ValueError(f"a tab id is lower-case letters, digits and _, got {tab!r}")
    return js.read("url_tab", tab=tab)


__all__ = ["ABLATION_JS", "LAYER_JS", "MASK_JS", "PAINT_JS", "WRITE_JS", "tab_js"]
