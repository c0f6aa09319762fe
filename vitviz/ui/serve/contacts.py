"""The few changes to Gradio that its public API cannot make: each named here, one line each, and tested.

Everything else vitviz needs from Gradio goes through its public API (listener keywords, ``launch``
options, ASGI middleware on the app it serves). These have no public way yet; each :class:`Contact` says
why and what Gradio would need to change, and ``tests/ui/test_serve_contacts.py`` checks each against the
installed Gradio by behaviour (``tools/gradio_contacts.py`` counts the lines of ``vitviz/`` that name
Gradio's internals: these).
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Contact:
    """One attribute of Gradio that vitviz replaces (or reads): where, by what, why, and what Gradio would need
    to change for it to go.

    Attributes:
        owners: dotted paths of the modules or classes that hold it.
        attribute: its name.
        make: ``"module:function"`` (in this package) taking the original and returning the replacement; None
            for an attribute that is only read (:data:`EXAMPLE_CLICK`).
    """

    owners: tuple[str, ...]
    attribute: str
    make: str | None
    why: str
    gradio_change: str


IMAGE_WRITER = Contact(("gradio.processing_utils",), "save_pil_to_cache", "image_cache:writer",
                       "Gradio rewrites an output image's file in place on every call: a visitor downloading it while "
                       "another request writes the same image got a cut-off picture; and it encodes PNGs at zlib "
                       "level 6 (4x slower)",
                       "write through a staging file and os.replace, as save_file_to_cache does; a PNG level option")
REQUEST_ERRORS = Contact(("gradio.Blocks",), "process_api", "errors:in_sentences",
                         "a failure in Gradio's own steps (a path it will not serve, too few values, an example's "
                         "index) reaches the client as error: null with a traceback in the log",
                         "an error hook, or a sentence for every failure in preprocessing and validate_inputs")
INPUT_CHECKS = Contact(tuple(f"gradio.{name}" for name in ("Number", "Slider", "Dropdown", "Radio", "Image")),
                       "preprocess", "inputs:checked",
                       "a number sent as text, a NaN seed or an image bomb fails inside Gradio's preprocess (error: "
                       "null); a slider whose range a handler changes (a layer of the chosen model) is checked "
                       "against the range it was built with",
                       "validator= run on the raw payload, and sliders checked against their updated range")
SESSIONS = Contact(("gradio.state_holder",), "SessionState", "contacts:slim_sessions",
                   "every new session copies the configuration of all ~270 blocks (config_values, for deep links "
                   "vitviz does not use): 1,000 kB per client-chosen session id against 28 kB without",
                   "a launch option that turns deep-link snapshots off, or snapshots built on demand")
EXAMPLE_CLICK = Contact(("gradio.Examples",), "load_input_event", None,
                        "a click on an example photo sends neither upload nor input: the shared image chains onto "
                        "the click Gradio makes, which it keeps only as this attribute",
                        "a public event of Examples that runs after a clicked example is shown")
#: Every contact.
CONTACTS = (IMAGE_WRITER, REQUEST_ERRORS, INPUT_CHECKS, SESSIONS, EXAMPLE_CLICK)

_LOCK = threading.Lock()
_INSTALLED: list[bool] = []


class _NoBlocks:
    """An app seen with no blocks: the new session's per-block configuration copy is empty; all else is the app's."""

    blocks: dict = {}

    def __init__(self, app: Any) -> None:
        self._app = app

    def __getattr__(self, name: str) -> Any:
        return getattr(self._app, name)


def slim_sessions(base: type) -> type:
    """A subclass of Gradio's session class ``base`` (:data:`SESSIONS`) whose new sessions copy no block's
    configuration. Those copies serve only Gradio's deep links (``/gradio_api/deep_link``), which vitviz does not
    use (shareable views are vitviz's own URL query, :mod:`vitviz.views.urlstate`); the blocks a handler replaces
    are still kept, as Gradio does, and the app keeps at most ``VITVIZ_MAX_SESSIONS`` sessions
    (``launch(state_session_capacity=...)``)."""

    class SlimSession(base):  # type: ignore[misc, valid-type]
        def __init__(self, blocks: Any) -> None:
            super().__init__(_NoBlocks(blocks))

    return SlimSession


def resolve(path: str) -> Any:
    """The module or class at a dotted ``path`` (``gradio.Blocks``, ``gradio.processing_utils``)."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def install() -> None:
    """Make every replacing contact's change (idempotent); the example click is read where it is used
    (:func:`.examples.after_example_click`)."""
    with _LOCK:
        if _INSTALLED:
            return
        for contact in CONTACTS:
            if contact.make is not None:
                module, _, function = contact.make.partition(":")
                make = getattr(importlib.import_module(f"{__package__}.{module}"), function)
                for owner in map(resolve, contact.owners):  # each replacement keeps the original as __wrapped__
                    original = getattr(owner, contact.attribute)
                    new = make(original)
                    new.__wrapped__ = original
                    setattr(owner, contact.attribute, new)
        _INSTALLED.append(True)
