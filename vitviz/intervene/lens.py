"""The logit lens: read every layer's residual stream through the model's own final norm and head.

nostalgebraist (2020, "interpreting GPT: the logit lens") applied a language model's final norm and
unembedding to the hidden state after each layer, to watch the answer form. For a ViT classifier
each block's output (timm's ``forward_intermediates``: the residual stream before the final norm)
goes through ``norm`` and the model's own head, read two ways: pooled as the model pools (the class
token) and as the average of the patch tokens. For an MAE, each decoder block's output goes through
``decoder_norm`` and ``decoder_pred``: the picture the decoder would paint if it stopped there. A
DINOv2 backbone without a head is read with dinov2-small-lab8's linear head (trained on its frozen
final class token), and says so.

What it can and cannot mean: the head was trained on the last layer only. Later layers live in its
basis, so their readings are meaningful; early layers need not be, and a low reading there says the
head cannot read the answer *with this basis*, not that the layer holds no information (the tuned
lens, Belrose et al. 2023, trains a probe per layer for that reason). At the last layer the lens is
the model's own output, exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .. import settings
from ..cache import LRU
from ..core.images import ImageInput, denormalize, model_input, pixels_digest, square_view
from ..core.patches import patchify
from ..explain.capture import capture_block_tokens
from ..explain.labels import class_names, softmax
from ..mae.reconstruct import assemble_stops
from ..models.linear_head import head_dir, read_head
from ..models.loading import LoadedModel
from ..models.registry import LAB8_HEAD
from ..models.runner import runs_model
from .subject import MAE_RATIO, subject_of

#: The model whose head reads a head-less DINOv2 backbone.
LAB8 = "dinov2-small-lab8"


@dataclass(frozen=True, eq=False)
class ClassLens:
    """A classifier's answer read after every block.

    Attributes:
        model_name: registry name.
        head_from: ``""`` for the model's own head, else which head reads it (a backbone without one).
        classes: ``C`` class names.
        names: ``L`` layer names (``layer 0`` ... ``layer L-1``: the output of each block, counted from 0
            as the heads of :func:`vitviz.ablate` are).
        cls_logits: ``(L, C)`` float32: each block's output, final norm, pooled as the model pools
            (the class token), the head. Row ``L - 1`` is the model's own logits.
        avg_logits: ``(L, C)`` float32: the same from the average of the patch tokens.
        logits: ``(C,)`` the model's own output.
        random_init: random weights.
    """

    model_name: str
    head_from: str
    classes: tuple[str, ...]
    names: tuple[str, ...]
    cls_logits: np.ndarray
    avg_logits: np.ndarray
    logits: np.ndarray
    random_init: bool = False

    @property
    def final(self) -> int:
        """Index of the model's answer."""
        return int(np.argmax(self.logits))

    def probs(self, pool: str = "cls") -> np.ndarray:
        """``(L, C)`` float64 probabilities by layer, ``pool`` = ``cls`` or ``avg``."""
        z = self.cls_logits if pool == "cls" else self.avg_logits
        return np.stack([softmax(row) for row in z])

    def prob_by_layer(self, target: int | None = None, pool: str = "cls") -> np.ndarray:
        """``(L,)`` probability of ``target`` (default the final answer) at each layer."""
        return self.probs(pool)[:, self.final if target is None else target]

    def top(self, layer: int, k: int = 3, pool: str = "cls") -> list[tuple[str, float]]:
        """The ``k`` classes the lens ranks first at ``layer`` (0-based block index)."""
        p = self.probs(pool)[layer]
        return [(self.classes[i], float(p[i])) for i in np.argsort(-p, kind="stable")[:k]]

    def first_lead(self, target: int | None = None, pool: str = "cls") -> int | None:
        """The first layer (0-based) at which ``target`` (default the final answer) is ranked first; None if never."""
        t = self.final if target is None else target
        hits = np.flatnonzero(np.argmax(self.probs(pool), axis=1) == t)
        return int(hits[0]) if hits.size else None

    def summary(self) -> str:
        """One measured sentence."""
        t = self.final
        lead = self.first_lead()
        head = f" (read with {self.head_from})" if self.head_from else ""
        where = "never" if lead is None else f"first at {self.names[lead]}"
        avg = self.first_lead(pool="avg")
        where_avg = "never" if avg is None else f"first at {self.names[avg]}"
        return (f"{self.model_name}{head} answers *{self.classes[t]}*; through the lens the class token puts it on "
                f"top {where} of {len(self.names)}, the averaged patch tokens {where_avg}.")


@dataclass(frozen=True, eq=False)
class PixelLens:
    """An MAE decoder's picture read after every decoder block.

    Attributes:
        model_name: registry name.
        names: ``Ld`` layer names (``decoder layer 0`` ...: each decoder block's output, from 0).
        pictures: ``(Ld, S, S, 3)`` uint8, each layer's raw prediction everywhere.
        errors: ``(Ld,)`` MSE over the hidden patches, RGB in [0, 1]; the last is the reconstruction's.
        mask: ``(gh, gw)`` bool, True = hidden.
        original: ``(S, S, 3)`` uint8.
    """

    model_name: str
    names: tuple[str, ...]
    pictures: np.ndarray
    errors: np.ndarray
    mask: np.ndarray
    original: np.ndarray
    random_init: bool = False

    def summary(self) -> str:
        """One measured sentence."""
        best = int(np.argmin(self.errors))
        return (f"{self.model_name}'s decoder, read after each of its {len(self.names)} blocks: hidden-patch error "
                f"from {self.errors[0]:.4f} ({self.names[0]}) to {self.errors[-1]:.4f} ({self.names[-1]}); "
                f"lowest at {self.names[best]}.")


def _lab8_head(model: LoadedModel) -> Any:
    head = read_head(head_dir() / LAB8_HEAD)
    if model.name != head.backbone:
        raise ValueError(f"{model.name} has no classifier head, and the only shipped linear head ({LAB8}) reads "
                         f"{head.backbone}; pick a classifier, {head.backbone} or an MAE")
    return head


@runs_model
def class_lens_logits(model: LoadedModel, view: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(cls_logits (L, C), avg_logits (L, C), logits (C,))`` of a timm ViT (uncached; see :func:`logit_lens`)."""
    module: Any = model.module
    x = model_input(view, model.data_config, model.device)
    own = int(getattr(module, "num_classes", 0) or 0) > 0
    head = None if own else _lab8_head(model)
    npre = int(module.num_prefix_tokens)

    def read(normed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        avg = normed[:, npre:].mean(dim=1)
        if own:
            return module.forward_head(normed), module.head(module.fc_norm(avg))
        return head.logits(normed[:, 0]), head.logits(avg)

    with torch.inference_mode():
        final, layers = module.forward_intermediates(x, return_prefix_tokens=True, norm=False, output_fmt="NLC")
        rows = [read(module.norm(torch.cat([pre, patches], dim=1))) for patches, pre in layers]
        logits = module.forward_head(final) if own else head.logits(final[:, 0])
    cls = torch.cat([r[0] for r in rows]).float().cpu().numpy()
    avg = torch.cat([r[1] for r in rows]).float().cpu().numpy()
    return cls, avg, logits[0].float().cpu().numpy()


@runs_model
def pixel_lens_outputs(model: LoadedModel, view: np.ndarray, mask: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """An MAE decoder read after each block: ``(pixels (Ld, S, S, 3) in [0, 1] space, losses (Ld,))``."""
    module: Any = model.module
    cfg = model.data_config
    p = module.patch_size
    x = model_input(view, cfg, model.device)
    m = torch.as_tensor(mask, dtype=torch.bool)
    ids = subject_of(model, m).ids()
    seq, _ = capture_block_tokens(module.decoder_blocks,
                                  lambda: module.forward_decoder(module.forward_encoder(x, ids), ids))
    target = patchify(x, p)[0]
    mu, var = target.mean(dim=-1, keepdim=True), target.var(dim=-1, keepdim=True)
    space = (target - mu) / (var + 1e-6).sqrt() if model.norm_pix else target
    gh, gw = m.shape
    hidden = m.reshape(-1).to(model.device).float()
    pics, losses = [], []
    with torch.inference_mode():
        for t in seq[1:]:
            pred = module.decoder_pred(module.decoder_norm(t.to(model.device)))[0, 1:].float()  # (L, p*p*3)
            losses.append(((pred - space).pow(2).mean(-1) * hidden).sum() / hidden.sum().clamp(min=1))
            if model.norm_pix:
                pred = pred * (var + 1e-6).sqrt() + mu
            px = denormalize(pred.view(1, -1, 3).transpose(1, 2).unsqueeze(-1), cfg).squeeze(-1).transpose(1, 2)
            pics.append(px.reshape(gh, gw, p, p, 3).permute(0, 2, 1, 3, 4).reshape(gh * p, gw * p, 3))
    return torch.stack(pics).cpu(), torch.stack(losses).cpu()


#: Lens readings, keyed by model, photo and MAE mask.
CACHE: LRU[tuple, Any] = LRU(lambda: settings.get("VITVIZ_ATTENTION_CACHE"), name="intervene.lens")


def logit_lens(model: LoadedModel, image: ImageInput, mask: np.ndarray | None = None, mask_ratio: float = MAE_RATIO,
               seed: int = 0) -> ClassLens | PixelLens:
    """Every layer's reading through the final norm and head (cached per model, photo and mask).

    Args:
        model: a classifier (ViT, DeiT, dinov2-small-lab8), dinov2-small (read with dinov2-small-lab8's
            head), or an MAE (its decoder, read through ``decoder_norm`` and ``decoder_pred``).
        image: anything :func:`vitviz.load_image` reads.
        mask, mask_ratio, seed: MAE only: the mask (default 75% hidden at random, seed 0).

    Returns:
        :class:`ClassLens` or :class:`PixelLens`.

    Raises:
        ValueError: a model the lens cannot read (a backbone with no head to borrow, Swin, BEiT).
    """
    subject = subject_of(model, mask, mask_ratio, seed)
    view = square_view(image, model.input_size)
    m = None if subject.mask is None else subject.mask.cpu().numpy().astype(bool)
    key = (model.name, bool(model.random_init), str(model.device), id(model.architecture), pixels_digest(view),
           None if m is None else m.tobytes())
    if subject.kind == "mae":
        assert m is not None

        def pixel() -> PixelLens:
            pixels, losses = pixel_lens_outputs(model, view, m)
            n = pixels.shape[0]
            masks = torch.as_tensor(m).unsqueeze(0).expand(n, -1, -1)
            recs = assemble_stops(view, pixels, masks, losses, model.patch_size, model.norm_pix)
            names = tuple(f"decoder layer {i}" for i in range(n))
            return PixelLens(model.name, names, np.stack([r.reconstruction for r in recs]),
                             np.array([r.masked_mse for r in recs]), m, view, bool(model.random_init))

        return CACHE.get_or_compute(key, pixel)
    if subject.kind == "backbone":
        _lab8_head(model)

    def classes() -> ClassLens:
        cls, avg, logits = class_lens_logits(model, view)
        own = subject.kind == "classifier"
        names = class_names(model) if own else read_head(head_dir() / LAB8_HEAD).classes
        return ClassLens(model.name, "" if own else f"{LAB8}'s linear head", tuple(names),
                         tuple(f"layer {i}" for i in range(cls.shape[0])), cls, avg, logits,
                         bool(model.random_init))

    return CACHE.get_or_compute(key, classes)

