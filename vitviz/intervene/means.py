"""Reference means for mean ablation: every head's output and every token, averaged over the example photos.

Mean ablation replaces an activation by what it usually is, so that removing a head does not also
push the network off its usual range (zero is a value a head may never take). "Usually" is the
average over the bundled example photos (:func:`vitviz.assets.example_images`), at each token
position, computed once per model (and MAE mask) and cached: the photo being analysed is never
what its own ablation is averaged from, unless it is itself one of the examples.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import settings
from ..assets import example_images
from ..cache import LRU
from ..core.images import model_input, square_view
from ..models.runner import runs_model
from ..models.loading import LoadedModel
from .hooks import Means, recording_inputs
from .subject import Subject, subject_of

#: Reference means, one entry per model and MAE mask (dinov2-small: 12 x 2 x 257 x 384 floats, 9.5 MB).
CACHE: LRU[tuple, Means] = LRU(lambda: settings.get("VITVIZ_MAX_MODELS"), name="intervene.means")


def _mask_array(subject: Subject) -> np.ndarray | None:
    return None if subject.mask is None else np.asarray(subject.mask.cpu(), dtype=bool)


def _key(subject: Subject, photos: tuple[str, ...]) -> tuple:
    model = subject.model
    mask = None if subject.mask is None else _mask_array(subject).tobytes()
    return (model.name, bool(model.random_init), str(model.device), id(model.architecture), mask, photos)


@runs_model
def compute_means(model: LoadedModel, mask: np.ndarray | None, photos: tuple[str, ...]) -> Means:
    """Average, over ``photos``, what each block's ``attn.proj`` and each block receive (uncached).

    One batched forward pass of the encoder (an MAE's under ``mask``, ``(gh, gw)`` bool, True = hidden).

    Returns:
        :class:`~vitviz.intervene.hooks.Means` on the model's device.
    """
    subject = subject_of(model, mask)
    views = [square_view(p, model.input_size) for p in photos]
    x = torch.cat([model_input(v, model.data_config, model.device) for v in views])
    with recording_inputs(subject.blocks) as (heads, tokens), torch.inference_mode():
        subject.encoder_run(x)()
    bad = [i for i, (h, t) in enumerate(zip(heads, tokens)) if len(h) != 1 or len(t) != 1]
    if bad:
        raise RuntimeError(f"blocks {bad} did not run exactly once")
    return Means(tuple(h[0].float().mean(0) for h in heads), tuple(t[0].float().mean(0) for t in tokens),
                 len(photos))


def reference_means(subject: Subject) -> Means:
    """The reference means of ``subject``'s model over the example photos (cached per model and mask).

    Raises:
        ValueError: no example photos in this installation.
    """
    photos = tuple(example_images())
    if not photos:
        raise ValueError("no example photos are installed, so mean ablation has nothing to average over; "
                         "use mode='zero'")
    return CACHE.get_or_compute(_key(subject, photos), lambda: compute_means(subject.model, _mask_array(subject), photos))
