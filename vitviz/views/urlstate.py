"""Shareable state: the page URL carries the tab, model, ratio, seed, pattern and layer.

``?tab=mae&model=mae-tiny&ratio=0.6&seed=3&pattern=block`` opens that view;
``&encoders=dinov2-small,mae-tiny&depth=last&pooling=avg`` the Pretraining tab's probes;
``&presenter=1`` turns on the teaching layout; ``&mask=14x14.<hex>`` restores a painted
mask (:func:`encode_mask`). Reading (here) is done on the server when the page loads (every
value validated, unknown ones ignored); writing is done in the browser whenever a control changes
(``vitviz.ui.urlstate``'s scripts and the page module, with ``history.replaceState``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.masking import MAX_RATIO, PATTERNS
from ..models.registry import model_names
from ..probing.features import POOLINGS
from .pretraining import DEPTHS as PROBE_DEPTHS


@dataclass(frozen=True)
class UrlState:
    """Validated values from the query string; ``None`` means "not given / invalid"."""

    tab: str | None = None
    model: str | None = None
    ratio: float | None = None
    seed: int | None = None
    pattern: str | None = None
    layer: int | None = None
    presenter: bool = False
    mask: np.ndarray | None = None  # a painted (gh, gw) bool mask, True = hidden
    # the Pretraining tab: encoders (feature keys), the share of the depth probed, the pooling
    encoders: tuple[str, ...] | None = None
    depth: str | None = None
    pooling: str | None = None
    # the Ablation & lens tab: heads switched off, "LAYER.HEAD, ..." (from 0)
    heads: str | None = None


def parse_query(params: Mapping[str, str], tabs: Collection[str] = ()) -> UrlState:
    """Validate query parameters; anything malformed is dropped, never raised.

    Args:
        params: the query string's parameters.
        tabs: the app's tab ids (:data:`vitviz.ui.app.TAB_IDS`); ``tab`` is kept only if it is one.
    """

    def number(key: str) -> float | None:
        try:
            v = float(params.get(key, "nan"))
        except (TypeError, ValueError):
            return None
        return v if math.isfinite(v) else None

    tab = params.get("tab")
    model = params.get("model")
    ratio = number("ratio")
    seed = number("seed")
    layer = number("layer")
    pattern = params.get("pattern")
    return UrlState(
        tab=tab if tab in tabs else None,
        model=model if model in model_names() else None,
        ratio=round(round(ratio / 0.05) * 0.05, 2) if ratio is not None and 0 <= ratio <= MAX_RATIO else None,
        seed=int(seed) if seed is not None and seed == int(seed) and 0 <= seed < 2**63 else None,
        pattern=pattern if pattern in PATTERNS else None,
        layer=int(layer) if layer is not None and layer == int(layer) and 0 <= layer < 1000 else None,
        presenter=params.get("presenter", "0").lower() in ("1", "true", "yes", "on"),
        mask=decode_mask(params.get("mask")),
        encoders=_encoders(params.get("encoders")),
        depth=params.get("depth") if params.get("depth") in PROBE_DEPTHS else None,
        pooling=params.get("pooling") if params.get("pooling") in POOLINGS else None,
        heads=_heads(params.get("heads")),
    )


def _heads(text: str | None) -> str | None:
    """``heads=11.2,8.4``: at most 64 LAYER.HEAD pairs (whether they exist is the tab's check)."""
    pairs = [p.strip() for p in (text or "")[:400].split(",") if p.strip()]
    if not pairs or len(pairs) > 64 or not all(re.fullmatch(r"\d{1,3}\.\d{1,3}", p) for p in pairs):
        return None
    return ", ".join(pairs)


def _encoders(text: str | None) -> tuple[str, ...] | None:
    """``encoders=dinov2-small,mae-tiny-random``: registry names, each optionally ``-random``; at most 12
    (which have features on disk is the tab's check)."""
    names = set(model_names())
    parts = [p for p in (text or "")[:400].split(",") if p]
    keys = tuple(dict.fromkeys(p for p in parts if p in names or (p.endswith("-random") and p[:-7] in names)))
    return keys[:12] or None


#: Largest painted grid the URL may carry (a 448-px image at patch 8 is 56 x 56).
MAX_MASK_SIDE = 64


def encode_mask(mask: np.ndarray) -> str:
    """A painted mask as a short URL value: ``"<gh>x<gw>.<hex>"``.

    The bits are the patches in row-major order (1 = hidden), four to a hexadecimal digit,
    the first patch in the digit's most significant bit, zero-padded at the end: a 14 x 14
    mask is 49 digits.
    """
    m = np.asarray(mask, dtype=bool)
    if m.ndim != 2 or m.size == 0:
        raise ValueError(f"a mask is a non-empty (rows, cols) grid, got shape {m.shape}")
    bits = np.concatenate([m.reshape(-1), np.zeros((-m.size) % 4, dtype=bool)]).reshape(-1, 4)
    digits = bits.astype(np.uint8) @ np.array([8, 4, 2, 1], dtype=np.uint8)
    return f"{m.shape[0]}x{m.shape[1]}." + "".join("0123456789abcdef"[int(d)] for d in digits)


def decode_mask(text: str | None) -> np.ndarray | None:
    """The mask of :func:`encode_mask`, or None for anything malformed (never raises)."""
    match = re.fullmatch(r"(\d{1,3})x(\d{1,3})\.([0-9a-f]+)", text or "")
    if not match:
        return None
    gh, gw, digits = int(match.group(1)), int(match.group(2)), match.group(3)
    if not (1 <= gh <= MAX_MASK_SIDE and 1 <= gw <= MAX_MASK_SIDE) or len(digits) != -(-gh * gw // 4):
        return None
    bits = np.array([[int(d, 16) >> k & 1 for k in (3, 2, 1, 0)] for d in digits], dtype=bool).reshape(-1)
    if bits[gh * gw:].any():
        return None  # padding must be zero
    return bits[: gh * gw].reshape(gh, gw)


def from_request(request: Any, tabs: Collection[str] = ()) -> UrlState:
    """:func:`parse_query` of a page request's query string (``request.query_params``; None: nothing given)."""
    return parse_query(dict(request.query_params) if request is not None else {}, tabs)
