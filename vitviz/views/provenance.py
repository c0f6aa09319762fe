"""What the MAE tab shows after a click on a hidden patch: where the decoder copied it from.

No UI code: turns a click (or a grid patch) and the tab's controls into the panel of
:func:`vitviz.render.provenance.provenance_grid`, a table of shares and sentences, from
:func:`vitviz.mae.provenance.decoder_provenance`. The mask is the reconstruction's on screen
(:func:`vitviz.views.mae.result`: the slider stop, or the painted mask), so the map always
belongs to the picture that was clicked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.patches import pixel_to_patch
from ..mae.provenance import DecoderProvenance, check_patch, decoder_provenance
from ..render.provenance import provenance_grid
from .mae import result

#: Column titles of the shares table, in :data:`vitviz.mae.provenance.SHARE_KINDS` order.
SHARE_TITLES: dict[str, str] = {"visible": "visible patches", "mask": "other mask tokens", "self": "itself",
                                "cls": "class token"}


@dataclass(frozen=True)
class ProvenanceView:
    """The provenance panel and its words.

    Attributes:
        panel: ``(H, W, 3)`` uint8 tiles (one per decoder layer, then the rollout), or None
            when there is nothing to draw (a visible patch).
        text: Markdown: the shares table, or the sentence saying the patch was visible.
        patch: the clicked grid ``(row, col)``.
        summary: :meth:`~vitviz.mae.provenance.DecoderProvenance.summary`, or None.
    """

    panel: np.ndarray | None
    text: str
    patch: tuple[int, int]
    summary: dict | None


def visible_sentence(patch: tuple[int, int]) -> str:
    """What a click on a visible patch says."""
    r, c = patch
    return (f"**This patch was visible; click a hidden one.** Patch (row {r}, col {c}) went to the encoder, so "
            "the decoder had nothing to fill in there. Hidden patches are the grey ones of *Masked input*.")


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def shares_table(p: DecoderProvenance) -> str:
    """The shares of every decoder layer and of the rollout, as a Markdown table (each row sums to 100%)."""
    kinds = list(SHARE_TITLES)
    lines = ["| | " + " | ".join(SHARE_TITLES[k] for k in kinds) + " |", "|---" * (len(kinds) + 1) + "|"]
    for i, s in enumerate(p.layer_shares()):
        lines.append(f"| decoder layer {i + 1} | " + " | ".join(_pct(s[k]) for k in kinds) + " |")
    s = p.rollout_shares()
    lines.append("| **rollout** | " + " | ".join(f"**{_pct(s[k])}**" for k in kinds) + " |")
    return "\n".join(lines)


def titles(p: DecoderProvenance) -> list[str]:
    """Tile titles: each decoder layer's, then the rollout's, with the share that went to visible patches."""
    out = [f"decoder layer {i + 1} · visible {_pct(s['visible'])}" for i, s in enumerate(p.layer_shares())]
    return out + [f"rollout · visible {_pct(p.rollout_shares()['visible'])}"]


def describe(p: DecoderProvenance, mask_tokens: bool) -> str:
    """The words under the panel: what was clicked, the shares table, how to read the tiles."""
    r, c = p.patch
    hidden, total = int(p.mask.sum()), int(p.mask.size)
    drawn = ("visible patches and the other mask tokens (hatched)" if mask_tokens
             else "the visible patches only (hidden cells are grey)")
    text = (f"**Mask token at row {r}, col {c}** ({hidden} of {total} patches hidden). Tiles colour {drawn}, each "
            "tile scaled to its own maximum; the clicked patch is outlined in red and never coloured: it was hidden, "
            "so it has no pixels to copy. Its weight on its own mask token is the *itself* column (in the rollout "
            "it includes the residual path).\n\n" + shares_table(p))
    if p.random_init:
        text += "\n\n⚠️ Random weights: these maps show the architecture, not learned attention."
    return text


def provenance(p: DecoderProvenance, mask_tokens: bool = False) -> ProvenanceView:
    """The view of a computed :class:`DecoderProvenance` (panel, words, numbers)."""
    others = p.mask.copy()
    others[p.patch] = False
    panel = provenance_grid(p.masked, p.layer_maps(mask_tokens), p.rollout_map(mask_tokens), p.patch, titles(p),
                            mask_cells=others if mask_tokens else None)
    return ProvenanceView(panel, describe(p, mask_tokens), p.patch, p.summary())


def patch_view(image: Any, model_name: str, ratio: float, seed: int, pattern: str, painted: np.ndarray | None,
               patch: tuple[int, int], mask_tokens: bool = False) -> ProvenanceView:
    """The provenance of a grid patch under the tab's controls (the mask of the reconstruction on screen).

    Args:
        painted: ``(gh, gw)`` bool painted mask, or None for the slider stop.
        patch: grid ``(row, col)``.

    Returns:
        A :class:`ProvenanceView`; for a visible patch, no panel and :func:`visible_sentence`.

    Raises:
        ValueError: bad controls, or a patch outside the grid. ImageError: unreadable image.
    """
    model, rec = result(image, model_name, ratio, seed, pattern, painted)
    rc = check_patch(patch, rec.mask.shape)
    if not rec.mask[rc]:
        return ProvenanceView(None, visible_sentence(rc), rc, None)
    return provenance(decoder_provenance(model, image, patch=rc, mask=rec.mask), mask_tokens)


def click_view(image: Any, model_name: str, ratio: float, seed: int, pattern: str, painted: np.ndarray | None,
               x: float, y: float, size: float | None = None, mask_tokens: bool = False) -> ProvenanceView:
    """:func:`patch_view` of the patch under a click at ``(x, y)`` of a ``size``-wide reconstruction panel
    (default: the reconstruction's own side in pixels; ``size=1.0`` takes fractions of the panel)."""
    _, rec = result(image, model_name, ratio, seed, pattern, painted)
    rc = pixel_to_patch(x, y, rec.mask.shape, size or rec.original.shape[0])
    return patch_view(image, model_name, ratio, seed, pattern, painted, rc, mask_tokens)
