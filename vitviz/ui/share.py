"""The share line: the page's link (its address) and what it carries.

The address bar always holds the view (``vitviz.ui.urlstate``: tab, controls, layer, painted mask)
and, when the photo shown is one of the examples, its name (``photo=chelsea``): opening the link
clicks that example. An uploaded photo stays in the visitor's browser and the server's cache; a
link cannot carry it, and the line says so. The page module keeps it current (``vitviz.share``
in ``vitviz/ui/js/page.js``); the button copies the link where the browser allows it.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import gradio as gr

from ..assets import example_images


def markup(photo: str | None) -> str:
    """The line: the copy button, what the link carries (kept current by the page), and the button's answer.

    Args:
        photo: the example every tab starts with (its name, no extension), or None.
    """
    carried = f"link opens photo {html.escape(photo)}" if photo else "link carries no photo"
    # each example's name and byte size: an upload of an example's own file is that example (the page module)
    known = html.escape(json.dumps({Path(p).stem: Path(p).stat().st_size for p in example_images()}))
    return (f'<div class="vitviz-share" data-examples="{known}">'
            '<button type="button" id="share-copy">Copy link</button>'
            f'<span class="vitviz-share-text">{carried}</span>'
            '<span class="vitviz-share-done" aria-live="polite"></span></div>')


def build(photo: str | None) -> gr.HTML:
    """The share line (call in the page header; the page module fills it and wires its button).

    Args:
        photo: the example every tab starts with (its name, no extension), or None.
    """
    return gr.HTML(markup(photo), elem_id="share", elem_classes=["vitviz-secondary"], padding=False)
