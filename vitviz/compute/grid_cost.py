"""What a photo at its own shape costs against the model's square input, in closed form.

A ViT's cost grows with its tokens ``T = k + gh*gw``: the projections and the MLP linearly,
the attention products (``Q K^T`` and ``A V``, :func:`~vitviz.compute.formulas.global_attention_flops`)
as ``T**2``. A 16:9 photo at 644 px on a patch-14 model is a 26x46 grid: 1,196 patch tokens,
4.7x the 256 of the 224-px square, and about 22x its attention products.
"""

from __future__ import annotations

from dataclasses import dataclass

from .formulas import global_attention_flops, vit_block_flops


@dataclass(frozen=True)
class GridCost:
    """A grid's cost against a reference grid (both with the same ``k`` prefix tokens).

    Attributes:
        grid: ``(gh, gw)`` of the view.
        base_grid: ``(gh, gw)`` of the reference (the model's square input).
        patch_tokens: ``gh * gw``.
        base_patch_tokens: the reference's.
        token_ratio: ``patch_tokens / base_patch_tokens``.
        attention_ratio: attention products over the reference's, ``(T / T0)**2`` with the prefix.
        flops: forward FLOPs of ``depth`` blocks (projections, products, MLP).
        flops_ratio: ``flops`` over the reference's.
    """

    grid: tuple[int, int]
    base_grid: tuple[int, int]
    patch_tokens: int
    base_patch_tokens: int
    token_ratio: float
    attention_ratio: float
    flops: int
    flops_ratio: float


def grid_cost(grid: tuple[int, int], base_grid: tuple[int, int], dim: int, depth: int, prefix: int = 1,
              mlp_ratio: float = 4.0) -> GridCost:
    """The cost of a ``grid`` view against ``base_grid`` for a ViT of width ``dim`` and ``depth`` blocks.

    Raises:
        ValueError: an empty grid or a non-positive width or depth.
    """
    gh, gw = (int(v) for v in grid)
    bh, bw = (int(v) for v in base_grid)
    if min(gh, gw, bh, bw) < 1 or dim < 1 or depth < 1 or prefix < 0:
        raise ValueError(f"grids, width and depth must be positive; got {grid}, {base_grid}, {dim}, {depth}")
    t, t0 = prefix + gh * gw, prefix + bh * bw
    flops, base = (depth * vit_block_flops(n, dim, mlp_ratio) for n in (t, t0))
    return GridCost((gh, gw), (bh, bw), gh * gw, bh * bw, gh * gw / (bh * bw),
                    global_attention_flops(t, dim) / global_attention_flops(t0, dim), flops, flops / base)


def most_patch_tokens(side: int, patch: int) -> int:
    """The largest patch count of a native view whose longer side is ``side`` (a square photo): ``(side // P)**2``."""
    n = max(1, int(round(side / patch)))
    return n * n
