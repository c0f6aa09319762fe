"""Helpers shared by the tabs: turning library errors into messages for people (and, from
:mod:`vitviz.views.memo`, keeping the outputs of deterministic views for the next visitor)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import gradio as gr

from ..assets import example_images
from ..errors import ImageError, ModelUnavailable
from ..models.costs import Declared, cost
from ..models.runner import pause_point
from ..views.common import NoImage, as_seed, require_image
from ..views.memo import memo_view

__all__ = ["as_seed", "example_images", "fit_slider", "handler", "help_text", "hidden", "in_page", "memo_view",
           "panel", "picture", "quiet_errors", "report", "require_image", "section", "shown_if", "shown_once",
           "signal", "user_errors"]

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("vitviz.ui")


#: Longest message shown to a person (a 30 MB model name once came back as a 30 MB error).
MESSAGE_CHARS = 400
#: Longest user text quoted in the log.
LOG_CHARS = 200


#: What every view's picture shares: a uint8 RGB array from a view, sent as PNG, not editable, downloadable.
PICTURE: dict[str, Any] = dict(type="numpy", format="png", interactive=False, buttons=["download"])


def picture(label: str, elem_id: str, **kwargs: Any) -> gr.Image:
    """A view's picture (:data:`PICTURE`); ``kwargs`` go to ``gr.Image`` (``height``, ``show_label``...)."""
    return gr.Image(label=label, elem_id=elem_id, **{**PICTURE, **kwargs})


def panel(label: str, elem_id: str, **kwargs: Any) -> gr.Image:
    """A large view's picture: :func:`picture` with a fullscreen button beside the download."""
    return picture(label, elem_id, **{"buttons": ["download", "fullscreen"], **kwargs})


def help_text(text: str, **kwargs: Any) -> gr.Markdown:
    """Help prose (class ``vitviz-help``: hidden in the presenter layout); ``kwargs`` go to ``gr.Markdown``."""
    return gr.Markdown(text, elem_classes=["vitviz-help"], **kwargs)


def section(title: str, *texts: str) -> None:
    """A section of a tab: its heading (Markdown, ``### ...``), then each of ``texts`` (its help) as its own
    block below it."""
    for text in (title, *texts):
        gr.Markdown(text)


def fit_slider(value: float | None, low: int, high: int, default: int | None = None, **kwargs: Any) -> dict:
    """A slider's update for its new range ``low`` .. ``high`` (a new model's layers or heads): its value kept where
    it fits (rounded, then clamped), ``default`` (else ``low``) when it has none; ``kwargs`` update more props."""
    given = (low if default is None else default) if value is None else int(round(float(value)))
    return gr.update(maximum=high, value=min(max(low, given), high), **kwargs)


def shown_if(value: Any) -> dict:
    """An update that shows ``value``, or hides the component when it is None (a view only some models have)."""
    return gr.update(value=value, visible=value is not None)


def hidden(kind: type, value: Any, elem_id: str, **kwargs: Any) -> Any:
    """A component kept in the page but never shown (a ``gr.Number`` or ``gr.Textbox`` the page's code reads or
    writes; its ``change`` is a message between page and server)."""
    return kind(value, visible="hidden", elem_id=elem_id, interactive=False, show_label=False, container=False,
                **kwargs)


def signal(js_code: str, elem_id: str, **kwargs: Any) -> gr.HTML:
    """An empty component whose ``js_on_load`` code (``js_code``) writes its value from the page (a click read
    there): its ``change`` brings that value to the server."""
    return gr.HTML("", html_template="<span></span>", js_on_load=js_code, elem_id=elem_id, padding=False, **kwargs)


def in_page(triggers: Any, inputs: Any, js_code: str, outputs: Any = None, **kwargs: Any) -> Any:
    """An event run in the page alone (browser code ``js_code``: no server call, no API name)."""
    return gr.on(triggers, None, inputs, outputs, js=js_code, queue=False, api_visibility="private", **kwargs)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (with an ellipsis)."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def user_message(exc: BaseException) -> str | None:
    """The sentence a person reads for a library error; None for an unexpected error."""
    if isinstance(exc, gr.Error):
        return str(exc.message)
    if isinstance(exc, ImageError):
        return f"Image problem: {exc}"
    if isinstance(exc, ModelUnavailable):
        return f"Model unavailable: {exc}"
    if isinstance(exc, ValueError):
        return str(exc)
    return None


def report(where: str, exc: BaseException) -> str:
    """Log ``exc`` and return what the person reads.

    A user error (bad input, unavailable model) is one log line with the message cut to
    :data:`LOG_CHARS`; an unexpected error is logged with its traceback for the operator
    and reported generically.
    """
    message = user_message(exc)
    if message is None:
        log.error("unexpected error in %s", where, exc_info=exc)
        return "Something went wrong while computing this view; please try another input."
    log.info("user error in %s: %s", where, clip(message, LOG_CHARS).replace("\n", " "))
    return clip(message, MESSAGE_CHARS)


def user_errors(fn: F) -> F:
    """Map library errors to ``gr.Error`` so the user reads a sentence, not a traceback.

    The log gets one line per user error (no traceback); unexpected exceptions are
    logged with their traceback and reported generically; the server stays up. Its start and end are pause
    points (:func:`vitviz.models.runner.pause_point`), where a host may let another visitor's call run first.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            pause_point()
            out = fn(*args, **kwargs)
            pause_point()
            return out
        except Exception as exc:  # noqa: BLE001 - every failure becomes a message
            raise gr.Error(report(fn.__name__, exc), print_exception=False) from None

    return wrapper  # type: ignore[return-value]


def handler(c: Declared) -> Callable[[F], F]:
    """A tab's event handler: its cost class (:func:`vitviz.models.costs.cost`, fixed or computed from the inputs)
    around :func:`user_errors` (library errors as sentences)."""

    def mark(fn: F) -> F:
        return cost(c)(user_errors(fn))

    return mark


def shown_once(cleared: Callable[[str], Any]) -> Callable[[F], F]:
    """For the listener that reports a trigger's problems on the page: a user error becomes
    one warning toast and ``cleared(message)`` as the outputs (panels emptied, the message
    where the numbers were), never Gradio's "Error" badges above stale results.

    A missing image (:class:`~vitviz.views.common.NoImage`: the box is empty, cleared by the person or
    emptied by a refused upload, whose refusal was the message) is said in place only, with no toast."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a message
                message = report(fn.__name__, exc)
                if not isinstance(exc, NoImage):
                    gr.Warning(message)
                return cleared(message)

        return wrapper  # type: ignore[return-value]

    return decorate


def quiet_errors(fallback: Callable[[], Any]) -> Callable[[F], F]:
    """For a listener that shares its trigger with one that reports: on an error, log it and
    return ``fallback()`` without a toast, so a person sees each problem once."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the reporting listener shows user errors
                if user_message(exc) is None:
                    report(fn.__name__, exc)
                return fallback()

        return wrapper  # type: ignore[return-value]

    return decorate
