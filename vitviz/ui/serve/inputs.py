"""Plain messages for inputs that would fail inside Gradio's own preprocessing.

Gradio converts each input before a handler runs. A number sent as a string, a NaN
seed, a non-image file or a header-only "image bomb" failed *there*, so the client
got ``error: null`` (a bare "Error" on the page) and the log a traceback. With :func:`checked` (a contact,
:mod:`.contacts`) around their ``preprocess``:

* numbers and sliders take finite numbers only ("seed: expected a number, got
  'abc'"); a whole-number box (``precision=0``) passes a fractional value through
  unrounded, so the handler's own check names it ("the seed must be a whole number,
  got 1.5") instead of Gradio silently rounding it; a slider whose range a handler changes
  (:func:`mark_dynamic`) passes any finite number to the handler, which checks it against the chosen model;
* an image given as a file path is not opened by Gradio at all: vitviz's reader
  checks it (the same message as the CLI, once, from the handler that reports);
  images Gradio must decode (``type="numpy"``/``"pil"``) are checked first with the
  same reader;
* choices (dropdowns, radios) echo at most a short prefix of a wrong value (a 30 MB
  model name returned a 30 MB error);
* anything else that fails in preprocessing becomes one sentence naming the control.

Every message is a ``gr.Error`` with ``print_exception=False``: no traceback in the log.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from typing import Any

log = logging.getLogger("vitviz.ui")

#: Longest echo of a user value in a message.
ECHO_CHARS = 60
#: Longest message text.
MESSAGE_CHARS = 400


def short(value: Any, limit: int = ECHO_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters."""
    text = repr(value) if not isinstance(value, str) or len(value) <= 4 * limit else repr(value[: 4 * limit])
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _label(block: Any) -> str:
    return str(getattr(block, "label", None) or getattr(block, "elem_id", None) or type(block).__name__.lower())


def user_error(message: str, where: str = "an input") -> Exception:
    """The ``gr.Error`` for a bad input (or request: ``where``), logged as one line (the message holds at most a
    short echo)."""
    import gradio as gr

    message = message[:MESSAGE_CHARS]
    log.info("user error in %s: %s", where, message.replace("\n", " "))
    return gr.Error(message, print_exception=False)


def _number(block: Any, payload: Any, original: Any) -> Any:
    if payload is None:
        return original(block, payload)
    if isinstance(payload, bool) or not isinstance(payload, (int, float)):
        raise user_error(f"{_label(block)}: expected a number, got {short(payload)}")
    if not math.isfinite(payload):
        raise user_error(f"{_label(block)}: expected a finite number, got {payload}")
    if getattr(block, "precision", None) == 0 and payload != int(payload):
        return float(payload)  # the handler's check says "whole numbers only"
    if getattr(block, DYNAMIC, False):
        # Gradio checks a slider against the bounds it was built with; a layer or head slider's maximum
        # follows the chosen model (a handler updates it), so the view checks the range (API clients could
        # not reach vit-base's layers 9-12 through a slider built for mae-tiny's 8)
        return payload
    return original(block, payload)


def _choice(block: Any, payload: Any, original: Any) -> Any:
    if isinstance(payload, str) and len(payload) > 200:
        raise user_error(f"{_label(block)}: {short(payload)} is not one of the choices")
    return original(block, payload)


def _image(block: Any, payload: Any, original: Any) -> Any:
    path = getattr(payload, "path", None)
    if path is None or getattr(payload, "url", None) and str(payload.url).startswith("data:"):
        return original(block, payload)
    if getattr(block, "type", None) == "filepath" and getattr(block, "image_mode", None) is None:
        return str(path)  # vitviz's reader checks the file in the handler
    from ...core.images import check_image_file
    from ...errors import ImageError

    try:
        check_image_file(path)
    except ImageError as exc:
        raise user_error(f"Image problem: {exc}") from None
    return original(block, payload)


#: Attribute set on sliders whose range a handler changes (:func:`mark_dynamic`).
DYNAMIC = "vitviz_dynamic_range"


def mark_dynamic(outputs: Any) -> None:
    """Mark the whole-number sliders (step 1) among an event's ``outputs``: a handler changes their range (a
    layer, head or block index whose range follows the model), so their values reach the handler unbounded,
    where the view checks them against the chosen model."""
    import gradio as gr

    for block in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
        if isinstance(block, gr.Slider) and block.step == 1:
            setattr(block, DYNAMIC, True)


CHECKS = {"Number": _number, "Slider": _number, "Dropdown": _choice, "Radio": _choice, "Image": _image}


def checked(original: Callable[..., Any]) -> Callable[..., Any]:
    """A component class's ``preprocess`` that checks the payload first (:data:`CHECKS`, by the class's name)
    and answers every failure with a sentence."""
    import gradio as gr

    check = CHECKS[original.__qualname__.split(".")[0]]  # the class whose preprocess it is

    @functools.wraps(original)
    def preprocess(self: Any, payload: Any) -> Any:
        try:
            return check(self, payload, original)
        except gr.Error as exc:
            if getattr(exc, "print_exception", True) is False:
                raise
            raise user_error(str(exc.message)) from None
        except Exception as exc:  # noqa: BLE001 - any conversion failure becomes a sentence
            raise user_error(f"{_label(self)}: this value cannot be used ({type(exc).__name__})") from None

    return preprocess
