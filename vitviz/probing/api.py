"""``vitviz.linear_probe``: the public entry point of the linear probes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import ModelUnavailable
from .features import available_features, feature_key, find_features
from .linear import LABELS_PER_CLASS, SEEDS, ProbeCurve, probe_curve


def linear_probe(encoder: str = "mae-tiny", layer: int = -1, pooling: str = "cls",
                 labels_per_class: Sequence[int | str] = LABELS_PER_CLASS, seeds: Sequence[int] = SEEDS,
                 random_init: bool = False, progress: Callable[[int, int], None] | None = None) -> ProbeCurve:
    """Test accuracy of linear probes on an encoder's frozen features of the labelled photo set.

    Args:
        encoder: registry name whose features are on disk (shipped: mae-tiny, beit-tiny;
            others after ``python -m vitviz probe-features --model NAME``).
        layer: 0 = embedding, ``i`` = after block ``i``, -1 = last block.
        pooling: ``cls`` (class token) or ``avg`` (average patch token).
        labels_per_class: labelled train photos per class (``"all"`` = every one).
        seeds: one probe per seed (which photos are labelled).
        random_init: the random-weight version of the encoder.

    Returns:
        :class:`~vitviz.probing.linear.ProbeCurve` (``accuracy`` ``(len(k), len(seeds))``).

    Raises:
        ModelUnavailable: no features of this encoder on disk (names the ones there are).
        ValueError: a layer, pooling or labels-per-class value that does not exist.
    """
    fs = find_features(encoder, random_init)
    if fs is None:
        have = ", ".join(available_features()) or "none"
        raise ModelUnavailable(f"no probe features of {feature_key(encoder, random_init)} here (have: {have}); "
                               f"compute them with: python -m vitviz probe-features --model {encoder}"
                               f"{' --random-weights' if random_init else ''} (needs the photos built by "
                               "python -m vitviz.training.labelled)")
    return probe_curve(fs, layer, pooling, labels_per_class, seeds, progress=progress)
