"""The click on an example photo, an event Gradio creates for itself and vitviz chains onto.

Gradio contact: ``gr.Examples`` (6.31, ``gradio/helpers.py``, ``Examples.create``) answers a click on
an example with its dataset's ``click`` event, which puts the example in the input box, and keeps that
event as an attribute of the ``Examples`` object; it is not a public API. The box's own ``upload``
and ``input`` are not sent for an example, so the shared image (:mod:`vitviz.ui.shared_image`) listens
here to publish the example (a contact, :data:`.contacts.EXAMPLE_CLICK`); tests/ui/test_serve_contacts.py fails
if Gradio stops creating the event.
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
