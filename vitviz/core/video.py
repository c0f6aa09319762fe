"""Reading an untrusted video file's frames, within limits fit for a public host; writing one.

A video is read with PyAV (``av``), whose wheel bundles FFmpeg's libraries: it decodes in this
process, straight from the file, without an ``ffmpeg`` program and without writing any file.
Frames come one at a time (:func:`read_frames`), never all at once, so a clip costs the memory of
one frame however long it is.

Limits (stated once, checked from the header and again while decoding, since a header may lie):
the file is at most ``VITVIZ_MAX_UPLOAD`` bytes (the same limit as a photo), at most
:data:`MAX_SECONDS` long, at most :data:`MAX_FRAMES` frames, and a frame at most
:data:`MAX_WIDTH` x :data:`MAX_HEIGHT` pixels (either way round). A file over a limit, or one that
is not a video, raises :class:`~vitviz.errors.ImageError` with a sentence.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import settings
from ..errors import ImageError

#: Longest video accepted, in seconds.
MAX_SECONDS = 60.0
#: Most frames accepted (60 s at 60 frames a second).
MAX_FRAMES = 3600
#: Largest frame accepted, long side x short side (Full HD, either orientation).
MAX_WIDTH, MAX_HEIGHT = 1920, 1080
#: Container formats read (their usual file suffixes, for the sentences and the file picker).
SUFFIXES = (".mp4", ".webm", ".mov", ".mkv", ".avi", ".m4v", ".ogv")


def looks_like_video(head: bytes) -> bool:
    """True when ``head`` (a file's first 12 bytes or more) starts like a container :func:`read_frames` reads:
    MP4, MOV or M4V (an ISO ``ftyp`` box), WebM or MKV (EBML), AVI (``RIFF????AVI ``) or Ogg."""
    return (head[4:8] == b"ftyp" or head.startswith((b"\x1aE\xdf\xa3", b"OggS"))
            or (head[:4] == b"RIFF" and head[8:12] == b"AVI "))


@dataclass(frozen=True)
class VideoInfo:
    """What a video file's header says.

    Attributes:
        width: frame width in pixels.
        height: frame height in pixels.
        fps: frames a second (the stream's average rate; 0 when the header does not say).
        seconds: length in seconds (0 when the header does not say).
        frames: frame count (the header's, else ``seconds * fps`` rounded; 0 when unknown).
        codec: the video codec's name (``h264``, ``vp9``, ``mpeg4``, ...).
    """

    width: int
    height: int
    fps: float
    seconds: float
    frames: int
    codec: str


@dataclass(frozen=True)
class VideoFrame:
    """One decoded frame.

    Attributes:
        index: the frame's number in the file (0, 1, ...).
        time: its presentation time in seconds from the start.
        rgb: ``(H, W, 3)`` uint8 RGB.
    """

    index: int
    time: float
    rgb: np.ndarray


def _av() -> Any:
    try:
        import av
    except ImportError:
        raise ImageError("reading a video needs PyAV, which is not installed here (pip install av)") from None
    return av


def _check_size(path: Path) -> None:
    try:
        size = path.stat().st_size
    except OSError:
        raise ImageError(f"no readable file at {os.fspath(path)!r}") from None
    limit = settings.max_upload_bytes()
    if size > limit:
        raise ImageError(f"the video file is {size / 1e6:.1f} MB; the limit is {limit / 1e6:.0f} MB")
    if size == 0:
        raise ImageError("the video file is empty")


def _check_frame_size(width: int, height: int) -> None:
    if width < 1 or height < 1:
        raise ImageError("the video's frames have no pixels")
    if max(width, height) > MAX_WIDTH or min(width, height) > MAX_HEIGHT:
        raise ImageError(f"the video is {width}x{height} pixels; the limit is {MAX_WIDTH}x{MAX_HEIGHT} "
                         "(Full HD, either way round): make it smaller first")


def _open(path: Path) -> tuple[Any, Any]:
    """The open container and its first video stream (the caller closes the container)."""
    av = _av()
    _check_size(path)
    try:
        container = av.open(os.fspath(path), mode="r")
    except Exception as exc:  # noqa: BLE001 - FFmpeg reports bad data as many error types
        raise ImageError("this file is not a video vitviz can read (MP4, WebM, MOV, MKV, AVI with a common "
                         f"codec: H.264, VP8, VP9, AV1, MPEG-4) ({type(exc).__name__})") from None
    if not container.streams.video:
        container.close()
        raise ImageError("this file has no video track")
    return container, container.streams.video[0]


def _info(container: Any, stream: Any) -> VideoInfo:
    rate = stream.average_rate or stream.guessed_rate
    fps = float(rate) if rate else 0.0
    if stream.duration is not None and stream.time_base is not None:
        seconds = float(stream.duration * stream.time_base)
    elif container.duration is not None:
        seconds = container.duration / 1_000_000  # microseconds (av.time_base)
    else:
        seconds = 0.0
    frames = int(stream.frames) or round(seconds * fps)
    return VideoInfo(int(stream.codec_context.width), int(stream.codec_context.height), fps, seconds, frames,
                     str(stream.codec_context.name))


def _check_info(info: VideoInfo) -> None:
    _check_frame_size(info.width, info.height)
    if info.seconds > MAX_SECONDS:
        raise ImageError(f"the video is {info.seconds:.0f} s long; the limit is {MAX_SECONDS:.0f} s: cut it first")
    if info.frames > MAX_FRAMES:
        raise ImageError(f"the video has {info.frames} frames; the limit is {MAX_FRAMES}")


def probe(path: str | os.PathLike) -> VideoInfo:
    """Read a video file's header and check it against the limits, decoding no frame.

    Raises:
        ImageError: no such file, not a video, or over a limit (the sentence says which).
    """
    container, stream = _open(Path(path))
    try:
        info = _info(container, stream)
    finally:
        container.close()
    _check_info(info)
    return info


def _scaled(width: int, height: int, short_side: int | None) -> tuple[int, int]:
    """The size a frame is decoded at: its shorter side ``short_side`` (never larger than the file's)."""
    if short_side is None or min(width, height) <= short_side:
        return width, height
    scale = short_side / min(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def read_frames(path: str | os.PathLike, short_side: int | None = None) -> Iterator[VideoFrame]:
    """Decode a video's frames in order, one at a time; the file is closed when the iteration ends or stops.

    Args:
        path: the video file.
        short_side: decode each frame scaled so that its shorter side is this many pixels (FFmpeg's
            scaler, while converting to RGB: cheaper than decoding full size and resizing); None keeps
            the file's size. A frame is never enlarged.

    Yields:
        :class:`VideoFrame` with ``rgb`` of shape ``(H, W, 3)`` uint8.

    Raises:
        ImageError: not a video, over a limit (checked from the header first, then for every frame), or
            data that stops decoding part way.
    """
    container, stream = _open(Path(path))
    try:
        _check_info(_info(container, stream))
        stream.thread_type = "AUTO"
        start: float | None = None
        index = 0
        try:
            for frame in container.decode(stream):
                _check_frame_size(frame.width, frame.height)
                t = float(frame.time) if frame.time is not None else index / (float(stream.average_rate or 0) or 25.0)
                start = t if start is None else start
                if t - start > MAX_SECONDS or index >= MAX_FRAMES:
                    raise ImageError(f"the video runs past {MAX_SECONDS:.0f} s or {MAX_FRAMES} frames, the limits")
                w, h = _scaled(frame.width, frame.height, short_side)
                rgb = frame.to_ndarray(format="rgb24", width=w, height=h)
                yield VideoFrame(index, t - start, rgb)
                index += 1
        except ImageError:
            raise
        except Exception as exc:  # noqa: BLE001 - FFmpeg's errors on corrupt data
            raise ImageError(f"the video's data is corrupt after frame {index} ({type(exc).__name__})") from None
        if index == 0:
            raise ImageError("the video has no frames")
    finally:
        container.close()


def write_video(path: str | os.PathLike, frames: Sequence[np.ndarray], fps: int = 10, codec: str = "mpeg4") -> Path:
    """Write RGB frames as a video file (the container from the suffix: ``.mp4``, ``.webm``, ...).

    Args:
        path: where to write.
        frames: ``(H, W, 3)`` uint8 RGB frames of one size, with an even width and height (4:2:0).
        fps: frames a second.
        codec: an FFmpeg encoder bundled with PyAV: ``mpeg4`` (fast), ``libx264``, ``libvpx`` (VP8),
            ``libvpx-vp9``.

    Returns:
        The path written.
    """
    av = _av()
    h, w = frames[0].shape[:2]
    if w % 2 or h % 2:
        raise ValueError(f"frames of {w}x{h}: a 4:2:0 video needs an even width and height")
    with av.open(os.fspath(path), mode="w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        for rgb in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return Path(path)
