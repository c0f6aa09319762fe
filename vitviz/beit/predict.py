"""BEiT's masked image modeling on one image: hide patches, predict their visual tokens.

The model sees the image with the hidden patches replaced by its mask token and
classifies every position over its codebook (:func:`guess_array`). With the tokenizer
that made its targets (``vq-tiny`` for ``beit-tiny``, ``vq-kd-tiny`` for ``beit-tiny-v2``), :func:`predict_array` scores the
hidden positions against the tokenizer's ids of the same image and decodes the guesses
to pixels. A published checkpoint whose tokenizer vitviz cannot load (DALL-E's dVAE for
``beit-base-pt22k``) gives only the guessed ids (:class:`TokenGuess`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..core.masking import paste_visible, upsample_mask
from ..models.beit import BEiTForMIM, normalize
from ..models.vqkd import VQKD
from .masking import block_mask, random_patch_mask
from .tokenize import AnyTokenizer, decode_ids, tokenize_array, tokenize_kd_array

BEIT_PATTERNS: tuple[str, ...] = ("block", "random")


@dataclass(frozen=True)
class TokenGuess:
    """A BEiT model's guesses for the hidden patches of one image, without targets.

    Attributes:
        original: ``(S, S, 3)`` uint8 model view.
        mask: ``(gh, gw)`` bool, True = hidden.
        predicted_ids: ``(gh, gw)`` int64 top-1 ids (only hidden positions are meaningful).
        top5: ``(gh, gw, 5)`` int64, best first.
        confidence: ``(gh, gw)`` float32 probability of the top-1 id.
        vocab_size: the number of codes the model chooses from.
        patch_size: pixels per patch side.
    """

    original: np.ndarray
    mask: np.ndarray
    predicted_ids: np.ndarray
    top5: np.ndarray
    confidence: np.ndarray
    vocab_size: int
    patch_size: int

    def metrics(self) -> dict:
        """JSON-ready summary (no accuracy: there are no targets)."""
        hidden = self.predicted_ids[self.mask]
        return {"hidden_patches": int(self.mask.sum()), "num_patches": int(self.mask.size),
                "vocab_size": self.vocab_size, "distinct_predicted_ids": int(np.unique(hidden).size),
                "mean_confidence_hidden": float(self.confidence[self.mask].mean())}


@dataclass(frozen=True)
class BEiTPrediction:
    """Token predictions for the hidden patches of one image.

    Attributes:
        original: ``(S, S, 3)`` uint8 model view.
        mask: ``(gh, gw)`` bool, True = hidden.
        target_ids: ``(gh, gw)`` int64, the tokenizer's ids of the image.
        predicted_ids: ``(gh, gw)`` int64 top-1 ids (visible positions are not scored).
        top5: ``(gh, gw, 5)`` int64, best first.
        confidence: ``(gh, gw)`` float32 probability of the top-1 id.
        decoded: ``(S, S, 3)`` uint8: the tokenizer decodes visible targets + hidden
            predictions, and the visible patches' pixels are pasted back.
        target_decoded: ``(S, S, 3)`` uint8, the image decoded from its own ids.
        patch_size: pixels per patch side.
        reference: for a feature tokenizer (``vq-kd-tiny``), the teacher's features of the image in
            PCA colours (``decoded`` and ``target_decoded`` are then in the same colours, and the visible
            patches pasted into ``decoded`` are this map's); None for a pixel tokenizer.
    """

    original: np.ndarray
    mask: np.ndarray
    target_ids: np.ndarray
    predicted_ids: np.ndarray
    top5: np.ndarray
    confidence: np.ndarray
    decoded: np.ndarray
    target_decoded: np.ndarray
    patch_size: int
    reference: np.ndarray | None = None

    @property
    def correctness(self) -> np.ndarray:
        """``(gh, gw)`` int8: 2 top-1 right, 1 in top-5, 0 wrong, -1 visible (not scored)."""
        top1 = self.predicted_ids == self.target_ids
        in5 = (self.top5 == self.target_ids[..., None]).any(-1)
        out = np.where(top1, 2, np.where(in5, 1, 0)).astype(np.int8)
        out[~self.mask] = -1
        return out

    @property
    def accuracy(self) -> float:
        """Top-1 token accuracy over hidden patches."""
        return float((self.predicted_ids == self.target_ids)[self.mask].mean())

    @property
    def top5_accuracy(self) -> float:
        """Top-5 token accuracy over hidden patches."""
        return float((self.top5 == self.target_ids[..., None]).any(-1)[self.mask].mean())

    @property
    def hidden_mse(self) -> float:
        """MSE of ``decoded`` against ``original`` (``reference`` for a feature tokenizer) over hidden patches
        (RGB in [0, 1])."""
        hid = upsample_mask(self.mask, self.patch_size)
        a = (self.original if self.reference is None else self.reference).astype(np.float64) / 255.0
        b = self.decoded.astype(np.float64) / 255.0
        return float(((a - b) ** 2)[hid].mean())

    def metrics(self) -> dict:
        """JSON-ready summary."""
        return {"top1_accuracy": self.accuracy, "top5_accuracy": self.top5_accuracy,
                "hidden_patches": int(self.mask.sum()), "num_patches": int(self.mask.size),
                "hidden_mse": self.hidden_mse,
                "mean_confidence_hidden": float(self.confidence[self.mask].mean())}


def make_beit_mask(grid: tuple[int, int], ratio: float, seed: int, pattern: str = "block") -> np.ndarray:
    """``(gh, gw)`` bool mask (True = hidden) from ``numpy.random.default_rng(seed)``.

    Raises:
        ValueError: unknown pattern (naming the valid ones) or ratio out of range.
    """
    rng = np.random.default_rng(int(seed))
    if pattern == "block":
        return block_mask(grid, ratio, rng)
    if pattern == "random":
        return random_patch_mask(grid, ratio, rng)
    raise ValueError(f"unknown mask pattern {pattern!r}; choose one of {', '.join(BEIT_PATTERNS)} "
                     "or pass a painted mask")


def _check_mask(mask: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    m = np.asarray(mask).astype(bool)
    if m.shape != tuple(grid):
        raise ValueError(f"the mask must be {grid[0]}x{grid[1]} patches, got {m.shape}")
    if not m.any():
        raise ValueError("the mask hides no patch; hide at least one to predict")
    return m


@torch.inference_mode()
def guess_array(beit: BEiTForMIM, original: np.ndarray, mask: np.ndarray) -> TokenGuess:
    """The model's top-5 codes and top-1 confidence at every position of a model view under a mask.

    Args:
        beit: the MIM model (eval mode).
        original: ``(S, S, 3)`` uint8 at ``beit.config.img_size``.
        mask: ``(gh, gw)`` bool, True = hidden; at least one hidden patch.

    Returns:
        :class:`TokenGuess`.
    """
    c = beit.config
    m = _check_mask(mask, c.grid)
    dev = beit.lm_head.weight.device
    x = torch.from_numpy(np.array(original, dtype=np.uint8, copy=True)).permute(2, 0, 1).float().div(255.0)[None].to(dev)
    logits = beit(normalize(x, c), torch.from_numpy(m).flatten()[None].to(dev))[0].float()  # (L, V)
    conf, top5 = logits.softmax(-1).topk(5, dim=-1)
    gh, gw = c.grid
    top5_np = top5.cpu().numpy().astype(np.int64).reshape(gh, gw, 5)
    return TokenGuess(original=original, mask=m, predicted_ids=top5_np[..., 0], top5=top5_np,
                      confidence=conf[:, 0].cpu().numpy().astype(np.float32).reshape(gh, gw),
                      vocab_size=c.vocab_size, patch_size=c.patch_size)


@torch.inference_mode()
def predict_array(beit: BEiTForMIM, vq: AnyTokenizer, original: np.ndarray, mask: np.ndarray) -> BEiTPrediction:
    """Predict the hidden tokens of a model view under a given mask, scored against the tokenizer's ids.

    Args:
        beit: the MIM model (eval mode); its vocabulary must match the tokenizer.
        vq: the tokenizer that made its targets.
        original: ``(S, S, 3)`` uint8 at ``beit.config.img_size``.
        mask: ``(gh, gw)`` bool, True = hidden; at least one hidden patch.

    Returns:
        :class:`BEiTPrediction`.
    """
    c = beit.config
    if c.vocab_size != vq.codebook_size:
        raise ValueError(f"the model predicts {c.vocab_size} codes but the tokenizer has {vq.codebook_size}")
    g = guess_array(beit, original, mask)
    tokens, basis = tokenize_kd_array(vq, original) if isinstance(vq, VQKD) else (tokenize_array(vq, original), None)
    mixed = np.where(g.mask, g.predicted_ids, tokens.ids)
    shown = original if tokens.reference is None else tokens.reference
    pasted = paste_visible(decode_ids(vq, mixed, basis), shown, g.mask, c.patch_size)
    return BEiTPrediction(original=original, mask=g.mask, target_ids=tokens.ids, predicted_ids=g.predicted_ids,
                          top5=g.top5, confidence=g.confidence, decoded=pasted, target_decoded=tokens.decoded,
                          patch_size=c.patch_size, reference=tokens.reference)
