"""The guided tour: one step per idea, each opening its tab with the right photo and controls.

The steps are data (:class:`Step`, read by :func:`default_steps` from ``vitviz/ui/helptext/tour.toml``);
the page walks them with the tour bar's Back and Next buttons (``vitviz/ui/js/tour.js``, part of the
page module ``window.vitviz``): a step opens its tab, shows the visitor's own photo where the step allows it
(:attr:`Step.own_photo`), else puts its example photo in the tab's box (unless the tab already shows it), sets its controls, waits for its own output (:attr:`Step.ready`: an element's text that
only this step's settings produce), brings its key visual into view and says what to notice.
Idle, the bar is its Start button, beside the tab buttons; while a step runs it is one line at
the top of the window (over the intro, never over the tab's views: a step's key visual is brought
into view below it), and ``End`` folds it back to its Start button.

Adding a step is one ``[[step]]`` table in ``tour.toml``. Steps name components by their ``elem_id``;
controls are sliders, numbers, radios and checkboxes (what the page can set like a person
does: the value typed or clicked, then the component's own events).
"""

from __future__ import annotations

import html
import json
import functools
import tomllib
from dataclasses import asdict, dataclass, field
from importlib import resources

import gradio as gr

#: The example photo every step shows unless it names another (``assets/examples/<name>.jpg``).
PHOTO = "chelsea"


@dataclass(frozen=True)
class Step:
    """One idea of the tour.

    Attributes:
        tab: the id of the tab it opens (``TAB_ID`` of a ``vitviz/ui/*_tab.py``).
        title: a few words, shown as "Step k of n · title".
        notice: what to notice, one or two sentences in plain text (the page never reads it as HTML).
        output: ``elem_id`` of the step's key visual: brought into view once the step is ready.
        ready: ``(elem_id, text)``: the step is ready when that element's text contains ``text``,
            which only the step's photo and controls produce (the tour's browser test waits on it).
        controls: ``(elem_id, value)`` pairs set in order: a slider or number gets the value, a radio
            the choice of that label, a checkbox the boolean.
        photo: the example photo's name (no ``.jpg``), or ``None`` for a tab without a photo.
        own_photo: whether the visitor's own photo (the one shown when the tour started: an upload or an
            example they picked) serves the step instead of :attr:`photo`; ``False`` where the step's lesson
            needs the example (the tour gives the visitor's photo back at the next step that allows it and at
            the end).
        needs: models whose weights the step's output needs (``needs = ["dinov2-small"]``); where one of them
            cannot be had, :func:`steps_here` leaves the step out rather than wait forever for its output.
    """

    tab: str
    title: str
    notice: str
    output: str
    ready: tuple[str, str]
    controls: tuple[tuple[str, float | int | str | bool], ...] = field(default_factory=tuple)
    photo: str | None = PHOTO
    own_photo: bool = True
    needs: tuple[str, ...] = field(default_factory=tuple)


@functools.lru_cache(maxsize=None)
def default_steps() -> tuple[Step, ...]:
    """The tour, in order: the ``[[step]]`` tables of ``vitviz/ui/helptext/tour.toml`` (package data), each a
    :class:`Step` (``photo = false``: no photo)."""
    text = (resources.files("vitviz.ui.helptext") / "tour.toml").read_text(encoding="utf-8")
    return tuple(Step(**{**s, "ready": tuple(s["ready"]), "controls": tuple(tuple(c) for c in s.get("controls", ())),
                         "photo": s.get("photo", PHOTO) or None, "needs": tuple(s.get("needs", ()))})
                 for s in tomllib.loads(text)["step"])


def steps_here(steps: tuple[Step, ...] | None = None) -> tuple[Step, ...]:
    """The steps (default: :func:`default_steps`) whose :attr:`Step.needs` can all be had on this host now
    (:func:`vitviz.models.sources.availability`: on disk, or a download allowed)."""
    from ..models.registry import get_spec
    from ..models.sources import availability

    return tuple(s for s in (default_steps() if steps is None else steps)
                 if all(availability(get_spec(n))[0] for n in s.needs))


def check(steps: tuple[Step, ...], tab_ids: tuple[str, ...]) -> None:
    """Refuse steps that name a tab the app lacks (a sentence naming the step).

    Raises:
        ValueError: a step's tab is not one of ``tab_ids``.
    """
    for i, step in enumerate(steps, start=1):
        if step.tab not in tab_ids:
            raise ValueError(f"tour step {i} ({step.title!r}) opens tab {step.tab!r}, which is not one of "
                             f"{', '.join(tab_ids)}")


def steps_json(steps: tuple[Step, ...] | None = None) -> str:
    """The steps as the page reads them (a JSON list of :class:`Step` fields; default: :func:`default_steps`)."""
    return json.dumps([asdict(s) for s in (default_steps() if steps is None else steps)], ensure_ascii=False)


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
