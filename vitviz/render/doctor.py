"""The checkpoint doctor's reconstruction panels as one image: the same mask on the checkpoint and on mae-tiny."""

from __future__ import annotations

import numpy as np
from PIL import Image

from ._draw import panel_row

#: Side of each panel in the row (a 64-px test model is drawn as large as a 224-px one).
PANEL_SIDE = 224


def doctor_panels(panels: dict[str, np.ndarray], side: int = PANEL_SIDE) -> np.ndarray:
    """``{title: (H, W, 3) uint8}`` -> one labelled row, each panel resized to ``side`` (nearest: patches stay
    sharp). Returns ``(28 + side, n*side + gaps, 3)`` uint8; a blank ``(1, 1, 3)`` when there are no panels."""
    if not panels:
        return np.full((1, 1, 3), 255, dtype=np.uint8)
    row = [(t, np.asarray(Image.fromarray(np.asarray(a, dtype=np.uint8)).resize((side, side), Image.NEAREST)))
           for t, a in panels.items()]
    return panel_row(row, gap=10, title_height=28, font_size=18)
