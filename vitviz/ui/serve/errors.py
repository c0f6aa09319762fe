"""One sentence, no traceback, for a request Gradio itself fails on before (or around) a vitviz handler.

Gradio 6.31 runs every event through one method of ``gr.Blocks``: inputs are checked
(``validate_inputs``: too few values), file payloads moved into the cache (a path it may not
serve, ``{"path": "/etc/passwd"}``, or a plain string where a file belongs), then the
handler. Failures there, and in Gradio's own handlers (an example table's loader given
index 999), are not ``gr.Error``: the client got ``{"error": null}`` (a bare "Error") and the
log ~24 traceback lines per call, and the ``/run/`` route answered HTTP 500. vitviz's handlers
turn their own errors into sentences (``ui.common.user_errors``); :func:`in_sentences` does the
same for everything else in that method (the contact :data:`.contacts.REQUEST_ERRORS`): a ``gr.Error`` naming the problem (with no
server path: :func:`.pageconfig.redact`), logged as one line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

#: Longest part of an exception's own text repeated to the client.
DETAIL_CHARS = 160


def sentence(exc: BaseException) -> str:
    """What a client reads for a request Gradio could not run (the exception's kind and its short text)."""
    from .pageconfig import redact, server_folders

    detail = " ".join(str(exc).split())[:DETAIL_CHARS]
    kind = type(exc).__name__
    if isinstance(exc, (IndexError, KeyError)):
        what = "an index or key that does not exist here"
    elif "path" in detail.lower() or "file" in detail.lower() or kind in ("InvalidPathError", "FileNotFoundError"):
        what = "a file this server does not serve or cannot read (upload the file first)"
    else:
        what = "values this endpoint cannot use"
    text = f"This request has {what} ({kind}{': ' + detail if detail else ''})."
    return redact(text, server_folders())


def in_sentences(original: Callable[..., Any]) -> Callable[..., Any]:
    """``original``, Gradio's method that runs an event (async), answering every failure that is not a
    ``gr.Error`` with :func:`sentence`; each run is counted by the door's admission while it lasts
    (:meth:`.admission.Admission.running`: from the inputs' checks to the outputs), and its handler sees whether
    its address is crowding (:data:`.admission.CROWDED`). A generator handler's event is run once per yield
    (the method's ``iterator`` is set from the second run on, and its answer's ``is_generating`` says whether
    another run follows): the admission counts the event once, until the run that ends the generator."""
    import gradio as gr

    from . import admission
    from .inputs import user_error

    admission.RUNS_COUNTED = True

    @functools.wraps(original)
    async def answering(self: Any, *args: Any, **kwargs: Any) -> Any:
        block_fn = kwargs.get("block_fn", args[0] if args else None)
        group = None if block_fn is None or isinstance(block_fn, int) else block_fn.concurrency_id  # its keyword
        continued = kwargs.get("iterator") is not None  # a generator's next yield
        try:
            with admission.ADMISSION.running(group, kwargs.get("event_id"), continued) as run:
                mark = admission.CROWDED.set(run.crowded)  # the handler's thread runs in a copy of this context
                try:
                    output = await original(self, *args, **kwargs)
                finally:
                    admission.CROWDED.reset(mark)
                run.goes_on = isinstance(output, dict) and bool(output.get("is_generating"))
                return output
        except gr.Error:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure outside a handler becomes a sentence
            raise user_error(sentence(exc), "a request") from None

    return answering
