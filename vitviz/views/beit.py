"""Everything the BEiT tab shows, as data: no UI code here.

Four parts: the tokens of an image (token map, the image decoded from its own
tokens, round-trip PSNR), the codebook (every code decoded to a patch, ordered by
how often the example photos use it; a clicked code highlighted in the image),
mask-and-predict (BEiT's guesses decoded to pixels, right/top-5/wrong overlay,
confidence, accuracy) and tokens-vs-pixels (beit-tiny's decoded guess beside
mae-tiny's reconstruction for the identical mask).

The published ``beit-base-pt22k`` predicts DALL-E's codes, which vitviz can neither
decode (DALL-E's decoder is a pickle) nor compute for the image (nor its encoder):
for it, part 3 shows the guessed token-id map and the confidence, and says why
there is no decoded image and no accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..assets import example_images
from ..beit.api import beit_predict, guess_tokens, no_tokenizer_reason, tokenize, tokenizer_for
from ..beit.predict import BEIT_PATTERNS, BEiTPrediction, TokenGuess
from ..beit.tokenize import Tokens, codebook_patches
from ..cache import LRU
from ..core.images import ImageInput, square_view
from ..core.masking import masked_image
from ..core.patches import pixel_to_patch
from ..mae.reconstruct import reconstruct
from ..models.loading import LoadedModel, available_models, load_model
from ..plots.beit import token_map_figure
from ..render.beit import (CodebookLayout, codebook_mosaic, confidence_map, correctness_overlay, highlight_code,
                           token_map)
from ..render.mae import grid_overlay
from .common import as_seed, model_label
from .mae import model_note

#: Re-exported: the BEiT tab's note on the picked model is the MAE tab's.
__all__ = ["model_note"]

TOKENIZER = "vq-tiny"
BEIT_MODEL = "beit-tiny"
MAE_MODEL = "mae-tiny"
PATTERNS: tuple[str, ...] = (*BEIT_PATTERNS, "painted")
TOKEN_MAP_SIZE = 448

WHY = (
    "**Why a class and not pixels?** BEiT's target for a hidden patch is one of a fixed set of codes, so it is "
    "trained with cross-entropy: it may put its probability on several plausible codes, and one code stands "
    "for a whole family of similar patches, so detail the tokenizer throws away is never asked for. MAE "
    "regresses the pixels with a squared error, which pulls an uncertain guess towards the blurry average "
    "of the possibilities."
)

#: Code usage over the example photos, per tokenizer (name, device, random weights).
_USAGE: LRU[tuple, np.ndarray] = LRU(4)
#: Every code decoded to a patch, per tokenizer.
_PATCHES: LRU[tuple, np.ndarray] = LRU(4)


def beit_choices() -> list[tuple[str, str]]:
    """(label, name) pairs of the BEiT models; unavailable ones say so."""
    return [(model_label(i, i.name) if i.available else f"{i.name} (unavailable)", i.name)
            for i in available_models() if i.family == "beit"]


def _key(model: LoadedModel) -> tuple:
    return (model.name, str(model.device), model.random_init)


def example_usage(vq: LoadedModel) -> np.ndarray:
    """``(K,)`` int64: how often each code occurs over the bundled example photos (cached)."""
    hit = _USAGE.get(_key(vq))
    if hit is None:
        k = vq.module.codebook_size
        hit = np.zeros(k, dtype=np.int64)
        for path in example_images():
            hit += tokenize(vq, path).counts
        _USAGE.put(_key(vq), hit)
    return hit


def code_patches(vq: LoadedModel) -> np.ndarray:
    """``(K, p, p, 3)`` uint8: every code decoded on its own (cached)."""
    hit = _PATCHES.get(_key(vq))
    if hit is None:
        hit = codebook_patches(vq.module)
        _PATCHES.put(_key(vq), hit)
    return hit


# ----------------------------------------------------------------------------- 1. tokens


@dataclass(frozen=True)
class TokenView:
    """Part 1: an image and its tokens."""

    original: np.ndarray
    token_map: np.ndarray
    figure: go.Figure
    decoded: np.ndarray
    ids: list[list[int]]
    psnr: float
    text: str
    tokens: Tokens


def token_view(image: ImageInput, highlight: int | None = None, tokenizer: str = TOKENIZER) -> TokenView:
    """The image with its patch grid, its token map (image and hover figure), the image decoded from
    its own tokens, the ids and the round-trip PSNR.

    ``tokenizer``: ``vq-tiny`` or ``vq-kd-tiny`` (whose "decoded" image is its decoded features in the
    colours of the teacher's principal components, and whose PSNR compares those colours with the
    teacher's own; the sentence gives the feature cosine).

    Raises:
        ValueError: an unknown tokenizer (naming the two).
    """
    from ..beit.api import TOKENIZERS

    if tokenizer not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")
    vq = load_model(tokenizer)
    t = tokenize(vq, image)
    distinct = int((t.counts > 0).sum())
    top = int(t.counts.argmax())
    rebuilt = ("between the image and the image decoded from" if t.feature_cosine is None else
               f"(feature cosine {t.feature_cosine:.3f}) between dinov2-small's features, in colours, and those "
               "decoded from")
    text = (f"**Round trip:** {t.psnr:.2f} dB PSNR (MSE {t.mse:.4f}) {rebuilt} "
            f"its {t.ids.size} tokens alone. This image uses **{distinct}** of the {t.codebook_size} codes; the "
            f"most frequent here is code {top} ({int(t.counts[top])}×). Click a patch of the token map to "
            "highlight its code everywhere.")
    return TokenView(
        original=grid_overlay(t.original, t.patch_size),
        token_map=token_map(t.ids, TOKEN_MAP_SIZE, t.codebook_size),
        figure=token_map_figure(t.ids, t.codebook_size, highlight=highlight),
        decoded=t.decoded,
        ids=t.ids.tolist(),
        psnr=t.psnr,
        text=text,
        tokens=t,
    )


# ----------------------------------------------------------------------------- 2. codebook


def codebook_view(selected: int | None = None) -> tuple[np.ndarray, CodebookLayout, str]:
    """The codebook mosaic ordered by usage over the example photos (most used first)."""
    vq = load_model(TOKENIZER)
    usage = example_usage(vq)
    order = np.lexsort((np.arange(usage.size), -usage))  # by count, then id
    mosaic, layout = codebook_mosaic(code_patches(vq), order, selected=selected)
    used = int((usage > 0).sum())
    text = (f"All **{usage.size}** codes, each decoded on its own, ordered by how often the "
            f"{len(example_images())} example photos use them ({used} of them do); read row by row from the top "
            "left. **Click a code** to see where it occurs in your image.")
    return mosaic, layout, text


def code_at(layout: CodebookLayout | None, x: float, y: float) -> int | None:
    """The code under a click on the mosaic (None for a gap)."""
    return None if layout is None else layout.code_at(x, y)


def code_at_token_map(image: ImageInput, x: float, y: float) -> int:
    """The code of the patch under a click at ``(x, y)`` of the rendered token map."""
    t = tokenize(load_model(TOKENIZER), image)
    r, c = pixel_to_patch(x, y, t.ids.shape, TOKEN_MAP_SIZE)
    return int(t.ids[r, c])


def highlight_view(image: ImageInput, code: int | None) -> tuple[np.ndarray | None, str]:
    """The image with the patches of ``code`` outlined (others dimmed), and a sentence."""
    if code is None:
        return None, "Click a code in the codebook to highlight it here."
    vq = load_model(TOKENIZER)
    t = tokenize(vq, image)
    usage = example_usage(vq)
    rank = int((usage > usage[code]).sum()) + 1
    n = int(t.counts[code])
    where = f"occurs **{n}×** in your image (outlined)" if n else "does not occur in your image"
    text = (f"Code **{code}** {where}; over the example photos it is used {int(usage[code])}× "
            f"(rank {rank} of {usage.size}).")
    return highlight_code(t.original, t.ids, code, t.patch_size), text


# ----------------------------------------------------------------------------- 3. mask and predict


@dataclass(frozen=True)
class PredictView:
    """Part 3: the panels and numbers of one prediction.

    For a model without a tokenizer here (``beit-base-pt22k``), ``decoded`` is the map of
    its guessed ids on the hidden patches, ``correctness`` and ``target_decoded`` are None,
    and ``prediction`` is a :class:`~vitviz.beit.predict.TokenGuess`.
    """

    masked: np.ndarray
    decoded: np.ndarray
    correctness: np.ndarray | None
    confidence: np.ndarray
    target_decoded: np.ndarray | None
    metrics: dict
    text: str
    prediction: BEiTPrediction | TokenGuess


def predict_view(image: ImageInput, model_name: str, mask_ratio: float, seed: float, pattern: str,
                 painted: np.ndarray | None = None) -> PredictView:
    """Hide patches, let the BEiT model predict their tokens, and draw the result.

    Raises:
        ValueError: unknown pattern (naming the valid ones), bad ratio or seed, or
            ``painted`` without a painted mask.
    """
    if pattern not in PATTERNS:
        raise ValueError(f"unknown mask pattern {pattern!r}; choose one of {', '.join(PATTERNS)}")
    if pattern == "painted" and (painted is None or not np.asarray(painted).any()):
        raise ValueError("paint the mask first: click patches of the masked panel to hide them")
    model = load_model(model_name)
    how = dict(mask_ratio=float(mask_ratio), seed=as_seed(seed), pattern="block" if pattern == "painted" else pattern,
               mask=np.asarray(painted, dtype=bool) if pattern == "painted" else None)
    if not model.spec.tokenizer:
        return _guess_view(model, guess_tokens(model, image, **how))
    p = beit_predict(model, image, **how)
    m = p.metrics()
    tk = tokenizer_for(model)
    near = copy_baseline(p)
    verdict = "beats" if p.accuracy > near else "does not beat"
    text = (f"**Token accuracy on the {m['hidden_patches']} hidden patches:** top-1 **{100 * p.accuracy:.1f}%**, "
            f"top-5 {100 * p.top5_accuracy:.1f}% (chance: {100 / tk.module.codebook_size:.2f}%). Copying the "
            f"nearest visible patch's code gets **{100 * near:.1f}%**: the model {verdict} that baseline on this "
            f"photo. Mean confidence of the top-1 guess: {m['mean_confidence_hidden']:.2f}. Green: the right token; "
            "amber: in the top 5; red: wrong.")
    return PredictView(
        masked=grid_overlay(masked_image(p.original, p.mask, p.patch_size), p.patch_size, alpha=0.25),
        decoded=p.decoded,
        correctness=correctness_overlay(p.decoded, p.correctness, p.patch_size),
        confidence=confidence_map(p.confidence, p.mask, p.patch_size),
        target_decoded=p.target_decoded,
        metrics={"model": model.name, **m},
        text=text,
        prediction=p,
    )


def copy_baseline(p: BEiTPrediction) -> float:
    """Share of ``p``'s hidden patches whose target code equals the nearest visible patch's code: the baseline a
    masked-token model must beat to show it uses more than its neighbours (0 when nothing is hidden)."""
    import torch

    from ..beit.baselines import nearest_visible_prediction

    ids, mask = torch.from_numpy(p.target_ids), torch.from_numpy(p.mask)
    if not bool(mask.any()):
        return 0.0
    return float((nearest_visible_prediction(ids, mask) == ids)[mask].float().mean())


def _guess_view(model: LoadedModel, g: TokenGuess) -> PredictView:
    """Part 3 for a model whose tokenizer vitviz lacks: the guessed id map and the confidence, no pixels."""
    m = g.metrics()
    text = (f"**{model.name}'s guesses for the {m['hidden_patches']} hidden patches**, as token ids (middle "
            f"panel: each hidden patch coloured by its guessed code; distinct codes guessed: "
            f"{m['distinct_predicted_ids']} of {g.vocab_size}; mean confidence of the top-1 guess "
            f"{m['mean_confidence_hidden']:.2f}; the ids are in the numbers below). "
            f"**No decoded image and no accuracy:** {no_tokenizer_reason(model)}. beit-tiny shows the whole "
            "loop with vitviz's own tokenizer.")
    return PredictView(
        masked=grid_overlay(masked_image(g.original, g.mask, g.patch_size), g.patch_size, alpha=0.25),
        decoded=token_map(g.predicted_ids, TOKEN_MAP_SIZE, g.vocab_size, where=g.mask),
        correctness=None,
        confidence=confidence_map(g.confidence, g.mask, g.patch_size),
        target_decoded=None,
        metrics={"model": model.name, **m, "predicted_ids": np.where(g.mask, g.predicted_ids, -1).tolist()},
        text=text,
        prediction=g,
    )


def toggle_patch(mask: list | None, grid: tuple[int, int], size: int, x: float, y: float) -> list:
    """A click at ``(x, y)`` of a ``size``-px panel toggles that patch in a painted mask (list of lists)."""
    m = np.zeros(grid, dtype=bool) if mask is None else np.asarray(mask, dtype=bool).copy()
    r, c = pixel_to_patch(x, y, grid, size)
    m[r, c] = not m[r, c]
    return m.tolist()


# ----------------------------------------------------------------------------- 4. tokens vs pixels


def compare_view(image: ImageInput, p: BEiTPrediction | TokenGuess
                 ) -> tuple[np.ndarray | None, np.ndarray | None, str, dict]:
    """beit-tiny's decoded guess beside mae-tiny's reconstruction for the identical mask.

    Returns:
        ``(beit panel, mae panel, Markdown, numbers)``; both panels have the visible pixels pasted.
        For a :class:`~vitviz.beit.predict.TokenGuess` (no decoded pixels) both panels are None.
    """
    if isinstance(p, TokenGuess):
        return None, None, ("The comparison needs decoded pixels: pick **beit-tiny**, whose tokens vitviz can "
                            "decode, to set them beside mae-tiny's reconstruction."), {}
    if p.reference is not None:
        return None, None, ("The comparison is in pixels: this model's tokenizer (BEiT v2's VQ-KD) rebuilds "
                            "dinov2-small's features, not pixels, so its guesses have no pixels to set beside "
                            "mae-tiny's. Pick **beit-tiny** for it."), {}
    mae = load_model(MAE_MODEL)
    view = square_view(image, mae.input_size)
    if view.shape != p.original.shape:
        raise ValueError("the MAE and the BEiT model need the same input size for the same mask")
    r = reconstruct(mae, view, mask=p.mask)
    nums = {"hidden_patches": int(p.mask.sum()), "beit_hidden_mse": p.hidden_mse, "mae_hidden_mse": r.masked_mse}
    better = "BEiT's decoded tokens" if p.hidden_mse < r.masked_mse else "MAE's pixels"
    text = (f"Same {nums['hidden_patches']} hidden patches. Hidden-patch MSE against the original (RGB in [0, 1]): "
            f"**beit-tiny {p.hidden_mse:.4f}**, **mae-tiny {r.masked_mse:.4f}** ({better} closer here). "
            + WHY)
    return p.decoded, r.pasted, text, nums


# ----------------------------------------------------------------------------- the tab's contract
# What the BEiT tab's handlers answer: each field is named after the tab's component that shows it
# (vitviz.ui.beit_tab binds them by name, vitviz.ui.binder).


@dataclass(frozen=True)
class TokenMap:
    """Endpoint ``tokenize``'s answer: the token map, the ids, the image decoded from them, the PSNR (dB)."""

    token_map: np.ndarray
    ids: list
    decoded: np.ndarray
    psnr: float


def token_map_answer(image: ImageInput, tokenizer: str = TOKENIZER) -> TokenMap:
    """:func:`token_view`'s token map, ids, decoded image and PSNR (rounded to 0.001 dB)."""
    v = token_view(image, tokenizer=tokenizer)
    return TokenMap(v.token_map, v.ids, v.decoded, round(v.psnr, 3))


@dataclass(frozen=True)
class TokenPanels:
    """Part 1: the image as tokens."""

    original: np.ndarray
    token_plot: go.Figure
    decoded: np.ndarray
    token_text: str
    token_map: np.ndarray
    ids: list


def token_panels(image: ImageInput) -> TokenPanels:
    """Part 1 from :func:`token_view` (the default tokenizer)."""
    v = token_view(image)
    return TokenPanels(v.original, v.figure, v.decoded, v.text, v.token_map, v.ids)


@dataclass(frozen=True)
class CodebookPanel:
    """Part 2: the codebook mosaic, where each code sits in it, and words."""

    codebook: np.ndarray
    layout: CodebookLayout
    codebook_text: str


def codebook_panel(selected: int | None) -> CodebookPanel:
    """Part 2 from :func:`codebook_view`."""
    return CodebookPanel(*codebook_view(selected))


@dataclass(frozen=True)
class PredictControls:
    """What parts 3 and 4 depend on: the image, the model, the mask (``painted``: patches clicked)."""

    image: str | None
    model: str
    mask_ratio: float
    seed: float
    pattern: str
    painted: list | None


@dataclass(frozen=True)
class Guess:
    """Endpoint ``beit_predict``'s answer: masked input, decoded prediction, correctness, confidence, numbers."""

    masked: np.ndarray
    predicted: np.ndarray
    correct: np.ndarray | None
    confidence: np.ndarray
    numbers: dict


def guess(image: ImageInput, model_name: str, mask_ratio: float, seed: float, pattern: str) -> Guess:
    """:func:`predict_view`'s panels and numbers."""
    v = predict_view(image, model_name, mask_ratio, seed, pattern)
    return Guess(v.masked, v.decoded, v.correctness, v.confidence, v.metrics)


@dataclass(frozen=True)
class Prediction(Guess):
    """Parts 3 and 4: :class:`Guess`, its words, the comparison with mae-tiny, and the mask on screen."""

    predict_text: str
    beit_panel: np.ndarray
    mae_panel: np.ndarray
    compare_text: str
    current_mask: list


def prediction(c: PredictControls) -> Prediction:
    """Parts 3 and 4: :func:`predict_view` and :func:`compare_view` under one mask (numbers of both)."""
    v = predict_view(c.image, c.model, c.mask_ratio, c.seed, c.pattern, c.painted)
    b, m, text, nums = compare_view(c.image, v.prediction)
    return Prediction(v.masked, v.decoded, v.correctness, v.confidence, {**v.metrics, **nums}, v.text, b, m, text,
                      v.prediction.mask.tolist())


#: The BEiT tab's masking-ratio slider's range (a URL's ratio outside it is left alone).
RATIO_MIN, RATIO_MAX = 0.1, 0.75


def url_controls(state: Any) -> dict[str, Any]:
    """The BEiT tab's controls the URL sets (model, ratio, seed, pattern) from a validated
    :class:`~vitviz.views.urlstate.UrlState`; values this tab does not offer are left out."""
    beit_models = [name for _, name in beit_choices()]
    ratio = state.ratio if state.ratio is not None and RATIO_MIN <= state.ratio <= RATIO_MAX else None
    found = {"model": state.model if state.model in beit_models else None, "mask_ratio": ratio, "seed": state.seed,
             "pattern": state.pattern if state.pattern in PATTERNS else None}
    return {k: v for k, v in found.items() if v is not None}
