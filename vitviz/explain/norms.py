"""High-norm tokens (Darcet, Oquab, Mairal, Bojanowski, ICLR 2024, "Vision Transformers Need
Registers"): the norm of every output token of every layer, the outliers, and how much of the
class token's attention they draw.

The paper (§2, figs. 3-4, 7) finds that large ViTs trained long (DINOv2 ViT-g, OpenCLIP,
DeiT-III; not DINO v1) turn about 2% of their patch tokens, in low-information background
areas, into tokens whose output norm is about 10 times the others'. They carry global
information, the class token attends to them, and the attention maps get spiky; extra
learnable "register" tokens take that role away. Smaller models may show none: this module
measures what a given model does on a given image.

Definitions (all measured, none assumed):

* ``norms[l, t]``: the L2 norm of token ``t`` in layer ``l`` (0 = the embedding, ``l`` = the
  output of block ``l``), as :func:`vitviz.features.layer_tokens.layer_tokens` captures them (before
  the final LayerNorm).
* outliers of layer ``l``: patch tokens whose norm is above Tukey's far-out fence of that
  layer's patch norms, ``Q3 + 3 * IQR`` (:data:`FENCE`), *and* at least :data:`MIN_RATIO` times
  their median (so a tight distribution with one mild straggler is not called an artefact).
* their share of the class token's attention: the attention of block ``l + 1``, which reads
  layer ``l``'s tokens as keys, from the class token (averaged over heads) summed over layer
  ``l``'s outliers, beside the share uniform attention would give them (their count over the
  sequence length). The last layer has no later block: NaN there.
"""

from __future__ import annotations

from dataclasses import dataclass

from typing import TYPE_CHECKING

import numpy as np
import torch

from ..core.images import ImageInput, square_view
from ..models.loading import LoadedModel
from ..models.runner import runs_model, runs_with_model
from .layout import TokenLayout

if TYPE_CHECKING:
    from ..features.layer_tokens import LayerTokens

#: Outliers lie above ``Q3 + FENCE * IQR`` of a layer's patch-token norms (Tukey's far-out fence).
FENCE = 3.0
#: ... and at least this many times the layer's median patch norm.
MIN_RATIO = 2.0

#: What the paper reports, for the page (ICLR 2024, §2: figs. 3, 4 and 7).
PAPER = ("Darcet et al. (ICLR 2024, \"Vision Transformers Need Registers\", §2) found that large ViTs trained "
         "long (DINOv2 ViT-g, OpenCLIP, DeiT-III; not DINO v1) turn about 2% of their patch tokens, in "
         "low-information background patches, into tokens with about 10 times the usual output norm; those "
         "tokens hold global information and draw the class token's attention, which makes attention maps "
         "spiky. Learnable *register* tokens remove them.")


@dataclass(frozen=True, eq=False)
class TokenNorms:
    """Every layer's token norms for one image, with the outliers marked.

    Attributes:
        model_name: registry name.
        names: ``L + 1`` layer names (``embedding``, ``block 1``, ...).
        norms: ``(L + 1, T)`` float32 L2 norms, prefix tokens first.
        layout: the token layout (``p`` prefix tokens, then the ``gh*gw`` patches).
        threshold: ``(L + 1,)`` the outlier threshold of each layer (see the module docstring).
        outliers: ``(L + 1, gh*gw)`` bool, patch tokens above the threshold.
        cls_share: ``(L + 1,)`` share of block ``l + 1``'s class-token attention (head mean) on
            layer ``l``'s outliers; NaN for the last layer or a model without a class token.
        uniform_share: ``(L + 1,)`` the share uniform attention would give them (count / T).
        random_init: the weights are random.
    """

    model_name: str
    names: tuple[str, ...]
    norms: np.ndarray
    layout: TokenLayout
    threshold: np.ndarray
    outliers: np.ndarray
    cls_share: np.ndarray
    uniform_share: np.ndarray
    random_init: bool = False

    @property
    def num_layers(self) -> int:
        """``L + 1`` (the embedding and every block)."""
        return int(self.norms.shape[0])

    def check_layer(self, layer: int) -> int:
        """``layer`` as an index (negative counts from the end).

        Raises:
            ValueError: out of range, naming the valid range.
        """
        n = self.num_layers
        if not -n <= int(layer) < n:
            raise ValueError(f"layer must be in 0..{n - 1} (0 = the embedding), got {layer}")
        return int(layer) % n

    def patch_norms(self, layer: int) -> np.ndarray:
        """``(gh, gw)`` float32: the patch tokens' norms of one layer as a map."""
        li = self.check_layer(layer)
        return self.norms[li, self.layout.num_prefix:].reshape(self.layout.grid)

    def outlier_map(self, layer: int) -> np.ndarray:
        """``(gh, gw)`` bool: the outliers of one layer."""
        return self.outliers[self.check_layer(layer)].reshape(self.layout.grid)

    def ratio(self, layer: int) -> float:
        """Largest patch norm over the median patch norm, in one layer."""
        p = self.norms[self.check_layer(layer), self.layout.num_prefix:]
        return float(p.max() / max(float(np.median(p)), 1e-12))

    def counts(self) -> np.ndarray:
        """``(L + 1,)`` int: outliers per layer."""
        return self.outliers.sum(axis=1)

    def summary(self) -> str:
        """One measured sentence about the block outputs (layers 1..L, where the paper's artefacts live):
        where this model has outliers on this image, or that it has none."""
        counts = self.counts()
        n = self.layout.num_patches
        blocks = range(1, self.num_layers)
        layers = [i for i in blocks if counts[i]]
        worst = max(blocks, key=self.ratio)
        first = f" (the embedding has {int(counts[0])}, from the pixels)" if counts[0] else ""
        if not layers:
            return (f"On this image {self.model_name} has **no** high-norm patch tokens after any block{first} "
                    f"(threshold: above Q3 + {FENCE:g} IQR and {MIN_RATIO:g}× the median of the layer); its "
                    f"largest block-output patch norm is {self.ratio(worst):.1f}× the median ({self.names[worst]}).")
        top = max(layers, key=lambda i: counts[i])
        share = self.cls_share[top]
        attn = ("" if not np.isfinite(share) else
                f"; block {top + 1}'s class token gives them {100 * share:.1f}% of its attention "
                f"(uniform: {100 * self.uniform_share[top]:.1f}%)")
        return (f"On this image {self.model_name} has high-norm patch tokens after {len(layers)} of "
                f"{self.num_layers - 1} blocks{first}; most after {self.names[top]}: {int(counts[top])} of {n} "
                f"patches ({100 * counts[top] / n:.1f}%), up to {self.ratio(top):.1f}× the median norm{attn}.")


def outlier_threshold(patch_norms: np.ndarray) -> float:
    """The outlier threshold of one layer's patch norms ``(P,)``: ``max(Q3 + 3 IQR, 2 * median)``."""
    q1, med, q3 = np.percentile(np.asarray(patch_norms, dtype=np.float64), [25, 50, 75])
    return float(max(q3 + FENCE * (q3 - q1), MIN_RATIO * med))


def norms_of(model_name: str, names: tuple[str, ...], tokens: tuple[np.ndarray, ...], layout: TokenLayout,
             attentions: np.ndarray | None, random_init: bool = False) -> TokenNorms:
    """:class:`TokenNorms` from captured tokens and attention.

    Args:
        tokens: ``L + 1`` arrays ``(T, D)``: the embedding, then every block's output.
        layout: their layout (the same for every layer).
        attentions: ``(L, H, T, T)`` every block's attention, or None (no shares).
    """
    norms = np.stack([np.linalg.norm(np.asarray(t, dtype=np.float32), axis=-1) for t in tokens]).astype(np.float32)
    k = layout.num_prefix
    thresholds = np.array([outlier_threshold(row[k:]) for row in norms])
    outliers = norms[:, k:] > thresholds[:, None]
    share = np.full(len(tokens), np.nan)
    cls = layout.prefix.index("cls") if "cls" in layout.prefix else None
    if attentions is not None and cls is not None:
        a = np.asarray(attentions)
        for li in range(min(len(tokens) - 1, a.shape[0])):
            row = a[li, :, cls].mean(axis=0)  # block li + 1 reads layer li's tokens
            share[li] = float(row[k:][outliers[li]].sum())
    uniform = outliers.sum(axis=1) / float(norms.shape[1])
    for arr in (norms, thresholds, outliers, share, uniform):
        arr.setflags(write=False)
    return TokenNorms(model_name, tuple(names), norms, layout, thresholds, outliers, share, uniform, random_init)


@runs_model
def capture_tokens_and_attention(model: LoadedModel, view: np.ndarray) -> tuple[LayerTokens, np.ndarray | None]:
    """One forward pass of an MAE encoder (nothing masked) or a timm ViT that records both the layer
    tokens and every block's attention (uncached; see :func:`_tokens_with_attention`).

    The token capture (:func:`vitviz.features.layer_tokens.capture_tokens`) runs inside the attention
    capture (:func:`vitviz.explain.capture.capturing`): the explicit-softmax path, which differs from
    the fused kernel by float rounding only.

    Args:
        view: ``(S, S, 3)`` uint8, the model's square view of the photo.

    Returns:
        ``(tokens, attention)``: the :class:`~vitviz.features.layer_tokens.LayerTokens` and the ``(L, H, T, T)``
        float32 attention, or None if the blocks did not each run once in this thread.
    """
    from ..features.layer_tokens import capture_tokens
    from .capture import attention_modules, capturing

    with capturing(attention_modules(model.module.blocks)) as store:
        lt = capture_tokens(model, view)
    if not all(len(s) == 1 for s in store):
        return lt, None
    return lt, torch.stack([s[0][0].float().cpu() for s in store]).numpy()


def _tokens_with_attention(model: LoadedModel, image: ImageInput) -> LayerTokens:
    """The image's layer tokens (cached); when neither they nor its attention are cached yet, both
    from one pass (:func:`capture_tokens_and_attention`), stored in their caches, where
    :func:`~vitviz.features.layer_tokens.layer_tokens` and :func:`~vitviz.explain.attention.attention` find
    them. Models other than MAE encoders and timm ViTs take the token capture alone."""
    from ..features import layer_tokens as ft
    from ..models.mae import MaskedAutoencoderViT
    from . import attention as ea

    view = square_view(image, model.input_size)
    akey, tkey = ea._key(model, view, None, "encoder"), ft._key(model, view)
    joint = isinstance(model.architecture, MaskedAutoencoderViT) or ea._timm_vit(model.architecture)
    if joint and akey not in ea.CACHE and tkey not in ft.CACHE:
        # both caches from one pass; a concurrent request for the same photo may compute it twice
        lt, a = capture_tokens_and_attention(model, np.asarray(view, dtype=np.uint8))
        ft.CACHE.put(tkey, lt)
        if a is not None:
            ea.CACHE.put(akey, ea.maps_of(model, "encoder", a, lt.layouts[0], lt.image, lt.logits))
    return ft.layer_tokens(model, view)


@runs_with_model
def token_norms(model: LoadedModel, image: ImageInput, aspect: str = "square",
                max_side: int | None = None) -> TokenNorms:
    """Every layer's token norms of ``model`` on ``image``, outliers and their class-token attention share.

    Uses the cached token capture (:func:`vitviz.features.layer_tokens.layer_tokens`) and attention
    (:func:`vitviz.explain.attention.attention`), both from one forward pass when neither is cached;
    a ViT, DeiT, DINO, DINOv2 or MAE encoder. ``aspect="native"``: the photo at its own shape, its
    longer side ``max_side`` (the registers paper sees more high-norm tokens at higher resolution).
    Runs where the model's calls run (:func:`~vitviz.models.runner.runs_with_model`): with model workers the
    tokens and attention stay in the worker's caches and only the ``(L, T)`` norms come back.

    Raises:
        ValueError: a model whose tokens have no single global layout (Swin). ImageError: unreadable image.
    """
    from ..core.images import check_aspect
    from .attention import attention

    if check_aspect(aspect) == "native":
        from ..features.layer_tokens import layer_tokens

        lt = layer_tokens(model, image, aspect, max_side)
        maps = attention(model, lt.image, aspect=aspect, max_side=max_side)
        return norms_of(model.name, lt.names, lt.tokens, lt.layouts[0], maps.attentions, bool(model.random_init))
    lt = _tokens_with_attention(model, image)
    if len({lay.num_tokens for lay in lt.layouts}) != 1:
        raise ValueError(f"{model.name} changes its token grid between layers; token norms need a plain ViT")
    maps = attention(model, lt.image)
    return norms_of(model.name, lt.names, lt.tokens, lt.layouts[0], maps.attentions, bool(model.random_init))
