"""The query-key space of one attention head (AttentionViz, Yeh et al., IEEE VIS 2023).

Attention weight ``a_ij = softmax_j(q_i . k_j * scale)``: a query attends to the keys it
has a large dot product with. Plotting the queries and keys of every token of an image
together shows which tokens will attend to which.

No new hook: the tokens entering each block are the cached layer tokens
(:func:`vitviz.features.layer_tokens.layer_tokens`, recorded by the package's one capture
mechanism, :func:`vitviz.explain.capture.capture_block_tokens`), and ``q``, ``k`` are
computed from them with the block's own modules, exactly as timm's ``Attention`` does:
``blk.norm1``, ``blk.attn.qkv``, split into heads, then ``q_norm`` / ``k_norm``.

For the picture (:func:`project`), two changes that leave every attention weight
unchanged, as in AttentionViz: the keys are translated so that their mean is the
queries' mean (adding a constant vector ``c`` to every key adds ``q_i . c`` to a whole
row of logits, which the softmax ignores), and queries and keys are scaled by ``1/r``
and ``r`` so that their mean norms match (``q . k`` is unchanged). The queries and keys
are then projected *jointly* to 2-D by PCA (the top two eigenvectors of the centred ``(2T, d)`` stack's
scatter matrix, ``torch.linalg.eigh``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .. import settings
from ..cache import LRU
from ..core.images import ImageInput, square_view
from ..models.loading import LoadedModel
from ..models.mae import MaskedAutoencoderViT
from ..models.runner import runs_model
from .attention import _key, _timm_vit
from .layout import TokenLayout


@dataclass(frozen=True, eq=False)
class BlockInputs:
    """The tokens entering every encoder block for one image.

    Attributes:
        tokens: ``L`` arrays ``(T, D)`` float32: ``tokens[l]`` enters block ``l``.
        layout: which token is which.
        image: ``(S, S, 3)`` uint8 model view.
    """

    tokens: tuple[np.ndarray, ...]
    layout: TokenLayout
    image: np.ndarray


def _check_encoder(model: LoadedModel) -> None:
    """Raise unless the model is a global-attention ViT (timm ViT, DeiT, DINO) or an MAE."""
    arch = model.architecture
    if not (isinstance(arch, MaskedAutoencoderViT) or _timm_vit(arch)):
        raise ValueError(f"{model.name} ({type(arch).__name__}) is not a global-attention ViT; "
                         "the query-key space is shown for ViT, DeiT, DINO and MAE encoders")


def capture_inputs(model: LoadedModel, image: ImageInput) -> BlockInputs:
    """The tokens entering each block of the encoder over every patch (uncached; see :func:`block_inputs`).

    They are the layer tokens' first ``L`` layers (:func:`vitviz.features.layer_tokens.layer_tokens`: the
    embedding, then the output of each block but the last), so the one cached forward pass of the
    Features tab, the token norms and the head atlas serves them too.
    """
    from ..features.layer_tokens import layer_tokens

    _check_encoder(model)
    lt = layer_tokens(model, image)
    tokens = lt.tokens[:-1]  # tokens[l] enters block l; the last one leaves the encoder
    if tokens[0].shape[0] != lt.layouts[0].num_tokens:
        raise RuntimeError(f"captured {tokens[0].shape[0]} tokens but the layout has {lt.layouts[0].num_tokens}")
    return BlockInputs(tokens, lt.layouts[0], lt.image)


#: Block inputs per (model, image): a ViT-B entry is 12 x 197 x 768 float32, about 7 MB.
CACHE: LRU[tuple, BlockInputs] = LRU(lambda: settings.get("VITVIZ_ATTENTION_CACHE"))


def block_inputs(model: LoadedModel, image: ImageInput) -> BlockInputs:
    """:func:`capture_inputs`, cached per model and image content."""
    view = square_view(image, model.input_size)
    return CACHE.get_or_compute(_key(model, view, None, "block-inputs"), lambda: capture_inputs(model, view))


@runs_model
def queries_keys(block: torch.nn.Module, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Every head's queries and keys, computed by a timm block's own modules.

    Args:
        block: a timm ``Block`` (``norm1``, ``attn.qkv``, ``attn.q_norm``/``k_norm``).
        tokens: ``(T, D)`` tokens entering the block.

    Returns:
        ``(q, k, scale)``: ``q`` and ``k`` are ``(H, T, d)`` float32 on CPU; the block's
        attention is ``softmax(q @ k.T * scale)``.
    """
    attn: Any = block.attn
    h = int(attn.num_heads)
    p = next(block.parameters())
    with torch.inference_mode():
        x = block.norm1(tokens[None].to(device=p.device))
        t = x.shape[1]
        qkv = attn.qkv(x).reshape(1, t, 3, h, -1).permute(2, 0, 3, 1, 4)
        q, k = qkv[0], qkv[1]
        q = attn.q_norm(q) if getattr(attn, "q_norm", None) is not None else q
        k = attn.k_norm(k) if getattr(attn, "k_norm", None) is not None else k
    return q[0].float().cpu(), k[0].float().cpu(), float(attn.scale)


def normalise(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AttentionViz's two attention-preserving changes: keys moved to the queries' mean, norms matched.

    Args:
        q, k: ``(T, d)``.

    Returns:
        ``(q', k')`` with ``softmax(q' k'^T)`` row by row equal to ``softmax(q k^T)``.
    """
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    k = k - k.mean(axis=0) + q.mean(axis=0)
    nq, nk = np.linalg.norm(q, axis=1).mean(), np.linalg.norm(k, axis=1).mean()
    r = np.sqrt(nq / nk) if nq > 0 and nk > 0 else 1.0
    return q / r, k * r


def project(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Joint 2-D PCA of queries and keys (after :func:`normalise`).

    Args:
        q, k: ``(T, d)``.

    Returns:
        ``(q_xy, k_xy, explained)``: ``(T, 2)`` positions of queries and keys and the
        ``(2,)`` share of the joint variance each axis holds. Signs are fixed so that
        the largest loading of each axis is positive (stable across runs).
    """
    qn, kn = normalise(q, k)
    both = np.concatenate([qn, kn])
    centred = both - both.mean(axis=0)
    # The principal axes are the eigenvectors of the (d, d) scatter matrix (the right singular vectors of the
    # stack, at a fraction of an SVD's cost); torch's solver, whose threads are the ones vitviz sets.
    evals, evecs = torch.linalg.eigh(torch.from_numpy(centred.T @ centred))
    order = torch.argsort(evals, descending=True)
    var, vt = evals[order].clamp(min=0).numpy(), evecs[:, order].T.numpy()
    axes = vt[:2]
    axes = axes * np.where(axes[np.arange(len(axes)), np.abs(axes).argmax(axis=1)] < 0, -1.0, 1.0)[:, None]
    xy = centred @ axes.T
    if xy.shape[1] < 2:
        xy = np.pad(xy, ((0, 0), (0, 2 - xy.shape[1])))
    explained = var[:2] / var.sum() if var.sum() > 0 else np.zeros(2)
    t = q.shape[0]
    return xy[:t], xy[t:], np.pad(explained, (0, 2 - explained.size))


@dataclass(frozen=True, eq=False)
class QueryKeySpace:
    """The queries and keys of one head for one image, and their joint 2-D projection.

    Attributes:
        model_name: registry name.
        layer: 0-based layer.
        head: 0-based head.
        queries: ``(T, d)`` float32, as the head computes them (``q_norm`` applied).
        keys: ``(T, d)`` float32.
        scale: the head's logit scale (``d ** -0.5``).
        query_xy: ``(T, 2)`` projected queries.
        key_xy: ``(T, 2)`` projected keys.
        explained: ``(2,)`` share of the joint variance on each axis.
        layout: which token is which.
        image: ``(S, S, 3)`` uint8 model view.
        random_init: True when the model's weights are random.
    """

    model_name: str
    layer: int
    head: int
    queries: np.ndarray
    keys: np.ndarray
    scale: float
    query_xy: np.ndarray
    key_xy: np.ndarray
    explained: np.ndarray
    layout: TokenLayout
    image: np.ndarray
    random_init: bool = False

    def attention(self) -> np.ndarray:
        """``(T, T)`` float64 ``softmax(q k^T * scale)`` recomputed from :attr:`queries` and :attr:`keys`."""
        logits = self.queries.astype(np.float64) @ self.keys.astype(np.float64).T * self.scale
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return e / e.sum(axis=1, keepdims=True)

    def distance_logit_correlation(self) -> float:
        """How well nearness in the 2-D picture predicts the logit: per query, the Pearson correlation
        of ``-|query_xy - key_xy|`` with ``q·k·scale`` over the ``T`` keys, averaged over the queries.

        Per query, because a softmax ignores a constant added to one query's logits. In the full
        space, ``|q - k|^2 = |q|^2 + |k|^2 - 2 q·k``: nearness follows the dot product only where
        the keys' norms are alike; the 2-D projection distorts it further. Rows whose distances or
        logits are constant are left out; NaN when every row is.
        """
        logits = self.queries.astype(np.float64) @ self.keys.astype(np.float64).T * self.scale  # (T, T)
        d = np.linalg.norm(self.query_xy[:, None, :].astype(np.float64) - self.key_xy[None, :, :], axis=-1)
        a = -d - (-d).mean(axis=1, keepdims=True)
        b = logits - logits.mean(axis=1, keepdims=True)
        den = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
        ok = den > 1e-12
        return float(((a * b).sum(axis=1)[ok] / den[ok]).mean()) if ok.any() else float("nan")


def query_key_space(model: LoadedModel, image: ImageInput, layer: int, head: int) -> QueryKeySpace:
    """The query-key space of one encoder head for one image.

    Args:
        model: a ViT, DeiT, DINO or MAE (encoder over every patch, no mask).
        image: anything :func:`vitviz.load_image` reads.
        layer: 0-based layer (negative counts from the end).
        head: 0-based head.

    Raises:
        ValueError: a layer or head out of range (naming the valid ones), or a model
        without global attention. ImageError: unreadable image.
    """
    inputs = block_inputs(model, image)
    depth = len(inputs.tokens)
    blocks: Any = _encoder_blocks(model)
    li, hi = _index(layer, depth, "layer"), _index(head, int(blocks[0].attn.num_heads), "head")
    q, k, scale = queries_keys(blocks[li], torch.from_numpy(np.array(inputs.tokens[li])))
    qh, kh = q[hi].numpy(), k[hi].numpy()
    q_xy, k_xy, explained = project(qh, kh)
    for a in (qh, kh, q_xy, k_xy, explained):
        a.setflags(write=False)
    return QueryKeySpace(model.name, li, hi, qh, kh, scale, q_xy, k_xy, explained, inputs.layout, inputs.image,
                         bool(getattr(model, "random_init", False)))


def _encoder_blocks(model: LoadedModel) -> Any:
    module: Any = model.module
    return module.blocks


def _index(value: int, n: int, what: str) -> int:
    try:
        i = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be an integer, got {value!r}") from None
    if not -n <= i < n:
        raise ValueError(f"{what} must be 0..{n - 1} (0-based; this model has {n}), got {value}")
    return i % n
