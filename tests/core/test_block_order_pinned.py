"""The MAE tab's block order is pinned: the same seed gives the same rectangles as before.

URLs, cached sweeps and screenshots name a (pattern, ratio, seed); merging the two
block-mask implementations must not move a rectangle. The digest was computed by this
test body on commit 20ec7d7 (before the merge); nesting itself is checked in
``test_mask_nesting.py``.
"""

from __future__ import annotations

import hashlib

from vitviz.core.masking import block_order

#: sha256 of :func:`_digest`'s orders on commit 20ec7d7.
PINNED_DIGEST = "69c56b586dc1663fae7e1096b40c1d3ed852ed6f2704de768e80244d0f3ba3ab"


def _digest() -> str:
    h = hashlib.sha256()
    for grid in [(14, 14), (16, 16), (7, 9), (3, 3)]:
        for seed in range(20):
            h.update(block_order(grid, seed).numpy().astype("<i8").tobytes())
    return h.hexdigest()


def test_block_order_is_unchanged_for_every_seed() -> None:
    assert _digest() == PINNED_DIGEST
