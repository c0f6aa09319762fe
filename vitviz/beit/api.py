"""The public BEiT functions: :func:`tokenize` and :func:`beit_predict` on loaded models.

::

    t = vitviz.tokenize(vitviz.load_model("vq-tiny"), img)
    t.ids, t.decoded, t.codebook_size          # int64 (gh, gw); uint8 (S, S, 3); int
    k = vitviz.tokenize(vitviz.load_model("vq-kd-tiny"), img)   # BEiT v2's tokenizer, distilled from dinov2-small
    k = vitviz.tokenize(vitviz.load_model("beit-tiny"), img, tokenizer="vq-kd-tiny")   # the same, by name
    k.feature_cosine, k.reference              # decoded vs teacher features; the teacher's map in PCA colours
    p = vitviz.beit_predict(vitviz.load_model("beit-tiny"), img, mask_ratio=0.4, seed=0, pattern="block")
    p.mask, p.target_ids, p.predicted_ids, p.top5, p.decoded, p.accuracy
    g = guess_tokens(vitviz.load_model("beit-base-pt22k"), img)   # a model whose tokenizer vitviz lacks
    g.mask, g.predicted_ids, g.top5, g.confidence               # ids only: no targets, no pixels
"""

from __future__ import annotations

import numpy as np
import torch

from ..core.images import ImageInput, square_view
from ..models.beit import BEiTForMIM
from ..models.loading import LoadedModel, load_model
from ..models.vqkd import VQKD
from ..models.vqvae import VQTokenizer
from .predict import BEiTPrediction, TokenGuess, guess_array, make_beit_mask, predict_array
from .tokenize import AnyTokenizer, Tokens, tokenize_array
from ..models.runner import runs_model


def no_tokenizer_reason(model: LoadedModel) -> str:
    """Why ``model``'s guesses cannot be decoded or scored here (its tokenizer is not in vitviz)."""
    vocab = _beit(model).config.vocab_size
    if model.spec.local is not None:
        return (f"{model.name} is your own BEiT ({vocab} codes); its visual tokenizer is not part of the snapshot, so "
                "its guesses cannot be decoded to pixels nor scored against the image's own tokens")
    return (f"{model.name} predicts the ids of DALL-E's dVAE tokenizer ({vocab} codes). Its tokens cannot be "
            "decoded to pixels, nor the image's own tokens computed to score the guesses: DALL-E's encoder and "
            "decoder are published only as pickled Python objects, and vitviz never unpickles")


#: The registered visual tokenizers: a pixel one (vq-tiny) and BEiT v2's feature one (vq-kd-tiny).
TOKENIZERS: tuple[str, ...] = ("vq-tiny", "vq-kd-tiny")


def _vq(model: LoadedModel) -> AnyTokenizer:
    if not isinstance(model.module, (VQTokenizer, VQKD)):
        raise ValueError(f"{model.name} is not a visual tokenizer; pick one of {', '.join(TOKENIZERS)} to tokenize")
    return model.module


def tokenizer_named(name: str, like: LoadedModel) -> LoadedModel:
    """The registered tokenizer ``name``, on ``like``'s device (cached load).

    Raises:
        ValueError: ``name`` is not one of :data:`TOKENIZERS` (naming them).
    """
    if name not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {name!r}; choose one of {', '.join(TOKENIZERS)}")
    return load_model(name, device=like.device)


def _beit(model: LoadedModel) -> BEiTForMIM:
    if not isinstance(model.module, BEiTForMIM):
        raise ValueError(f"{model.name} is not a BEiT model; pick beit-tiny, beit-tiny-v2 or beit-base-pt22k to predict visual tokens")
    return model.module


def tokenizer_for(model: LoadedModel) -> LoadedModel:
    """The tokenizer that made ``model``'s training targets (``spec.tokenizer``), on the same device (cached load).

    Raises:
        ValueError: ``model`` is not a BEiT model, or vitviz has not its tokenizer (saying why).
    """
    if not model.spec.tokenizer:
        raise ValueError(no_tokenizer_reason(model) + "; use guess_tokens for its guessed ids")
    return load_model(model.spec.tokenizer, device=model.device, random_init=model.random_init)


@runs_model
def tokenize(model: LoadedModel, image: ImageInput, tokenizer: str | None = None) -> Tokens:
    """An image as visual tokens, and what the tokenizer rebuilds from them.

    Args:
        model: a loaded tokenizer (``vq-tiny``, ``vq-kd-tiny``); with ``tokenizer``, any loaded model
            (only its device is used).
        image: a path, bytes, PIL image or array (see :func:`vitviz.load_image`).
        tokenizer: a tokenizer's name (:data:`TOKENIZERS`) used instead of ``model``'s, loaded on
            ``model``'s device.

    Returns:
        :class:`~vitviz.beit.tokenize.Tokens`: ``ids`` int64 ``(gh, gw)``, ``decoded``
        uint8 ``(S, S, 3)``, ``codebook_size``; for vq-kd-tiny (BEiT v2's VQ-KD) ``decoded`` and
        ``reference`` are the decoded and the teacher's features in PCA colours, ``feature_cosine``
        their agreement.

    Raises:
        vitviz.ImageError: unreadable image.
        ValueError: the model is not a tokenizer (and no ``tokenizer`` is named), or an unknown tokenizer name.
        vitviz.ModelUnavailable: vq-kd-tiny without dinov2-small's weights (its teacher).
    """
    if tokenizer is not None:
        model = tokenizer_named(tokenizer, model)
    vq = _vq(model)
    return tokenize_array(vq, square_view(image, model.input_size))


@runs_model
def beit_predict(model: LoadedModel, image: ImageInput, mask_ratio: float = 0.4, seed: int = 0,
                 pattern: str = "block", mask: np.ndarray | torch.Tensor | None = None,
                 tokenizer: LoadedModel | None = None) -> BEiTPrediction:
    """Hide patches and let a BEiT model predict their visual tokens.

    Args:
        model: a loaded BEiT model (``beit-tiny``).
        image: any image input.
        mask_ratio: share of patches to hide (``pattern`` masks).
        seed: seed of the mask (``numpy.random.default_rng(seed)``).
        pattern: ``block`` (BEiT's blockwise masking) or ``random``.
        mask: a ``(gh, gw)`` bool mask (True = hidden) that replaces ``pattern``
            (a painted mask, or the mask of another model for a side-by-side).
        tokenizer: the tokenizer for the targets and the decoding; by default the
            one the model was trained with.

    Returns:
        :class:`~vitviz.beit.predict.BEiTPrediction` (``mask``, ``target_ids``,
        ``predicted_ids``, ``top5``, ``decoded``, ``accuracy``, ...).

    Raises:
        vitviz.ImageError: unreadable image.
        ValueError: not a BEiT model, unknown pattern (naming the valid ones), a ratio
            out of range, a mask of the wrong shape, or a model whose tokenizer vitviz has
            not (``beit-base-pt22k``: see :func:`guess_tokens`).
    """
    beit = _beit(model)
    vq = _vq(tokenizer if tokenizer is not None else tokenizer_for(model))
    return predict_array(beit, vq, square_view(image, model.input_size), _mask(beit, mask_ratio, seed, pattern, mask))


@runs_model
def guess_tokens(model: LoadedModel, image: ImageInput, mask_ratio: float = 0.4, seed: int = 0,
                 pattern: str = "block", mask: np.ndarray | torch.Tensor | None = None) -> TokenGuess:
    """Hide patches and return a BEiT model's guessed ids, without targets or decoding.

    For any BEiT model; the one way to see the guesses of a model whose tokenizer vitviz
    cannot load (``beit-base-pt22k``: DALL-E's codes). Arguments as :func:`beit_predict`.

    Returns:
        :class:`~vitviz.beit.predict.TokenGuess` (``mask``, ``predicted_ids``, ``top5``, ``confidence``).
    """
    beit = _beit(model)
    return guess_array(beit, square_view(image, model.input_size), _mask(beit, mask_ratio, seed, pattern, mask))


def _mask(beit: BEiTForMIM, mask_ratio: float, seed: int, pattern: str,
          mask: np.ndarray | torch.Tensor | None) -> np.ndarray:
    """The ``(gh, gw)`` bool mask: the given one, else ``pattern``'s from ``seed``."""
    if mask is None:
        return make_beit_mask(beit.config.grid, float(mask_ratio), int(seed), pattern)
    return np.asarray(mask.cpu() if isinstance(mask, torch.Tensor) else mask).astype(bool)
