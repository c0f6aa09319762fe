"""Measurements of a loaded model on the bundled example photos: what the doctor's findings quote.

For an MAE: the hidden-patch error at 75% (and along a ratio curve), the visible-ring baseline's
error under the same masks (:func:`vitviz.mae.baseline.ring_mean_fill`), what the norm-pix leak
alone would score, and which target space the decoder's raw output fits. For every ViT encoder:
attention distance and entropy by depth, near-uniform ("dead") and sink heads
(:mod:`vitviz.explain.heads`), and high-norm token outliers (:mod:`vitviz.explain.norms`).

Errors are RGB in [0, 1], squared, averaged over the hidden patches' pixels and channels, from
uint8 panels, as :func:`vitviz.reconstruct` computes them; every photo uses the same seeded masks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .. import settings
from ..assets import example_images
from ..cache import LRU
from ..core.images import normalize, uint8_to_unit
from ..core.masking import make_mask
from ..core.patches import patchify
from ..models.loading import LoadedModel, load_model
from ..models.mae import MaskedAutoencoderViT
from ..models.runner import runs_model, runs_with_model
from . import sources

#: The mask seed of every measurement (masks nest across ratios for one seed).
SEED = 0


@dataclass
class Measures:
    """One model's numbers on the example photos (None / empty where they do not apply).

    Attributes:
        name: the model's name; ``random_init``: its weights are random.
        input_size, patch_size: ``S`` and ``P``; ``photos``: the photo names.
        mse75: mean hidden-patch error at 75% over the photos; ``mse75_each``: per photo.
        ring75: the visible-ring baseline's error under the same masks.
        leak75: the error of filling each hidden patch with its own true mean colour: what a
            norm-pix prediction of zeros scores once de-normalised with the true statistics.
        curve: ``{ratio: mean hidden-patch error}`` (:data:`vitviz.doctor.sources.CURVE_RATIOS`).
        knee: the first ratio whose error is :data:`~vitviz.doctor.sources.KNEE_RISE` times the error
            at the lowest ratio (None: it never rises that much).
        loss_pixels, loss_normed: the decoder's raw output on hidden patches against the normalised
            input pixels and against per-patch normalised pixels (mean squared error, 75%).
        zero_pixels, zero_normed: the same losses of a prediction of zeros (what no skill scores).
        distance: ``(L,)`` mean attention distance per layer over uniform attention's (1 = uniform).
        entropy: ``(L,)`` mean normalised attention entropy per layer; ``entropy_mean`` overall.
        dead_share: share of heads with entropy >= :data:`~vitviz.doctor.sources.DEAD_ENTROPY`.
        sink_share: share of heads typed ``prefix-sink`` (:mod:`vitviz.explain.heads`).
        outlier_share: share of block-output patch tokens that are high-norm outliers.
        max_norm_ratio: largest patch-token norm over its layer's median, over blocks and photos.
        panels: the first photo's ``original``, ``masked``, ``reconstruction`` (pasted) and ``ring``
            panels at 75%; ``mask`` its ``(gh, gw)`` mask.
    """

    name: str
    random_init: bool
    input_size: int
    patch_size: int
    photos: tuple[str, ...]
    mse75: float | None = None
    mse75_each: list[float] = field(default_factory=list)
    ring75: float | None = None
    leak75: float | None = None
    curve: dict[float, float] = field(default_factory=dict)
    knee: float | None = None
    loss_pixels: float | None = None
    loss_normed: float | None = None
    zero_pixels: float | None = None
    zero_normed: float | None = None
    distance: list[float] = field(default_factory=list)
    entropy: list[float] = field(default_factory=list)
    entropy_mean: float | None = None
    dead_share: float | None = None
    sink_share: float | None = None
    outlier_share: float | None = None
    max_norm_ratio: float | None = None
    panels: dict[str, np.ndarray] = field(default_factory=dict)
    mask: np.ndarray | None = None

    def as_dict(self) -> dict:
        """JSON-ready numbers (no panels)."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("panels", "mask")}
        out["curve"] = {f"{r:.2f}": v for r, v in self.curve.items()}
        return out


def _hidden_mse(a: np.ndarray, b: np.ndarray, mask: np.ndarray, p: int) -> float:
    """Mean squared error of two uint8 ``(S, S, 3)`` images over the hidden patches, in [0, 1] units."""
    d = (a.astype(np.float64) - b.astype(np.float64)) / 255.0
    gh, gw = mask.shape
    per = (d ** 2).reshape(gh, p, gw, p, 3).mean(axis=(1, 3, 4))
    return float(per[mask].mean()) if mask.any() else 0.0


def ring_panel(view: np.ndarray, mask: torch.Tensor, p: int) -> np.ndarray:
    """The visible-ring baseline of a uint8 view as a uint8 panel."""
    from ..mae.baseline import ring_mean_fill

    filled = ring_mean_fill(uint8_to_unit(view), mask.bool(), p)
    return (filled.clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 0).numpy()


def leak_mse(view: np.ndarray, mask: np.ndarray, p: int) -> float:
    """Error of filling each hidden patch with its true mean colour (per channel), in [0, 1] units."""
    x = view.astype(np.float64) / 255.0
    gh, gw = mask.shape
    patches = x.reshape(gh, p, gw, p, 3)
    var = ((patches - patches.mean(axis=(1, 3), keepdims=True)) ** 2).mean(axis=(1, 3, 4))
    return float(var[mask].mean()) if mask.any() else 0.0


@runs_model
@torch.inference_mode()
def raw_prediction(model: LoadedModel, view: np.ndarray, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The decoder's raw output and the normalised input patches, for one mask.

    Args:
        model: a loaded MAE; ``view``: ``(S, S, 3)`` uint8; ``mask``: ``(gh, gw)`` bool, True = hidden.

    Returns:
        ``(pred, target)``: ``(L, p*p*3)`` each, on the CPU; ``target`` is the input normalised with the
        model's mean/std, patchified as facebookresearch/mae's ``patchify``.
    """
    mae = model.module
    assert isinstance(mae, MaskedAutoencoderViT)
    x = normalize(uint8_to_unit(view).to(model.device), model.data_config).unsqueeze(0)
    keep = (~mask.reshape(-1).to(model.device)).nonzero().flatten()
    pred = mae.forward_decoder(mae.encode_tokens(mae.embed_patches(x), keep), keep)[0].float()
    return pred.cpu(), patchify(x, mae.patch_size)[0].float().cpu()


def _target_losses(pred: torch.Tensor, target: torch.Tensor, hidden: torch.Tensor) -> tuple[float, ...]:
    mu = target.mean(dim=-1, keepdim=True)
    var = target.var(dim=-1, keepdim=True)
    normed = (target - mu) / (var + 1e-6).sqrt()
    h = hidden.reshape(-1)
    lp = float(((pred - target) ** 2).mean(dim=-1)[h].mean())
    ln = float(((pred - normed) ** 2).mean(dim=-1)[h].mean())
    return lp, ln, float((target ** 2).mean(dim=-1)[h].mean()), float((normed ** 2).mean(dim=-1)[h].mean())


def _knee(curve: dict[float, float]) -> float | None:
    ratios = sorted(curve)
    if not ratios:
        return None
    base = curve[ratios[0]]
    return next((r for r in ratios[1:] if curve[r] >= sources.KNEE_RISE * base), None)


def _reconstruction(m: Measures, model: LoadedModel, photos: list[str]) -> None:
    from ..mae.reconstruct import assemble_stops, predict, prepare

    mae = model.architecture
    assert isinstance(mae, MaskedAutoencoderViT)
    p, grid = mae.patch_size, mae.config.grid
    ratios = sources.CURVE_RATIOS
    masks = torch.stack([make_mask(grid, r, SEED, "random") for r in ratios])
    i75 = ratios.index(sources.MASK_RATIO)
    per_ratio: dict[float, list[float]] = {r: [] for r in ratios}
    ring, leak, losses = [], [], []
    for k, photo in enumerate(photos):
        view = prepare(model, photo)
        pixels, loss = predict(model, view, masks, channels_last=True)
        recs = assemble_stops(view, pixels, masks, loss, p, model.norm_pix)
        for r, rec in zip(ratios, recs):
            per_ratio[r].append(rec.masked_mse)
        mask75 = masks[i75]
        rp = ring_panel(view, mask75, p)
        ring.append(_hidden_mse(rp, view, mask75.numpy(), p))
        leak.append(leak_mse(view, mask75.numpy(), p))
        pred, target = raw_prediction(model, view, mask75)
        losses.append(_target_losses(pred, target, mask75))
        if k == 0:
            rec = recs[i75]
            m.panels = {"original": rec.original, "masked": rec.masked, "reconstruction": rec.pasted, "ring": rp}
            m.mask = rec.mask
    m.curve = {r: float(np.mean(v)) for r, v in per_ratio.items()}
    m.mse75_each = [float(v) for v in per_ratio[sources.MASK_RATIO]]
    m.mse75 = m.curve[sources.MASK_RATIO]
    m.ring75, m.leak75 = float(np.mean(ring)), float(np.mean(leak))
    m.knee = _knee(m.curve)
    m.loss_pixels, m.loss_normed, m.zero_pixels, m.zero_normed = (float(v) for v in np.mean(losses, axis=0))


def _attention(m: Measures, model: LoadedModel, photos: list[str]) -> None:
    from ..explain.heads import HEAD_TYPES, head_atlas
    from ..explain.norms import token_norms

    atlas = head_atlas(model)  # the average over the example photos (cached per model)
    m.distance = [float(v) for v in atlas.distance.mean(axis=1) / max(atlas.uniform_distance, 1e-9)]
    m.entropy = [float(v) for v in atlas.entropy.mean(axis=1)]
    m.entropy_mean = float(atlas.entropy.mean())
    m.dead_share = float((atlas.entropy >= sources.DEAD_ENTROPY).mean())
    m.sink_share = float((atlas.types == HEAD_TYPES.index("prefix-sink")).mean())
    shares, ratios = [], []
    for photo in photos:
        n = token_norms(model, photo)
        shares.append(float(n.outliers[1:].mean()))
        ratios.append(max(n.ratio(i) for i in range(1, n.num_layers)))
    m.outlier_share, m.max_norm_ratio = float(np.mean(shares)), float(np.max(ratios))


def random_twin(model: LoadedModel) -> LoadedModel:
    """The model's architecture with seeded random weights (the same builder as ``random_init=True``): what
    training must beat."""
    from ..models import local
    from ..models.build import build_random

    if model.spec.local is not None:
        module, dc, norm_pix = local.build_random(model.spec.local)
    else:
        module, dc, norm_pix = build_random(model.spec)
    module = module.eval().requires_grad_(False).to(model.device)
    return LoadedModel(model.name, model.spec, module, dc, model.device, norm_pix=norm_pix, random_init=True)


@runs_with_model
def measure(model: LoadedModel, photos: list[str] | None = None) -> Measures:
    """Every measurement that applies to ``model`` on ``photos`` (default: the bundled example photos).

    Runs where the model's calls run (:func:`~vitviz.models.runner.runs_with_model`): with model workers the
    reconstructions and attention stay there and only the numbers and the first photo's panels come back.

    Raises:
        ValueError: no example photos are installed.
    """
    photos = list(photos) if photos is not None else example_images()
    if not photos:
        raise ValueError("no example photos are installed, so there is nothing to measure on")
    from pathlib import Path

    m = Measures(model.name, bool(model.random_init), model.input_size, model.patch_size,
                 tuple(Path(p).stem for p in photos))
    if isinstance(model.architecture, MaskedAutoencoderViT):
        _reconstruction(m, model, photos)
    try:
        _attention(m, model, photos)
    except ValueError:  # a model without one global token layout (Swin): no head statistics
        pass
    return m


#: mae-tiny's measurements, per device and photo list (a few kilobytes).
REFERENCE: LRU[tuple, Measures] = LRU(lambda: settings.get("VITVIZ_MAX_MODELS"))


def reference(device: str | torch.device = "cpu", photos: list[str] | None = None) -> Measures:
    """mae-tiny's :class:`Measures` (cached): the healthy MAE every report compares with."""
    photos = list(photos) if photos is not None else example_images()
    return REFERENCE.get_or_compute((str(device), tuple(photos)),
                                    lambda: measure(load_model("mae-tiny", device=device), photos))
