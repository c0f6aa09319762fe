"""The MAE tab's live picture: one camera (or video) frame reconstructed at the current controls.

No UI code here. A frame goes through the tab's own reconstruction path
(:func:`vitviz.mae.reconstruct.reconstruct`, masks from :func:`vitviz.core.masking.make_mask`),
not through the slider-stop cache: every frame is a new picture, and keeping it would only
push the still images' stops out of the cache budget.

The mask is the controls' mask -- the same ratio, seed and pattern give the same hidden patches
on every frame, so a teacher can point at one hidden patch while the picture moves -- unless a
new mask is asked for every frame (:func:`frame_seed`); a painted mask is used as painted.

The live picture can also show where a ViT's class token looks (:func:`attention_frame`,
``dinov2-small`` by default): its last layer's attention from the class token to every patch, the
mean of the heads over the frame and each head on its own, with no mask.

An uploaded video plays through the same :func:`live_frame`: :func:`video_frames` decodes it at the
model's input size (:mod:`vitviz.core.video`) and :func:`paced` hands out the frame due now -- at the
video's own pace, the frames whose time passed while the previous one was computing are dropped,
never queued -- or, without pacing, every frame in turn as fast as they compute.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.images import square_view
from ..core.video import VideoFrame, read_frames
from ..explain.attention import capture
from ..render.attention import head_grid, heat_overlay
from ..mae.reconstruct import reconstruct
from ..models.loading import load_model
from .mae import masked_panel

#: The model of the live class-token attention view: a ViT trained without labels, whose class token's
#: attention falls on the objects in the picture.
ATTENTION_MODEL = "dinov2-small"
#: Side of each head's tile in the live head grid, in pixels.
HEAD_TILE = 112

#: Seeds run from 0 to 2**63 - 1 (:func:`vitviz.core.masking.make_mask`); a fresh mask per frame wraps there.
SEED_SPAN = 2**63


@dataclass(frozen=True)
class LiveFrame:
    """What the live section shows for one frame.

    Attributes:
        masked: ``(S, S, 3)`` uint8, the frame with its hidden patches grey (patch grid drawn).
        pasted: ``(S, S, 3)`` uint8, the reconstruction with the visible pixels pasted back.
        hidden: patches hidden from the encoder.
        patches: patches of the grid (``gh * gw``).
        seed: the seed the mask was drawn with (None for a painted mask).
        masked_mse: MSE over the hidden patches, RGB in [0, 1].
        compute_ms: milliseconds the reconstruction and the two panels took on the server.
    """

    masked: np.ndarray
    pasted: np.ndarray
    hidden: int
    patches: int
    seed: int | None
    masked_mse: float
    compute_ms: float

    @property
    def hidden_share(self) -> float:
        """Share of the patches hidden, in [0, 1]."""
        return self.hidden / self.patches


def frame_seed(seed: int, number: int, fresh: bool) -> int:
    """The mask's seed for the ``number``-th frame of a stream: ``seed`` itself (the mask held fixed
    while the picture moves), or with ``fresh`` a different one for every frame (``seed + number``,
    wrapping within the valid seeds)."""
    return (seed + number) % SEED_SPAN if fresh else seed


def live_frame(model_name: str, frame: np.ndarray, ratio: float, seed: int, pattern: str, number: int = 0,
               fresh: bool = False, painted: np.ndarray | None = None) -> LiveFrame:
    """Reconstruct one frame at the current controls.

    Args:
        model_name: an MAE model name (``mae-tiny``).
        frame: ``(H, W, 3)`` uint8 RGB, any size (the model's square view is taken, as for a photo).
        ratio: share of patches hidden, in [0, 0.95].
        seed: the controls' seed.
        pattern: ``random``, ``block`` or ``grid``.
        number: the frame's number in its stream (0, 1, ...), used only with ``fresh``.
        fresh: draw a new mask for every frame instead of holding it fixed.
        painted: a painted ``(gh, gw)`` bool mask (True = hidden), used instead of ratio, seed and pattern.

    Returns:
        The two panels and their numbers.

    Raises:
        ImageError: not a picture. ValueError: a bad control (the sentence names the valid range).
    """
    model = load_model(model_name)
    start = time.perf_counter()
    if painted is not None:
        r = reconstruct(model, frame, mask=np.asarray(painted, dtype=bool))
        used = None
    else:
        used = frame_seed(seed, number, fresh)
        r = reconstruct(model, frame, ratio, used, pattern)
    masked = masked_panel(r)
    ms = (time.perf_counter() - start) * 1000.0
    return LiveFrame(masked, r.pasted, int(r.mask.sum()), r.num_patches, used, r.masked_mse, ms)


@dataclass(frozen=True)
class AttentionFrame:
    """What the live section shows for one frame in its class-token attention view.

    Attributes:
        mean: ``(S, S, 3)`` uint8, the frame as the model sees it with the last layer's class-token attention
            (mean of the heads) blended over it.
        heads: uint8 RGB grid of the same map for each head (titled tiles).
        model: the model's name.
        layers: the model's depth (the map is its last layer's).
        heads_count: heads in that layer.
        prefix_share: share of the class token's attention (mean of the heads) that went to prefix tokens
            (itself, registers) rather than to patches, in [0, 1].
        compute_ms: milliseconds the forward, the capture and the two panels took on the server.
    """

    mean: np.ndarray
    heads: np.ndarray
    model: str
    layers: int
    heads_count: int
    prefix_share: float
    compute_ms: float


def attention_frame(frame: np.ndarray, model_name: str = ATTENTION_MODEL) -> AttentionFrame:
    """Where the class token looks in one frame: the last layer's class-token attention, uncached (every
    frame is a new picture; keeping its maps would only push the still images' out of the cache).

    Args:
        frame: ``(H, W, 3)`` uint8 RGB, any size (the model's square view is taken, as for a photo).
        model_name: a ViT with a class token (``dinov2-small``).

    Raises:
        ModelUnavailable: the model's weights are not here. ValueError: a model without a class token.
    """
    model = load_model(model_name)
    start = time.perf_counter()
    view = square_view(frame, model.input_size)
    maps = capture(model, view)
    if not maps.layout.has("cls"):
        raise ValueError(f"{model_name} has no class token: pick a ViT with one (dinov2-small)")
    per_head = maps.query(-1, "cls")
    mean = heat_overlay(view, maps.query_mean(-1, "cls"), size=model.input_size)
    heads = head_grid(view, per_head, tile=HEAD_TILE, cols=-(-per_head.shape[0] // 2))
    share = sum(maps.prefix_share_mean(-1, "cls").values())
    ms = (time.perf_counter() - start) * 1000.0
    return AttentionFrame(mean, heads, model_name, maps.depth, per_head.shape[0], share, ms)


def attention_line(f: AttentionFrame) -> str:
    """The attention frame's numbers as one line of Markdown."""
    prefix = f" · {f.prefix_share:.0%} of it on the class token itself, not on patches"
    return (f"**{f.model}: where the class token looks**, last layer ({f.layers} of {f.layers}), mean of "
            f"{f.heads_count} heads and each head (each map scaled to its own maximum){prefix} · "
            f"server {f.compute_ms:.0f} ms")


def frame_line(f: LiveFrame) -> str:
    """The frame's numbers as one line of Markdown (hidden share, error, server time)."""
    mask = "painted mask" if f.seed is None else f"mask seed {f.seed}"
    return (f"**{f.hidden} of {f.patches} patches hidden ({f.hidden_share:.0%})** · {mask} · "
            f"hidden-patch MSE {f.masked_mse:.4f} · server {f.compute_ms:.0f} ms")


def video_frames(model_name: str, path: str | Path) -> Iterator[VideoFrame]:
    """The frames of a video file, decoded with their shorter side at the model's input size (the model
    sees a square of that size: decoding smaller costs less and changes nothing it sees).

    Raises:
        ImageError: not a video, or over a limit of :mod:`vitviz.core.video` (the sentence says which).
    """
    return read_frames(path, short_side=load_model(model_name).input_size)


@dataclass(frozen=True)
class Due:
    """A frame handed out by :func:`paced`.

    Attributes:
        frame: the frame.
        dropped: frames passed over so far (their time went by while earlier frames were computed).
    """

    frame: VideoFrame
    dropped: int


def paced(frames: Iterable[VideoFrame], pace: bool = True, clock: Callable[[], float] = time.monotonic,
          sleep: Callable[[float], None] = time.sleep) -> Iterator[Due]:
    """Hand out the frames to compute, one when the caller asks for the next (a generator's pull).

    With ``pace``, the video plays at its own speed from the first pull: the frame handed out is the
    last one whose time has come (frames passed over are dropped, never queued), waiting for the next
    frame's time when the caller is early. Without ``pace``, every frame in turn, at once.

    Args:
        frames: frames in time order (:func:`video_frames`).
        pace: keep the video's own speed, dropping frames; False: every frame, as fast as they compute.
        clock: seconds, monotonic (tests pass a fake one).
        sleep: waits that many seconds (tests pass a fake one).
    """
    it = iter(frames)
    start: float | None = None
    dropped = 0
    ahead = next(it, None)
    while ahead is not None:
        current, ahead = ahead, next(it, None)
        if not pace:
            yield Due(current, dropped)
            continue
        now = clock()
        start = now - current.time if start is None else start
        while ahead is not None and ahead.time <= now - start:  # its successor is due too: drop this one
            dropped += 1
            current, ahead = ahead, next(it, None)
        wait = current.time - (now - start)
        if wait > 0:
            sleep(wait)
        yield Due(current, dropped)
