"""Uploads checked at the door, parsed the way Gradio parses them, and budgets of disk per client address.

Gradio 6.31's ``/gradio_api/upload`` route streams a multipart body
through ``python_multipart.MultipartParser``; a part is a *file* when its
``Content-Disposition`` (read by ``parse_options_header``: any case, quoted or not) has a
``filename``, and every file part is written to disk -- those named ``files`` kept in the
cache, any other left in the upload folder, never cleaned. The earlier check counted the
bytes ``name="files"``, so ``name=files`` (unquoted) or ``NAME="files"`` slipped 50 files of
19 MB past it in one request. :func:`checked_upload` feeds the same parser with the same
callbacks and refuses, before Gradio writes anything:

* a second file part, a file part not named ``files``, or more than :data:`MAX_FIELDS` fields
  (HTTP 400);
* a file that does not start like a JPEG, PNG, WebP, GIF, BMP or TIFF, or like a video the MAE tab's live
  section plays (:func:`vitviz.core.video.looks_like_video`: MP4, MOV, WebM, MKV, AVI, Ogg) (HTTP 415);
* a body larger than one largest image plus :data:`SLACK_BYTES` (HTTP 413);
* an address over its disk budget (:class:`vitviz.ledger.DiskBudget`: ``VITVIZ_CLIENT_UPLOAD`` bytes and
  ``VITVIZ_CLIENT_FILES`` distinct files within ``VITVIZ_CACHE_SECONDS``, the time an upload stays on
  disk; ``VITVIZ_UPLOAD_DISK`` for all addresses together): HTTP 429. The same file sent again takes
  no more disk (Gradio stores it at a path named by its content and name) and is not charged again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.types import Message, Receive, Scope

from ... import settings
from ...core.video import looks_like_video
from ...ledger import DiskBudget

#: Form fields (parts without a file) an upload may carry; the page sends none.
MAX_FIELDS = 4
#: Bytes of multipart framing allowed beyond the largest image.
SLACK_BYTES = 64 * 1024

TOO_MANY_FILES = "Upload one image file per request."
NOT_AN_IMAGE = ("Upload an image file: JPEG, PNG, WebP, GIF, BMP or TIFF; or, in the live section, a video: MP4, "
                "MOV, WebM, MKV, AVI or Ogg (this file is none of these).")
TOO_LARGE = "This upload is larger than the largest image the app accepts."
#: How the image files vitviz reads begin (WebP: ``RIFF????WEBP``).
IMAGE_SIGNATURES = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"BM", b"II*\x00", b"MM\x00*")


class RefusedUpload(Exception):
    """A request refused before Gradio reads it further: ``status`` and the sentence the client gets."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def is_accepted_start(head: bytes) -> bool:
    """True when ``head`` (a file's first 12 bytes or more) starts like a JPEG, PNG, WebP, GIF, BMP or TIFF, or
    like a video the live section plays (same size cap, ``VITVIZ_MAX_UPLOAD``, and the same disk budgets)."""
    return (head.startswith(IMAGE_SIGNATURES) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")
            or looks_like_video(head))


BUDGET = DiskBudget()


def content_length(scope: Scope) -> int | None:
    """The request's declared ``Content-Length`` (None when absent or not a number)."""
    declared = Request(scope).headers.get("content-length", "")
    return int(declared) if declared.isdecimal() else None


def capped(scope: Scope, receive: Receive, limit: int, sentence: str) -> Receive:
    """``receive`` refusing (HTTP 413, ``sentence``) a body past ``limit`` bytes, declared or sent, before the
    application has buffered it."""
    declared = content_length(scope)
    if declared is not None and declared > limit:
        raise RefusedUpload(413, sentence)
    seen = [0]

    async def wrapped() -> Message:
        message = await receive()
        if message.get("type") == "http.request":
            seen[0] += len(message.get("body", b""))
            if seen[0] > limit:
                raise RefusedUpload(413, sentence)
        return message

    return wrapped


def checked_upload(scope: Scope, receive: Receive, address: str, exempt: bool,
                   repeated: Callable[[], Any] | None = None) -> Receive:
    """``receive`` wrapped so that an upload breaking the rules of the module's text raises
    :class:`RefusedUpload` before Gradio stores it (the disk budget is skipped for ``exempt`` addresses);
    ``repeated()`` is called when the file is one ``address`` left already (its charge given back)."""
    from python_multipart.multipart import MultipartParser, parse_options_header

    limit = settings.max_upload_bytes() + SLACK_BYTES
    receive = capped(scope, receive, limit, TOO_LARGE)
    declared = content_length(scope)
    media, params = parse_options_header(Request(scope).headers.get("content-type", ""))
    boundary = params.get(b"boundary") if media == b"multipart/form-data" else None
    state = {"files": 0, "fields": 0, "head": None, "header": b"", "value": b"", "disposition": b"",
             "error": None, "charged": False, "entry": None, "sha": None, "digest": None}

    def fail(status: int, message: str) -> None:
        if state["error"] is None:
            state["error"] = RefusedUpload(status, message)

    def on_part_begin() -> None:
        state["disposition"] = b""
        state["head"] = None

    def on_header_field(data: bytes, start: int, end: int) -> None:
        state["header"] += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        state["value"] += data[start:end]

    def on_header_end() -> None:
        if state["header"].lower() == b"content-disposition":
            state["disposition"] = state["value"]
        state["header"] = state["value"] = b""

    def on_headers_finished() -> None:
        _, options = parse_options_header(state["disposition"])
        if b"filename" in options:
            state["files"] += 1
            if state["files"] > 1 or options.get(b"name") != b"files":
                fail(400, TOO_MANY_FILES)
            state["head"] = b""
            state["sha"] = hashlib.sha256(options[b"filename"] + b"\0")  # Gradio's path: content and name
        else:
            state["fields"] += 1
            if state["fields"] > MAX_FIELDS:
                fail(400, TOO_MANY_FILES)

    def on_part_data(data: bytes, start: int, end: int) -> None:
        if state["sha"] is not None:
            state["sha"].update(data[start:end])
        head = state["head"]
        if head is not None and len(head) < 12:
            state["head"] = head + data[start:min(end, start + 12 - len(head))]
            if len(state["head"]) >= 12 and not is_accepted_start(state["head"]):
                fail(415, NOT_AN_IMAGE)

    def on_part_end() -> None:
        head = state["head"]
        if head is not None and len(head) < 12 and not is_accepted_start(head):
            fail(415, NOT_AN_IMAGE)
        state["head"] = None
        if state["sha"] is not None:
            state["digest"], state["sha"] = state["sha"].hexdigest(), None

    callbacks = {"on_part_begin": on_part_begin, "on_part_data": on_part_data, "on_part_end": on_part_end,
                 "on_header_field": on_header_field, "on_header_value": on_header_value,
                 "on_header_end": on_header_end, "on_headers_finished": on_headers_finished}
    parser = MultipartParser(boundary, callbacks) if boundary else None

    async def wrapped() -> Message:
        message = await receive()
        if message.get("type") != "http.request":
            return message
        if parser is not None:
            try:
                parser.write(message.get("body", b""))
            except Exception:  # noqa: BLE001 - Gradio's parser refuses the same body with its own message
                return message
        if state["error"] is not None:
            raise state["error"]
        if not state["charged"] and not exempt and (state["files"] or not message.get("more_body", False)):
            state["charged"] = True
            refusal, state["entry"] = BUDGET.charge(address, declared if declared is not None else limit)
            if refusal is not None:
                raise RefusedUpload(429, refusal)
        if state["entry"] is not None and state["digest"] is not None:
            if BUDGET.settle(address, state["entry"], state["digest"]) and repeated is not None:
                repeated()  # the same file again: its charge back
            state["entry"] = None
        return message

    return wrapped
