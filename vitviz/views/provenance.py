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

from ..assets import example_images
from ..core.patches import pixel_to_patch
from ..mae.provenance import DecoderProvenance, check_patch, decoder_provenance
from ..models.loading import LoadedModel
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


def image_dependence(model: LoadedModel, p: DecoderProvenance, images: list[str] | None = None) -> dict:
    """How much the rollout map of ``p`` depends on the photo: the same patch under the same mask
    on each example photo, compared with ``p``'s map.

    Returns:
        ``{"photos": n, "r": [...], "visible": [...]}``: per other photo (one identical to ``p``'s
        image is skipped), the Pearson correlation of the two rollout maps over the visible cells,
        and that photo's rollout share on visible patches; ``r`` is empty when a map is constant.
    """
    ref = p.rollout_map()
    cells = ~np.isnan(ref)
    rs, vis = [], []
    for path in images if images is not None else example_images():
        q = decoder_provenance(model, path, patch=p.patch, mask=p.mask)
        if q.image.shape == p.image.shape and np.array_equal(q.image, p.image):
            continue
        a, b = ref[cells], q.rollout_map()[cells]
        if a.std() > 0 and b.std() > 0:
            rs.append(float(np.corrcoef(a, b)[0, 1]))
        vis.append(q.rollout_shares()["visible"])
    return {"photos": len(vis), "r": rs, "visible": vis}


def dependence_sentence(dep: dict, own_visible: float) -> str:
    """What :func:`image_dependence` measured, and what it means for this model."""
    if not dep["r"]:
        return ""
    r, vis = np.asarray(dep["r"]), np.asarray(dep["visible"] + [own_visible])
    text = (f"**Does the map depend on the photo?** The same patch under the same mask on the other "
            f"{len(r)} example photos: their rollout maps correlate with this one at r = {r.mean():.3f} on average "
            f"({r.min():.3f}–{r.max():.3f}), and {_pct(vis.min())}–{_pct(vis.max())} of the weight goes to visible "
            "patches. ")
    if r.mean() >= 0.9:
        text += ("For this model the mask tokens attend mostly by **position**, whatever the photo shows: the map "
                 "says where this decoder looks, not what in this picture it found.")
    else:
        text += "For this model the map changes with the photo: the decoder's attention depends on the content."
    return text


def provenance(p: DecoderProvenance, mask_tokens: bool = False, dependence: dict | None = None) -> ProvenanceView:
    """The view of a computed :class:`DecoderProvenance` (panel, words, numbers); ``dependence``
    (:func:`image_dependence`) adds its sentence and numbers."""
    others = p.mask.copy()
    others[p.patch] = False
    panel = provenance_grid(p.masked, p.layer_maps(mask_tokens), p.rollout_map(mask_tokens), p.patch, titles(p),
                            mask_cells=others if mask_tokens else None)
    text, summary = describe(p, mask_tokens), p.summary()
    if dependence is not None:
        sentence = dependence_sentence(dependence, p.rollout_shares()["visible"])
        text += "\n\n" + sentence if sentence else ""
        summary["image_dependence"] = dependence
    return ProvenanceView(panel, text, p.patch, summary)


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
    p = decoder_provenance(model, image, patch=rc, mask=rec.mask)
    return provenance(p, mask_tokens, image_dependence(model, p))


def click_view(image: Any, model_name: str, ratio: float, seed: int, pattern: str, painted: np.ndarray | None,
               x: float, y: float, size: float | None = None, mask_tokens: bool = False) -> ProvenanceView:
    """:func:`patch_view` of the patch under a click at ``(x, y)`` of a ``size``-wide reconstruction panel
    (default: the reconstruction's own side in pixels; ``size=1.0`` takes fractions of the panel)."""
    _, rec = result(image, model_name, ratio, seed, pattern, painted)
    rc = pixel_to_patch(x, y, rec.mask.shape, size or rec.original.shape[0])
    return patch_view(image, model_name, ratio, seed, pattern, painted, rc, mask_tokens)
