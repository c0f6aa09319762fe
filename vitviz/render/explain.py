"""Images of the Explain tab: the explanation maps of one image in a row of same-size panels.

Takes per-patch maps ``(gh, gw)`` (from :mod:`vitviz.explain.methods`) and returns
``uint8`` RGB arrays; each map is coloured to its own maximum (viridis, patches drawn as
blocks) over the photo from its minimum (dark) to its maximum (yellow), so the panels
compare *where* each method points, not how much.
"""

from __future__ import annotations

import numpy as np

from ._draw import panel_row
from .attention import heat_overlay

#: Side of one panel in pixels.
PANEL = 256


def explanation_row(image: np.ndarray, maps: list[tuple[str, np.ndarray]], size: int = PANEL,
                    labels: list[str] | None = None) -> np.ndarray:
    """One heat overlay per map, side by side, all ``size`` px, each titled.

    Args:
        image: ``(S, S, 3)`` uint8 model view.
        maps: ``(title, (gh, gw) map)`` pairs, in drawing order; each is drawn from its
            minimum to its maximum.
        size: side of each panel.
        labels: optional text along each panel's bottom edge (e.g. the deletion AUC).

    Returns:
        ``(24 + size, n * size + (n - 1) * 12, 3)`` uint8.
    """
    if not maps:
        raise ValueError("no maps to draw")
    texts = labels if labels is not None else [None] * len(maps)
    if len(texts) != len(maps):
        raise ValueError(f"{len(texts)} labels for {len(maps)} maps")
    shifted = [(title, np.asarray(heat, dtype=np.float64) - np.nanmin(heat)) for title, heat in maps]
    return panel_row([(title, heat_overlay(image, heat, size=size, label=text))
                      for (title, heat), text in zip(shifted, texts)])
