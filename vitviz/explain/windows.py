"""Swin's within-window attention: the softmax of one token's window in one block.

The model is ``swin-tiny`` from the registry: its pretrained weights when they are on
this machine (weights folder or download cache; never downloaded by a view), random
weights otherwise, flagged in the result (:attr:`WindowAttentionCapture.random_init`).
Geometry comes from :mod:`vitviz.core.windows`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..core.images import ImageInput, model_input, square_view
from ..core.windows import Pair, StageGeometry, padded_size, token_window, window_regions, window_token_positions
from ..models.loading import LoadedModel, load_model
from ..models.registry import get_spec
from ..models.sources import find_weights
from .capture import capture_blocks
from ..models.runner import on_module, runs_model, runs_with_model

#: Registry name of the Swin the app shows.
SWIN_MODEL = "swin-tiny"


def has_pretrained(name: str = SWIN_MODEL) -> bool:
    """Whether the pretrained weights of ``name`` are on this machine (weights folder or cache)."""
    return find_weights(get_spec(name)) is not None


def swin_model(name: str = SWIN_MODEL) -> LoadedModel:
    """``name`` with its pretrained weights when they are on this machine, else with random weights.

    Never downloads: a missing file means random weights (``random_init=True``).
    """
    return load_model(name, random_init=not has_pretrained(name))


def model_geometry(model: nn.Module) -> list[StageGeometry]:
    """The :class:`StageGeometry` of each stage of a timm ``SwinTransformer``."""
    out = []
    for i, layer in enumerate(model.layers):
        blk = layer.blocks[0]
        shifted = [b.shift_size for b in layer.blocks if any(b.shift_size)]
        grid = tuple(blk.input_resolution)
        out.append(
            StageGeometry(
                stage=i + 1,
                grid=grid,
                dim=int(blk.dim),
                num_heads=int(blk.attn.num_heads),
                depth=len(layer.blocks),
                window=tuple(blk.window_size),
                shift=tuple(shifted[0]) if shifted else (0, 0),
                padded=padded_size(grid, tuple(blk.window_size)),
                token_pixels=int(model.patch_embed.patch_size[0]) * 2**i,
            )
        )
    return out


@dataclass(frozen=True)
class WindowAttentionCapture:
    """Within-window attention of one query token in one Swin block.

    Attributes:
        geometry: the stage's geometry.
        block: block index within the stage.
        shift: the block's shift (``(0, 0)`` for a regular block).
        token: original ``(row, col)`` of the query token.
        window_index: index of the query's window in the rolled map.
        query_index: the query's index inside its window (row-major).
        weights: ``(heads, Mh, Mw)`` float32 softmax weights of the query over the keys
            of its window, laid out as the window in the rolled map; rows sum to 1.
        window_attention: ``(heads, Mh*Mw, Mh*Mw)`` float32, all queries of the window.
        positions: ``(Mh*Mw, 2)`` original ``(row, col)`` of each key (``-1`` = padding).
        blocked: ``(Mh*Mw,)`` bool, keys the mask hides from this query.
        random_init: True when the model's weights are random (the pattern shows the geometry).
    """

    geometry: StageGeometry
    block: int
    shift: Pair
    token: Pair
    window_index: int
    query_index: int
    weights: np.ndarray
    window_attention: np.ndarray
    positions: np.ndarray
    blocked: np.ndarray
    random_init: bool = False

    def weights_on_grid(self) -> np.ndarray:
        """The query's weights scattered to the stage grid (original frame).

        Returns:
            ``(heads, H, W)`` float32, ``NaN`` outside the query's window.
        """
        heads = self.weights.shape[0]
        h, w = self.geometry.grid
        out = np.full((heads, h, w), np.nan, dtype=np.float32)
        flat = self.weights.reshape(heads, -1)
        for k, (r, c) in enumerate(self.positions):
            if r >= 0:
                out[:, r, c] = flat[:, k]
        return out


@runs_model
def capture_window_attention(
    model: nn.Module,
    x: torch.Tensor,
    stage: int,
    block: int,
    token: Pair,
) -> WindowAttentionCapture:
    """Run a timm Swin and return the attention of one token's window in one block.

    The block's ``WindowAttention`` is captured by the package's one mechanism
    (:func:`vitviz.explain.capture.capture_blocks`): its ``(nW, heads, A, A)`` softmax
    (mask already applied) is recorded on the explicit path during one forward pass.

    Args:
        model: a timm ``SwinTransformer`` in eval mode.
        x: ``(1, 3, H, W)`` normalised image.
        stage: 1-based stage.
        block: 0-based block within the stage (odd = shifted where the stage has a shift).
        token: original ``(row, col)`` of the query on the stage's grid.

    Returns:
        A :class:`WindowAttentionCapture`.
    """
    if x.dim() != 4 or x.shape[0] != 1:
        raise ValueError(f"expected one image (1, 3, H, W), got {tuple(x.shape)}")
    geoms = model_geometry(model)
    if not 1 <= stage <= len(geoms):
        raise ValueError(f"stage must be 1..{len(geoms)}, got {stage}")
    geom = geoms[stage - 1]
    geom.block_shift(block)  # validates the block index
    blk = model.layers[stage - 1].blocks[block]
    if tuple(blk.shift_size) != geom.block_shift(block):
        raise ValueError(f"unexpected shift {blk.shift_size} in stage {stage} block {block}")
    row, col = token
    win_idx, q_idx = token_window(geom, block, row, col)
    attn, _ = capture_blocks([blk], lambda: model(x))
    attn = attn[0]  # (B*nW, heads, A, A)
    heads, area = attn.shape[1], attn.shape[-1]
    win_attn = attn[win_idx].float().cpu().numpy()
    mh, mw = geom.window
    weights = win_attn[:, q_idx, :].reshape(heads, mh, mw)
    regions = window_regions(geom, block, win_idx)
    return WindowAttentionCapture(
        geometry=geom,
        block=block,
        shift=geom.block_shift(block),
        token=(int(row), int(col)),
        window_index=int(win_idx),
        query_index=int(q_idx),
        weights=weights.astype(np.float32),
        window_attention=win_attn.astype(np.float32),
        positions=window_token_positions(geom, block, win_idx),
        blocked=(regions != regions[q_idx]).reshape(area),
    )


@runs_with_model
def window_attention(model: LoadedModel, image: ImageInput, stage: int, block: int, token: Pair
                     ) -> WindowAttentionCapture:
    """Within-window attention of a token for a loaded Swin (see :func:`capture_window_attention`); with model
    workers, in the worker that holds the model.

    Args:
        model: a loaded timm Swin (:func:`swin_model`).
        image: anything :func:`vitviz.load_image` reads, or a ``(S, S, 3)`` uint8 view.
        stage, block, token: see :func:`capture_window_attention`.
    """
    view = square_view(image, model.input_size)
    cap = capture_window_attention(model.module, model_input(view, model.data_config, model.device), stage, block,
                                   token)
    return WindowAttentionCapture(**{**cap.__dict__, "random_init": bool(model.random_init)})


def relative_position_bias(model: LoadedModel, stage: int, block: int) -> np.ndarray:
    """Swin's learned relative position bias table of one block, per head (Swin eq. 4).

    timm's ``WindowAttention.relative_position_bias_table`` holds ``(2Mh-1)(2Mw-1)`` rows,
    one per relative offset, indexed ``(dy + Mh - 1) * (2Mw - 1) + (dx + Mw - 1)`` with
    ``dy, dx`` = query minus key (``relative_position_index``); the bias added to the
    logit of a query/key pair in a window is the row of their offset.

    Args:
        model: a loaded Swin (``swin-tiny``); ``model.random_init`` says whether the table is learned.
        stage: 1-based stage; ``block``: 0-based block in the stage.

    Returns:
        ``(heads, 2Mh-1, 2Mw-1)`` float32; ``[h, dy + Mh - 1, dx + Mw - 1]``.
    """
    return on_module(model, _bias_table, stage, block)  # read where the weights are (with model workers: there)


def _bias_table(module: nn.Module, stage: int, block: int) -> np.ndarray:
    """:func:`relative_position_bias` of a timm Swin module."""
    layers = module.layers
    if not 1 <= stage <= len(layers):
        raise ValueError(f"stage must be 1..{len(layers)}, got {stage}")
    blocks = layers[stage - 1].blocks
    if not 0 <= block < len(blocks):
        raise ValueError(f"block must be 0..{len(blocks) - 1} in stage {stage}, got {block}")
    attn = blocks[block].attn
    mh, mw = (int(v) for v in attn.window_size)
    table = attn.relative_position_bias_table.detach().float().cpu().numpy()  # (A', heads)
    return table.T.reshape(-1, 2 * mh - 1, 2 * mw - 1).astype(np.float32)
