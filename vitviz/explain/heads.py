"""The head atlas: every (layer, head) of a ViT summarised by four numbers and a type.

From captured attention ``(L, H, T, T)`` (:mod:`vitviz.explain.attention`) and its
:class:`~vitviz.explain.layout.TokenLayout` (``p`` prefix tokens first, then ``P`` patch
tokens), per head, averaged over the *patch* queries (the image's tokens):

* **mean attention distance** in input pixels (:func:`vitviz.explain.rollout.mean_attention_distance`,
  the ViT paper's fig. 7);
* **entropy** of each query's row over all ``T`` keys, divided by ``log T``: 1 for a
  uniform row, 0 for a one-hot row;
* **prefix share**: the weight on the prefix tokens (class, distillation, registers) —
  "sink" heads park their attention there (Darcet et al., 2023, "Vision Transformers
  need registers");
* **high-norm share**: the weight on the *patch* tokens that are high-norm outliers of the
  block's input (:mod:`vitviz.explain.norms`): the paper's artefact tokens, which soak up
  attention as prefix tokens do;
* **self share**: the weight of each token on itself (the diagonal).

Head types, by this rule (first match wins; the thresholds are module constants):

1. ``prefix-sink``: prefix share + high-norm share >= :data:`SINK_SHARE` (0.5);
2. ``self``: self share >= :data:`SELF_SHARE` (0.5);
3. ``local``: mean distance <= :data:`LOCAL_RATIO` (0.5) x the distance of uniform
   attention over the same patches (:func:`~vitviz.explain.rollout.uniform_distance`);
4. ``global``: every other head.

:func:`head_atlas` gives the atlas of one image, or the average over the bundled example
photos (cached per model), so that a teacher can show that head types belong to the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import settings
from ..assets import example_images
from ..cache import LRU
from ..core.images import ImageInput
from ..models.loading import LoadedModel
from ..models.runner import runs_with_model
from .attention import attention
from .layout import TokenLayout
from .rollout import mean_attention_distance, uniform_distance

#: Head types, in the order the rule tests them (and their integer codes in :attr:`HeadAtlas.types`).
HEAD_TYPES: tuple[str, ...] = ("prefix-sink", "self", "local", "global")
#: A head whose patch queries give at least this share to prefix tokens is a sink.
SINK_SHARE = 0.5
#: A head whose patch queries give at least this share to themselves is a self head.
SELF_SHARE = 0.5
#: A head whose mean distance is at most this fraction of uniform attention's is local.
LOCAL_RATIO = 0.5
#: The rule in words (the tab prints it).
RULE = (f"prefix-sink if at least {SINK_SHARE:.0%} of the attention goes to prefix tokens and high-norm patch "
        f"tokens together; else self if at "
        f"least {SELF_SHARE:.0%} goes to the token itself; else local if the mean attention distance is at most "
        f"{LOCAL_RATIO:.0%} of uniform attention's; else global")


def attention_entropy(attentions: np.ndarray, layout: TokenLayout) -> np.ndarray:
    """Entropy of the patch queries' rows, normalised by ``log T``, averaged per head.

    Args:
        attentions: ``(L, H, T, T)`` rows summing to 1.
        layout: which rows are patch queries.

    Returns:
        ``(L, H)`` float64 in [0, 1]: 1 = every row uniform over the ``T`` keys, 0 = one-hot.
    """
    a = np.asarray(attentions, dtype=np.float32)[..., layout.num_prefix:, :]  # (L, H, P, T)
    t = a.shape[-1]
    if t < 2:
        return np.zeros(a.shape[:2])
    plogp = a * np.log(np.maximum(a, np.float32(1e-30)))  # 0 log 0 = 0
    return (-plogp.sum(axis=-1, dtype=np.float64) / np.log(t)).mean(axis=-1).clip(0.0, 1.0)


def prefix_share(attentions: np.ndarray, layout: TokenLayout) -> np.ndarray:
    """``(L, H)`` mean weight the patch queries give to all prefix tokens together."""
    a = np.asarray(attentions)
    p0 = layout.num_prefix
    return a[..., p0:, :p0].sum(axis=-1, dtype=np.float64).mean(axis=-1)


def outlier_share(attentions: np.ndarray, layout: TokenLayout, outliers: np.ndarray) -> np.ndarray:
    """``(L, H)`` mean weight the patch queries of block ``l`` give to the high-norm patch tokens it reads.

    Args:
        attentions: ``(L, H, T, T)``.
        layout: ``p`` prefix tokens, then the ``P`` patches.
        outliers: ``(L + 1, P)`` or ``(L, P)`` bool, the outlier patches of each layer
            (:attr:`vitviz.explain.norms.TokenNorms.outliers`); block ``l`` reads layer ``l``.
    """
    a = np.asarray(attentions)
    p0 = layout.num_prefix
    out = np.zeros(a.shape[:2])
    for li in range(a.shape[0]):
        keys = np.flatnonzero(np.asarray(outliers[li], dtype=bool)) + p0
        if keys.size:
            out[li] = a[li, :, p0:][..., keys].sum(axis=-1, dtype=np.float64).mean(axis=-1)
    return out


def self_share(attentions: np.ndarray, layout: TokenLayout) -> np.ndarray:
    """``(L, H)`` mean weight each patch query gives to itself (its diagonal entry)."""
    a = np.asarray(attentions)
    p0 = layout.num_prefix
    return np.diagonal(a, axis1=-2, axis2=-1)[..., p0:].astype(np.float64).mean(axis=-1)


def classify_heads(distance: np.ndarray, prefix: np.ndarray, self_: np.ndarray, uniform: float) -> np.ndarray:
    """Head types by the module's rule (see the module docstring).

    Args:
        distance: ``(L, H)`` mean attention distance (pixels).
        prefix: ``(L, H)`` prefix share.
        self_: ``(L, H)`` self share.
        uniform: mean distance of uniform attention over the same patches (pixels).

    Returns:
        ``(L, H)`` int64 codes into :data:`HEAD_TYPES`.
    """
    d, p, s = (np.asarray(v, dtype=np.float64) for v in (distance, prefix, self_))
    return np.select([p >= SINK_SHARE, s >= SELF_SHARE, d <= LOCAL_RATIO * float(uniform)], [0, 1, 2], 3)


@dataclass(frozen=True, eq=False)
class HeadAtlas:
    """The four statistics of every head of one model, for one image or averaged over several.

    Attributes:
        model_name: registry name.
        distance: ``(L, H)`` mean attention distance in input pixels.
        entropy: ``(L, H)`` normalised entropy in [0, 1].
        prefix_share: ``(L, H)`` share of attention on prefix tokens.
        self_share: ``(L, H)`` share of attention on the token itself.
        uniform_distance: distance of uniform attention over the patches (pixels).
        prefix: names of the prefix tokens (``cls``, ``dist``, ``reg0``...).
        images: how many images were averaged (1 for one image).
        random_init: True when the weights are random (the atlas shows the architecture).
        outlier_share: ``(L, H)`` share of attention on high-norm patch tokens (:func:`outlier_share`);
            None when not measured.
    """

    model_name: str
    distance: np.ndarray
    entropy: np.ndarray
    prefix_share: np.ndarray
    self_share: np.ndarray
    uniform_distance: float
    prefix: tuple[str, ...]
    images: int = 1
    random_init: bool = False
    outlier_share: np.ndarray | None = None

    @property
    def sink_share(self) -> np.ndarray:
        """``(L, H)`` prefix share plus high-norm share: what the sink rule reads."""
        extra = 0.0 if self.outlier_share is None else self.outlier_share
        return np.asarray(self.prefix_share, dtype=np.float64) + extra

    @property
    def depth(self) -> int:
        """Layers ``L``."""
        return int(self.distance.shape[0])

    @property
    def num_heads(self) -> int:
        """Heads per layer ``H``."""
        return int(self.distance.shape[1])

    @property
    def types(self) -> np.ndarray:
        """``(L, H)`` int64 codes into :data:`HEAD_TYPES` (:func:`classify_heads`)."""
        return classify_heads(self.distance, self.sink_share, self.self_share, self.uniform_distance)

    def type_names(self) -> np.ndarray:
        """``(L, H)`` type names."""
        return np.asarray(HEAD_TYPES, dtype=object)[self.types]

    def counts(self) -> dict[str, int]:
        """How many heads of each type (every type listed, zeros included)."""
        t = self.types
        return {name: int((t == i).sum()) for i, name in enumerate(HEAD_TYPES)}


def head_statistics(attentions: np.ndarray, layout: TokenLayout) -> dict[str, np.ndarray]:
    """The four ``(L, H)`` statistics of captured attention ``(L, H, T, T)``.

    Returns:
        ``distance`` (pixels), ``entropy``, ``prefix_share`` and ``self_share``, float64.
    """
    a = np.asarray(attentions)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2] or a.shape[-1] != layout.num_tokens:
        raise ValueError(f"attentions must be (layers, heads, {layout.num_tokens}, {layout.num_tokens}), "
                         f"got {a.shape}")
    return {"distance": mean_attention_distance(a, layout), "entropy": attention_entropy(a, layout),
            "prefix_share": prefix_share(a, layout), "self_share": self_share(a, layout)}


def atlas_of(model_name: str, attentions: np.ndarray, layout: TokenLayout, random_init: bool = False) -> HeadAtlas:
    """The :class:`HeadAtlas` of one captured ``(L, H, T, T)`` attention."""
    return HeadAtlas(model_name, **head_statistics(attentions, layout), uniform_distance=uniform_distance(layout),
                     prefix=layout.prefix, images=1, random_init=random_init)


def average(atlases: list[HeadAtlas]) -> HeadAtlas:
    """The mean of the statistics of several atlases of one model (types follow from the means)."""
    if not atlases:
        raise ValueError("no atlases to average")
    first = atlases[0]
    mean = {k: np.mean([getattr(a, k) for a in atlases], axis=0)
            for k in ("distance", "entropy", "prefix_share", "self_share")}
    shares = [a.outlier_share for a in atlases]
    high = None if any(s is None for s in shares) else np.mean(shares, axis=0)
    return HeadAtlas(first.model_name, **mean, uniform_distance=first.uniform_distance, prefix=first.prefix,
                     images=sum(a.images for a in atlases), random_init=first.random_init, outlier_share=high)


def _atlas_of_image(model: LoadedModel, image: ImageInput) -> HeadAtlas:
    from dataclasses import replace

    from .norms import token_norms

    norms = token_norms(model, image)  # first: one forward pass fills the token and attention caches
    maps = attention(model, image)  # encoder, no mask; cached per image
    atlas = atlas_of(model.name, maps.attentions, maps.layout, maps.random_init)
    return replace(atlas, outlier_share=outlier_share(maps.attentions, maps.layout, norms.outliers))


#: Example-photo averages, one per model (a few kilobytes each).
EXAMPLE_CACHE: LRU[tuple, HeadAtlas] = LRU(lambda: settings.get("VITVIZ_MAX_MODELS") * 2)


def example_atlas(model: LoadedModel) -> HeadAtlas:
    """The atlas averaged over the bundled example photos (:func:`vitviz.assets.example_images`), cached per model.

    Raises:
        ValueError: no example photos in this installation.
    """
    photos = example_images()
    if not photos:
        raise ValueError("no example photos are installed, so there is nothing to average over")
    key = (model.name, bool(getattr(model, "random_init", False)), str(model.device), id(model.architecture),
           tuple(photos))
    return EXAMPLE_CACHE.get_or_compute(key, lambda: average([_atlas_of_image(model, p) for p in photos]))


@runs_with_model
def head_atlas(model: LoadedModel, image: ImageInput | None = None) -> HeadAtlas:
    """Every encoder head's statistics and type, for one image or the example photos.

    Runs where the model's calls run (:func:`~vitviz.models.runner.runs_with_model`): with model workers the
    ``(L, H, T, T)`` attention stays in the worker's caches and only the ``(L, H)`` statistics come back.

    ``vitviz.head_atlas(m, img).type_names()`` -> ``(L, H)`` of ``local``/``global``/...

    Args:
        model: a ViT, DeiT, DINO or MAE (the encoder over every patch, no mask).
        image: anything :func:`vitviz.load_image` reads; None = the average over the
            bundled example photos (cached per model).

    Raises:
        ValueError: a model without global attention (Swin). ImageError: unreadable image.
    """
    return example_atlas(model) if image is None else _atlas_of_image(model, image)
