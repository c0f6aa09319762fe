"""Every slider stop at once: batched ratio sweeps and a bounded per-image cache.

After an upload, the app reconstructs the current stop first (so the user sees a
result at once), then :func:`sweep` fills every other stop in batches and stores
them in :data:`CACHE`; moving the slider afterwards is a dictionary lookup.
Random masks nest across ratios, so one seed gives one coherent sequence.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .. import settings
from ..cache import LRU
from ..core.images import ImageInput, pixels_digest
from ..core.masking import MAX_RATIO, check_pattern, make_mask, validate_ratio
from ..models.loaded import DeferredModel
from ..models.loading import LoadedModel
from .reconstruct import Reconstruction, mae_architecture, predict_stops, prepare

#: The slider's stops: 0.0, 0.05, ..., 0.95.
STOPS: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(int(round(MAX_RATIO / 0.05)) + 1))


@dataclass(frozen=True)
class Sweep:
    """Reconstructions of one image at several ratios (same seed and pattern)."""

    ratios: tuple[float, ...]
    results: tuple[Reconstruction, ...]

    @property
    def mse(self) -> list[float]:
        """Hidden-patch MSE per ratio (0 where nothing is hidden)."""
        return [r.masked_mse for r in self.results]

    @property
    def psnr(self) -> list[float | None]:
        """Hidden-patch PSNR in dB per ratio (None where nothing is hidden)."""
        return [r.psnr if r.mask.any() else None for r in self.results]

    @property
    def tokens(self) -> list[int]:
        """Visible tokens the encoder processed per ratio."""
        return [r.tokens_encoded for r in self.results]

    def at(self, ratio: float) -> Reconstruction:
        """The result at the stop nearest to ``ratio``."""
        i = int(np.argmin([abs(r - ratio) for r in self.ratios]))
        return self.results[i]


def stop_of(ratio: float) -> float:
    """Snap a ratio to the nearest slider stop (validated)."""
    r = validate_ratio(ratio)
    return min(STOPS, key=lambda s: abs(s - r))


#: Module -> :func:`weights_fingerprint` (computed once per loaded module; an entry goes with its module).
_FINGERPRINTS: weakref.WeakKeyDictionary[torch.nn.Module, str] = weakref.WeakKeyDictionary()
_FINGERPRINTS_LOCK = threading.Lock()
#: Values read from each end of every parameter and buffer for :func:`weights_fingerprint`.
FINGERPRINT_VALUES = 256


def weights_fingerprint(model: LoadedModel) -> str:
    """A short digest of the weights ``model`` holds: SHA-256 over every parameter's and buffer's name, shape and
    dtype and its first and last :data:`FINGERPRINT_VALUES` values (a few milliseconds once per loaded module,
    kept while it lives). Two modules with different weights -- trained and random, or a checkpoint before and
    after it was rewritten -- differ in it; the same weights loaded twice do not.

    A :class:`~vitviz.models.loaded.DeferredModel` (a host whose model workers hold the weights) is fingerprinted
    by its weight file (:attr:`~vitviz.models.loaded.LoadedModel.weights`): reading its numbers would load them
    here for nothing. Deferred models are registry models, whose file a running app does not reload anyway."""
    if isinstance(model, DeferredModel):
        return hashlib.sha256(f"file|{model.random_init}|{model.weights}".encode()).hexdigest()[:16]
    module = model.module
    with _FINGERPRINTS_LOCK:
        found = _FINGERPRINTS.get(module)
    if found is not None:
        return found
    digest = hashlib.sha256()
    with torch.no_grad():
        for name, t in itertools.chain(module.named_parameters(), module.named_buffers()):
            digest.update(f"{name}|{tuple(t.shape)}|{t.dtype}|".encode())
            flat = (t.dequantize() if t.is_quantized else t).detach().reshape(-1)
            for part in (flat[:FINGERPRINT_VALUES], flat[-FINGERPRINT_VALUES:]):
                digest.update(part.float().cpu().numpy().tobytes())
    found = digest.hexdigest()[:16]
    with _FINGERPRINTS_LOCK:
        _FINGERPRINTS[module] = found
    return found


def image_key(model: LoadedModel, original: np.ndarray, seed: int, pattern: str) -> str:
    """Cache key: the model (its picker value, so trained and random weights differ; its kernels; its weights'
    fingerprint, so a checkpoint rewritten on disk is not served the old one's pixels), the exact pixels the
    model sees, seed and pattern."""
    return (f"{pixels_digest(original)}|{model.choice}|{model.kernels}|{weights_fingerprint(model)}|"
            f"{model.device}|{seed}|{pattern}")


class SweepCache:
    """Per-image results, ``key -> {ratio: Reconstruction}``, in the package's one LRU (thread-safe).

    Args:
        capacity: images kept (each holds up to ``len(STOPS)`` results, about 0.7 MB
            each at 224 px), or a callable returning it. Default for :data:`CACHE`:
            ``VITVIZ_SWEEP_CACHE`` (24).
    """

    def __init__(self, capacity: int | Callable[[], int]) -> None:
        self._images: LRU[str, dict[float, Reconstruction]] = LRU(capacity, name="mae.sweep")

    def get(self, key: str, ratio: float) -> Reconstruction | None:
        """The result at ``ratio`` for image ``key`` (the image becomes the most recent), or None."""
        entry = self._images.get(key)
        return None if entry is None else entry.get(ratio)

    def missing(self, key: str, ratios: Sequence[float]) -> list[float]:
        """The ratios of ``ratios`` not cached for image ``key``."""
        have = self._images.get(key) or {}
        return [r for r in ratios if r not in have]

    def put(self, key: str, ratio: float, result: Reconstruction) -> None:
        """Store one result."""
        entry = self._images.setdefault(key, dict)
        entry[ratio] = result
        self._images.put(key, entry)  # measured again for the cache budget

    def __len__(self) -> int:
        return len(self._images)

    def clear(self) -> None:
        """Drop every image."""
        self._images.clear()


CACHE = SweepCache(lambda: settings.get("VITVIZ_SWEEP_CACHE"))


def _check(pattern: str, seed: int) -> None:
    check_pattern(pattern)
    make_mask((2, 2), 0.0, seed, "random")  # validates the seed


def sweep(
    model: LoadedModel,
    image: ImageInput,
    seed: int = 0,
    pattern: str = "random",
    ratios: Sequence[float] = STOPS,
    progress: Callable[[float], None] | None = None,
    cache: SweepCache | None = CACHE,
    batch: int = 10,
) -> Sweep:
    """Reconstruct an image at many masking ratios in batched passes.

    Args:
        model: a loaded MAE.
        image: anything :func:`vitviz.load_image` reads.
        seed: mask seed (the same for every ratio: random masks nest).
        pattern: ``random``, ``block`` or ``grid``.
        ratios: ratios in [0, 0.95] (default: every slider stop).
        progress: called with the fraction done after each batch.
        cache: where results are looked up and stored (``None``: no caching).
        batch: masks per batched pass (bounds memory and gives progress updates).

    Returns:
        A :class:`Sweep` in the order of ``ratios``; each result equals
        :func:`vitviz.reconstruct` with the same arguments (to float rounding).
    """
    _check(pattern, seed)
    rs = tuple(validate_ratio(r) for r in ratios)
    mae_architecture(model)
    return _sweep_prepared(model, prepare(model, image), seed, pattern, rs, progress, cache, batch)


def _sweep_prepared(model: LoadedModel, original: np.ndarray, seed: int, pattern: str, rs: tuple[float, ...],
                    progress: Callable[[float], None] | None, cache: SweepCache | None, batch: int) -> Sweep:
    mae = mae_architecture(model)
    key = image_key(model, original, seed, pattern)
    todo = cache.missing(key, rs) if cache is not None else list(dict.fromkeys(rs))
    done: dict[float, Reconstruction] = {}
    for start in range(0, len(todo), max(1, batch)):
        chunk = todo[start : start + batch]
        masks = torch.stack([make_mask(mae.config.grid, r, seed, pattern) for r in chunk])
        for r, res in zip(chunk, predict_stops(model, original, masks, max_batch=batch)):
            done[r] = res
            if cache is not None:
                cache.put(key, r, res)
        if progress is not None:
            progress(min(1.0, (start + len(chunk)) / max(1, len(todo))))
    results = []
    for r in rs:
        res = done.get(r) or (cache.get(key, r) if cache is not None else None)
        if res is None:  # evicted meanwhile by other users: recompute this one
            m = make_mask(mae.config.grid, r, seed, pattern)
            res = predict_stops(model, original, m.unsqueeze(0))[0]
        results.append(res)
    return Sweep(rs, tuple(results))


def reconstruct_cached(model: LoadedModel, image: ImageInput, mask_ratio: float, seed: int = 0,
                       pattern: str = "random", cache: SweepCache = CACHE) -> tuple[Reconstruction, bool]:
    """One slider stop, from the cache when precomputed.

    Returns:
        ``(result, hit)`` where ``hit`` tells whether it came from the cache.
    """
    _check(pattern, seed)
    r = stop_of(mask_ratio)
    mae_architecture(model)
    original = prepare(model, image)
    key = image_key(model, original, seed, pattern)
    hit = cache.get(key, r)
    if hit is not None:
        return hit, True
    res = _sweep_prepared(model, original, seed, pattern, (r,), None, cache, 1).results[0]
    return res, False
