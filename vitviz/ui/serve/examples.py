"""The click on an example photo, an event Gradio creates for itself and vitviz chains onto: the contact
:data:`.contacts.EXAMPLE_CLICK` says why. ``gr.Examples`` (6.31, ``gradio/helpers.py``, ``Examples.create``) keeps,
as an attribute, the ``click`` event of its dataset that puts the example in the input box, where the shared
image (:mod:`vitviz.ui.shared_image`) publishes it.
"""

from __future__ import annotations

from typing import Any


def after_example_click(examples: Any, **listener: Any) -> None:
    """Run ``listener`` (the keyword arguments of a ``.then``: ``fn``, ``inputs``, ``outputs``, ``js``...)
    after ``examples`` (a ``gr.Examples``) has put a clicked example in its input box; nothing where the
    installed Gradio keeps no such event (the example then shows, but is not published)."""
    from .contacts import EXAMPLE_CLICK

    event = getattr(examples, EXAMPLE_CLICK.attribute, None)
    if event is not None:
        event.then(**listener)
