"""The MAE decoder's provenance maps drawn on the masked input: one tile per decoder layer, then the rollout.

Arrays in, ``uint8`` RGB out (no models): the maps come from
:class:`vitviz.mae.provenance.DecoderProvenance`. Drawing is :func:`vitviz.render.attention.head_grid`
(viridis blocks over the image, each tile scaled to its own maximum, NaN cells grey and
hatched, the query outlined in red), so these tiles read like the Attention tab's.
"""

from __future__ import annotations

import numpy as np

from .attention import head_grid

#: Side of one tile in pixels.
TILE = 196
#: Most tiles in one row (a deeper decoder wraps).
MAX_COLS = 5


def provenance_grid(masked: np.ndarray, layer_maps: np.ndarray, rollout_map: np.ndarray, query: tuple[int, int],
                    titles: list[str], mask_cells: np.ndarray | None = None, tile: int = TILE,
                    max_cols: int = MAX_COLS) -> np.ndarray:
    """The decoder's attention from one mask token, per layer and rolled out, over the masked input.

    Args:
        masked: ``(S, S, 3)`` uint8, the encoder's input (hidden patches grey).
        layer_maps: ``(Ld, gh, gw)`` weights per decoder layer; NaN = not drawn as a source
            (the query's own cell always; the other hidden cells unless mask tokens are shown).
        rollout_map: ``(gh, gw)`` the same for the rollout.
        query: grid ``(row, col)`` of the hidden patch (outlined in red).
        titles: ``Ld + 1`` titles, the layers' then the rollout's.
        mask_cells: optional ``(gh, gw)`` bool, cells lightly hatched over their colour (the
            other mask tokens, when their weights are drawn).
        tile: side of each tile in pixels.
        max_cols: tiles per row at most.

    Returns:
        ``(rows * (20 + tile) + (rows - 1) * 6, cols * tile + (cols - 1) * 6, 3)`` uint8 on white, with
        ``cols = min(Ld + 1, max_cols)``.
    """
    maps = np.concatenate([np.asarray(layer_maps, dtype=np.float64),
                           np.asarray(rollout_map, dtype=np.float64)[None]], axis=0)
    if len(titles) != maps.shape[0]:
        raise ValueError(f"need {maps.shape[0]} titles (one per decoder layer and the rollout), got {len(titles)}")
    return head_grid(masked, maps, tile=tile, cols=min(maps.shape[0], max_cols), titles=list(titles), query=query,
                     hatch=mask_cells)
