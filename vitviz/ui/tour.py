"""The guided tour's bar: a Start button in the page header; the page module's part ``vitviz/ui/js/tour.js``
walks the steps (its header says how), with Back, Next and End.

The steps are data (:mod:`vitviz.views.tour`), one ``[[step]]`` table each in ``vitviz/ui/helptext/tour.toml``:
adding a step is adding a table. Steps name components by their ``elem_id``; controls are sliders, numbers,
radios and checkboxes (what the page can set like a person does).
"""

from __future__ import annotations

import functools
import html
from importlib import resources

import gradio as gr

from ..views.tour import Step, available, check, parse_steps, steps_json


@functools.lru_cache(maxsize=None)
def default_steps() -> tuple[Step, ...]:
    """The tour, in order: the steps of ``vitviz/ui/helptext/tour.toml`` (package data,
    :func:`vitviz.views.tour.parse_steps`)."""
    return parse_steps((resources.files("vitviz.ui.helptext") / "tour.toml").read_text(encoding="utf-8"))


def steps_here() -> tuple[Step, ...]:
    """The tour's steps this host can show (:func:`vitviz.views.tour.available`)."""
    return available(default_steps())


def build(tab_ids: tuple[str, ...], steps: tuple[Step, ...] | None = None) -> gr.HTML:
    """The tour bar (call in the page header): a Start button; the page module runs the steps.

    Args:
        tab_ids: the app's tab ids (each step must open one of them).
        steps: the tour (default: :func:`steps_here`, the steps this host can show, which the page module
            carries: :func:`vitviz.ui.js.module`); given steps are written into the bar (``data-steps``).
    """
    given = steps is not None
    steps = steps_here() if steps is None else steps
    check(steps, tab_ids)
    data = f' data-steps="{html.escape(steps_json(steps), quote=True)}"' if given else ""
    bar = (f'<div class="vitviz-tour"{data}>'
           f'<button type="button" class="vitviz-tour-start" id="tour-start" title="{len(steps)} steps, one idea each">'
           'Guided tour &#9656;</button></div>')
    return gr.HTML(bar, elem_id="tour", elem_classes=["vitviz-secondary"], padding=False)
