"""The ONNX graph of mae-tiny that the browser runs, and the masks it is given.

The graph (``assets/models/mae-tiny.onnx``, written by ``tools/export_onnx.py``) maps

    image    float32 (1, 3, S, S)   normalised RGB (:func:`vitviz.core.images.normalize`)
    visible  int64   (K,)           visible patch indices, raster order
    -> pred  float32 (1, L, p*p*3)  per-patch predictions in the normalised input space

so a mask is an input: the page computes any ratio, seed, pattern or painted mask itself.
The page cannot run torch's generator, so the masks of the seeded patterns (``random``,
``block``) travel as tables: for each seed, the order in which patches are hidden
(:func:`hide_order`); a ratio hides a prefix of it, exactly as :func:`vitviz.core.masking.make_mask`.
``grid`` is deterministic and computed in the page.
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch

from ..assets import model_file
from ..core.masking import NESTED_PATTERNS, block_order, random_noise

#: The model the browser runs, and its graph's file in ``assets/models``.
WEB_MODEL = "mae-tiny"
GRAPH_FILE = "mae-tiny.onnx"
#: Seeds whose masks the page carries (its seed box offers 0 ... SEEDS - 1).
SEEDS = 100


def graph_file() -> Path:
    """Path of the committed ONNX graph (``ModelUnavailable``-free: it ships with the package)."""
    return model_file(GRAPH_FILE)


def graph_metadata(path: Path | None = None) -> dict[str, str]:
    """The ``vitviz.*`` metadata the exporter wrote (model, weights digest, sizes, mean/std).

    Reads only the protobuf's metadata fields (needs the ``onnx`` package, a dev dependency).
    """
    import onnx

    proto = onnx.load(str(path or graph_file()), load_external_data=False)
    return {p.key: p.value for p in proto.metadata_props}


def hide_order(pattern: str, seed: int, grid: tuple[int, int]) -> torch.Tensor:
    """The order in which a nested pattern hides patches: ``(L,)`` long, a permutation.

    ``make_mask(grid, r, seed, pattern)`` hides exactly the first ``num_hidden(L, r)`` entries
    (``random``: highest noise first, the stable sort of :func:`vitviz.core.masking.random_mask`;
    ``block``: :func:`vitviz.core.masking.block_order`).
    """
    if pattern == "random":
        return torch.sort(random_noise(grid[0] * grid[1], seed), descending=True, stable=True).indices
    if pattern == "block":
        return block_order(grid, seed)
    raise ValueError(f"only nested patterns have a hiding order; choose one of {', '.join(NESTED_PATTERNS)}")


@functools.lru_cache(maxsize=2)
def mask_tables(grid: tuple[int, int] = (14, 14), seeds: int = SEEDS) -> dict:
    """The page's mask tables: ``{"grid": [gh, gw], "seeds": n, "random": [[...L ids] * n], "block": ...}``."""
    return {"grid": list(grid), "seeds": seeds,
            **{p: [hide_order(p, s, grid).tolist() for s in range(seeds)] for p in NESTED_PATTERNS}}
