"""Class names of a classifier (ImageNet-1k's, or a head's own), and top-k predictions.

ImageNet's names come from the files timm ships inside its package
(:class:`timm.data.ImageNetInfo`: ``imagenet_synsets.txt`` and the WordNet lemmas), so
they are available offline. They are read at first use, never at import.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

NUM_IMAGENET_CLASSES = 1000


def class_names(model: Any) -> tuple[str, ...]:
    """A classifier's class names in logit order.

    A model whose registry entry has a head vitviz trained (``spec.head``: dinov2-small-lab8) has
    that head's names; a 1000-class model ImageNet-1k's (:func:`imagenet_labels`); any other
    ``class 0``, ``class 1``...

    Args:
        model: a :class:`~vitviz.models.loading.LoadedModel`.
    """
    spec = getattr(model, "spec", None)
    if spec is not None and getattr(spec, "head", ""):
        from ..models.linear_head import head_dir, read_head

        return read_head(head_dir() / spec.head).classes
    n = int(getattr(model.architecture, "num_classes", 0) or 0)  # structure only: no weights read here
    return imagenet_labels() if n == NUM_IMAGENET_CLASSES else tuple(f"class {i}" for i in range(n))


@functools.lru_cache(maxsize=1)
def imagenet_labels() -> tuple[str, ...]:
    """The 1000 ImageNet-1k class names in classifier order (index 0 = ``tench``).

    Each name is the first WordNet lemma of the class (``tabby, tabby cat`` ->
    ``tabby``); when two classes share a first lemma (``crane`` the bird and the
    machine) the second lemma is added in brackets so that every name is unique.
    """
    from timm.data import ImageNetInfo

    info = ImageNetInfo("imagenet-1k")
    full = [info.index_to_description(i) for i in range(NUM_IMAGENET_CLASSES)]
    first = [d.split(",")[0].strip() for d in full]
    counts: dict[str, int] = {}
    for name in first:
        counts[name] = counts.get(name, 0) + 1
    out = []
    for i, (name, desc) in enumerate(zip(first, full)):
        if counts[name] > 1:
            parts = [p.strip() for p in desc.split(",")]
            extra = parts[1] if len(parts) > 1 else f"class {i}"
            name = f"{name} ({extra})"
        out.append(name)
    return tuple(out)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Numerically stable softmax of ``(C,)`` logits, float64."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


def top_k(logits: np.ndarray, k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` most probable ImageNet-1k classes.

    Args:
        logits: ``(1000,)`` classifier logits.
        k: how many, 1..1000.

    Returns:
        ``[(name, probability), ...]``, most probable first; probabilities are the
        softmax over all 1000 classes.

    Raises:
        ValueError: logits of another size, or a bad ``k``.
    """
    z = np.asarray(logits).reshape(-1)
    if z.shape[0] != NUM_IMAGENET_CLASSES:
        raise ValueError(f"expected {NUM_IMAGENET_CLASSES} ImageNet logits, got {z.shape[0]}")
    if not 1 <= int(k) <= NUM_IMAGENET_CLASSES:
        raise ValueError(f"k must be 1..{NUM_IMAGENET_CLASSES}, got {k}")
    p = softmax(z)
    order = np.argsort(-p, kind="stable")[: int(k)]
    names = imagenet_labels()
    return [(names[i], float(p[i])) for i in order]
