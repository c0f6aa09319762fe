"""The guided tour's steps: one idea each, a tab opened with the right photo and controls.

No Gradio here. A step is data (:class:`Step`), parsed from the ``[[step]]`` tables of a TOML text
(:func:`parse_steps`; the app's are ``vitviz/ui/helptext/tour.toml``, read by :mod:`vitviz.ui.tour`);
:func:`available` keeps the steps whose models this host can have, :func:`check` refuses a step naming a
tab the app lacks, and :func:`steps_json` is what the page module (``vitviz/ui/js/tour.js``) walks.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict, dataclass, field

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


def parse_steps(text: str) -> tuple[Step, ...]:
    """The ``[[step]]`` tables of a TOML text, in order, each a :class:`Step` (``photo = false``: no photo)."""
    return tuple(Step(**{**s, "ready": tuple(s["ready"]), "controls": tuple(tuple(c) for c in s.get("controls", ())),
                         "photo": s.get("photo", PHOTO) or None, "needs": tuple(s.get("needs", ()))})
                 for s in tomllib.loads(text)["step"])


def available(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """The steps whose :attr:`Step.needs` can all be had on this host now
    (:func:`vitviz.models.sources.availability`: on disk, or a download allowed)."""
    from ..models.registry import get_spec
    from ..models.sources import availability

    return tuple(s for s in steps if all(availability(get_spec(n))[0] for n in s.needs))


def check(steps: tuple[Step, ...], tab_ids: tuple[str, ...]) -> None:
    """Refuse steps that name a tab the app lacks (a sentence naming the step).

    Raises:
        ValueError: a step's tab is not one of ``tab_ids``.
    """
    for i, step in enumerate(steps, start=1):
        if step.tab not in tab_ids:
            raise ValueError(f"tour step {i} ({step.title!r}) opens tab {step.tab!r}, which is not one of "
                             f"{', '.join(tab_ids)}")


def steps_json(steps: tuple[Step, ...]) -> str:
    """The steps as the page reads them (a JSON list of :class:`Step` fields)."""
    return json.dumps([asdict(s) for s in steps], ensure_ascii=False)
