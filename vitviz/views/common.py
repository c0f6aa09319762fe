"""Helpers every view uses: checking what a person typed or dropped."""

from __future__ import annotations

import math
from typing import Any

from ..models.registry import LOCAL_SOURCE, RANDOM_SUFFIX, parse_choice

__all__ = ["RANDOM_SUFFIX", "as_int", "as_seed", "enlargement_note", "parse_choice", "require_image"]


def as_seed(value: Any) -> int:
    """A seed from a UI number: a non-negative integer or ``ValueError``."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"the seed must be a whole number, got {value!r}") from None
    if not math.isfinite(f) or f != int(f) or f < 0 or f >= 2**63:
        raise ValueError(f"the seed must be a whole number between 0 and 2^63-1, got {value!r}")
    return int(f)


def as_int(value: object, name: str, lo: int, hi: int) -> int:
    """A whole number in ``lo..hi`` from a UI or API value, or ``ValueError`` naming it and the range."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValueError(f"{name} is missing: give a whole number between {lo} and {hi}")
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number, got {value!r}") from None
    if f != f or f != int(f) or not lo <= f <= hi:
        raise ValueError(f"{name} must be a whole number between {lo} and {hi}, got {value!r}")
    return int(f)


class NoImage(ValueError):
    """No image was given (an empty image box: the page shows that already)."""


def require_image(image: Any) -> Any:
    """``image``, or :class:`NoImage` (a ``ValueError``) with a friendly sentence when none was given."""
    if image is None or (isinstance(image, str) and not image):
        raise NoImage("Drop an image first (or pick one of the examples).")
    return image


def enlargement_note(width: int, height: int, side: int, patch: int) -> str:
    """One sentence when a photo is smaller than the model's input and was enlarged to it, else ``""``.

    Args:
        width, height: the photo's size in pixels.
        side: the model's input side (the photo's shorter side is resized to it).
        patch: the model's patch size in pixels.
    """
    short = min(width, height)
    if short >= side or short < 1:
        return ""
    scale = side / short
    holds = patch / scale  # photo pixels across one patch
    text = (f"Your photo is {width}×{height} px; it was enlarged {scale:.1f}× to {side}×{side} px, so each "
            f"{patch}-px patch holds {holds:.1f}×{holds:.1f} of its pixels")
    return f"⚠️ {text}: the model sees the blur of the enlargement, not detail." if scale >= 2 else text + "."


#: The default model of the tabs whose lesson needs trained weights, where its weights are here.
TRAINED_DEFAULT = "dinov2-small"


def trained_default(choices: list[tuple[str, str]], fallback: str) -> str | None:
    """:func:`default_choice` preferring :data:`TRAINED_DEFAULT` when it can be loaded here (no download
    needed: its weights are on disk), else ``fallback`` (``mae-tiny``, which is embedded)."""
    from ..models.registry import get_spec
    from ..models.sources import find_weights

    try:
        here = find_weights(get_spec(TRAINED_DEFAULT)) is not None
    except Exception:  # noqa: BLE001 - a local oddity must not break building a tab
        here = False
    return default_choice(choices, TRAINED_DEFAULT if here else fallback)


def model_label(info: Any, label: str) -> str:
    """A picker's label for a model: ``label``, or for one of the starter's own checkpoints its name and
    source path (``mine (your checkpoint: /runs/mae/checkpoint-399.pth)``)."""
    source = getattr(info, "source", "")
    return f"{info.name} ({source})" if source.startswith(LOCAL_SOURCE) else label


def default_choice(choices: list[tuple[str, str]], preferred: str | None) -> str | None:
    """A picker's starting value: ``preferred`` when it is among the ``(label, value)`` choices, else
    the first choice, else None (no choices)."""
    values = [value for _, value in choices]
    return preferred if preferred in values else (values[0] if values else None)
