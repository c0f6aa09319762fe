"""The BEiT tab's two kinds of visual words, as data: pixel codes (vq-tiny, BEiT v1's kind) beside
semantic codes (vq-kd-tiny, BEiT v2's VQ-KD distilled from dinov2-small), each with the BEiT model trained
on them (beit-tiny, beit-tiny-v2). No UI code here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..assets import example_images
from ..beit.api import beit_predict, tokenize
from ..beit.predict import BEIT_PATTERNS
from ..beit.tokenize import Tokens
from ..cache import LRU
from ..core.images import ImageInput, square_view
from ..core.masking import masked_image
from ..models.loading import load_model
from ..render.beit import correctness_overlay, highlight_code, token_map
from ..render.mae import grid_overlay
from .beit import _key, copy_baseline
from .common import as_seed

#: The two tokenizers side by side, each with the BEiT model trained on its tokens.
PAIRS: tuple[tuple[str, str], ...] = (("vq-tiny", "beit-tiny"), ("vq-kd-tiny", "beit-tiny-v2"))
KINDS = {"vq-tiny": "pixel codes of a VQ-VAE: colour and texture",
         "vq-kd-tiny": "semantic codes of BEiT v2's VQ-KD, distilled from dinov2-small"}
PANEL = 224
#: Each tokenizer's ids of the example photos.
_EXAMPLE_IDS: LRU[tuple, list[np.ndarray]] = LRU(4)


def _tokens_of(name: str, image: ImageInput) -> Tokens:
    return tokenize(load_model(name), image)


def example_ids(name: str) -> list[np.ndarray]:
    """``[(gh, gw) int64]``: the tokenizer's ids of every bundled example photo (cached)."""
    tok = load_model(name)
    hit = _EXAMPLE_IDS.get(_key(tok))
    if hit is None:
        hit = [tokenize(tok, path).ids for path in example_images()]
        _EXAMPLE_IDS.put(_key(tok), hit)
    return hit


def most_frequent_code(beit_name: str) -> int | None:
    """The most frequent code of a BEiT model's training targets, as its file records it (None if it does not)."""
    from safetensors import safe_open

    from ..assets import model_file

    spec = load_model(beit_name).spec
    if not spec.files:
        return None
    with safe_open(str(model_file(spec.files[0])), framework="pt") as fh:
        value = (fh.metadata() or {}).get("most_frequent_code")
    return None if value is None else int(value)


@dataclass(frozen=True)
class TokenizerPairView:
    """Both tokenizers on one photo: one image of panels, a sentence each, the numbers."""

    panels: np.ndarray
    text: str
    metrics: dict
    tokens: dict[str, Tokens]


def tokenizer_pair_view(image: ImageInput) -> TokenizerPairView:
    """The photo's token map under each tokenizer, and what each rebuilds from its tokens alone.

    vq-tiny rebuilds pixels; vq-kd-tiny rebuilds dinov2-small's features, shown as colours (the first
    three principal components of the teacher's features of this photo: the teacher's map beside the
    map decoded from the codes, in the same colours).
    """
    from ..render._draw import label_row

    tokens = {name: _tokens_of(name, image) for name, _ in PAIRS}
    px, kd = tokens["vq-tiny"], tokens["vq-kd-tiny"]
    panels = label_row([
        ("photo", px.original),
        ("vq-tiny tokens", token_map(px.ids, PANEL, px.codebook_size, show_ids=False)),
        (f"vq-tiny decoded ({px.psnr:.1f} dB)", px.decoded),
        ("vq-kd-tiny tokens", token_map(kd.ids, PANEL, kd.codebook_size, show_ids=False)),
        ("dinov2-small features", kd.reference),
        (f"vq-kd-tiny decoded (cos {kd.feature_cosine:.2f})", kd.decoded),
    ])
    n = {name: int((t.counts > 0).sum()) for name, t in tokens.items()}
    text = (f"**Two kinds of visual words for the same {px.ids.size} patches.** vq-tiny ({KINDS['vq-tiny']}) uses "
            f"**{n['vq-tiny']}** of its {px.codebook_size} codes here and rebuilds the pixels at {px.psnr:.1f} dB. "
            f"vq-kd-tiny ({KINDS['vq-kd-tiny']}) uses **{n['vq-kd-tiny']}** of its {kd.codebook_size} codes and "
            f"rebuilds the teacher's features with a mean cosine of **{kd.feature_cosine:.2f}** (1 = exact); its "
            "two right-hand panels colour the teacher's features and the decoded ones by the same three principal "
            "components, so equal colours mean equal features. BEiT v2 made semantic codes to follow objects and "
            "their parts, where pixel codes follow colour and texture. " + grouping_comparison())
    metrics = {name: t.metrics() for name, t in tokens.items()}
    return TokenizerPairView(panels=panels, text=text, metrics=metrics, tokens=tokens)


def code_occurrence_view(image: ImageInput, tokenizer: str, code: float | None = None
                         ) -> tuple[np.ndarray, str, dict]:
    """Where one code occurs: in the photo and in every example photo, its patches outlined.

    Args:
        tokenizer: ``vq-tiny`` or ``vq-kd-tiny``.
        code: the code id; None, blank or negative: the code most frequent in the photo.

    Returns:
        ``(panels, Markdown, numbers)``; the Markdown quotes the measured grouping of both tokenizers'
        codes on the labelled set (``assets/models/vq-kd-tiny.grouping.json``).

    Raises:
        ValueError: an unknown tokenizer, or a code outside the codebook.
    """
    from ..render._draw import label_row

    if tokenizer not in dict(PAIRS):
        raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(dict(PAIRS))}")
    t = _tokens_of(tokenizer, image)
    if code is None or (isinstance(code, float) and np.isnan(code)) or code < 0:
        code = int(t.counts.argmax())
    code = int(code)
    if not 0 <= code < t.codebook_size:
        raise ValueError(f"code must lie in 0..{t.codebook_size - 1}, got {code}")
    examples = example_ids(tokenizer)
    names = [p.rsplit("/", 1)[-1].rsplit(".", 1)[0] for p in map(str, example_images())]
    views = [square_view(p, t.original.shape[0]) for p in example_images()]
    counts = [int((ids == code).sum()) for ids in examples]
    panels = label_row([(f"your photo ({int(t.counts[code])}x)", highlight_code(t.original, t.ids, code, t.patch_size))]
                       + [(f"{n} ({c}x)", highlight_code(v, ids, code, t.patch_size))
                          for n, v, ids, c in zip(names, views, examples, counts)])
    text = (f"Code **{code}** of {tokenizer} ({KINDS[tokenizer]}): {int(t.counts[code])}× in your photo, "
            + ", ".join(f"{c}× in {n}" for n, c in zip(names, counts)) + ". " + grouping_sentence())
    return panels, text, {"tokenizer": tokenizer, "code": code, "in_photo": int(t.counts[code]),
                          "in_examples": dict(zip(names, counts))}


def grouping_comparison() -> str:
    """Whether vq-kd-tiny's codes group by class more than vq-tiny's, from the committed measurement
    (``assets/models/vq-kd-tiny.grouping.json``: class purity over the purity with the labels shuffled)."""
    import json

    from ..assets import model_file

    try:
        g = json.loads(model_file("vq-kd-tiny.grouping.json").read_text())["tokenizers"]
        kd, px = float(g["vq-kd-tiny"]["ratio"]), float(g["vq-tiny"]["ratio"])
    except (OSError, KeyError, ValueError):
        return ""
    more = "more" if kd > px else "no more"
    return (f"Measured on the 268 labelled photos, vq-kd-tiny's codes group by class {more} than vq-tiny's "
            f"({kd:.2f}× against {px:.2f}× the purity with the labels shuffled; its card).")


def grouping_sentence() -> str:
    """The measured class purity of both tokenizers' codes on the labelled set, from the committed JSON."""
    import json

    from ..assets import model_file

    try:
        g = json.loads(model_file("vq-kd-tiny.grouping.json").read_text())["tokenizers"]
    except (OSError, KeyError, ValueError):
        return ""
    parts = [f"{name} {100 * g[name]['purity']:.0f}% (labels shuffled: {100 * g[name]['shuffled_purity']:.0f}%)"
             for name, _ in PAIRS if name in g]
    return ("**Do codes group by object?** On the 268 labelled photos (8 classes), the share of a code's "
            "occurrences that fall in its most frequent class: " + "; ".join(parts) + ".")


def predict_pair_view(image: ImageInput, mask_ratio: float, seed: float, pattern: str) -> tuple[np.ndarray, str, dict]:
    """beit-tiny on vq-tiny's tokens and beit-tiny-v2 on vq-kd-tiny's, under the same mask, with the same baselines.

    Baselines on each model's own targets: the nearest visible patch's code, and the most frequent code of
    its training targets (as its file records it).

    Returns:
        ``(panels, Markdown, numbers)``.

    Raises:
        ValueError: unknown pattern (``block`` or ``random``), bad ratio or seed.
    """
    import torch

    from ..beit.baselines import most_frequent_prediction
    from ..render._draw import label_row

    if pattern not in BEIT_PATTERNS:
        raise ValueError(f"unknown mask pattern {pattern!r}; choose one of {', '.join(BEIT_PATTERNS)}")
    rows, panels, nums = [], [], {}
    mask = None
    for tok_name, beit_name in PAIRS:
        p = beit_predict(load_model(beit_name), image, mask_ratio=float(mask_ratio), seed=as_seed(seed),
                         pattern=pattern, mask=mask)
        mask = p.mask
        ids, m = torch.from_numpy(p.target_ids), torch.from_numpy(p.mask)
        near = copy_baseline(p)
        mf = most_frequent_code(beit_name)
        freq = None if mf is None else float((most_frequent_prediction(m, mf) == ids)[m].float().mean())
        nums[beit_name] = {"tokenizer": tok_name, "top1": p.accuracy, "top5": p.top5_accuracy,
                           "nearest_visible": near, "most_frequent": freq, "hidden_patches": int(p.mask.sum())}
        if not panels:
            panels.append(("masked", grid_overlay(masked_image(p.original, p.mask, p.patch_size), p.patch_size,
                                                  alpha=0.25)))
        panels.append((f"{beit_name}: right / top-5 / wrong",
                       correctness_overlay(p.decoded, p.correctness, p.patch_size)))
        rows.append(f"| {beit_name} on {tok_name} | {100 * p.accuracy:.1f}% | {100 * p.top5_accuracy:.1f}% | "
                    f"{100 * near:.1f}% | " + ("—" if freq is None else f"{100 * freq:.1f}%") + " |")
    text = ("**Same mask, two kinds of targets** (this photo only; the held-out tables are in the model cards):\n\n"
            "| model | top-1 | top-5 | copy the nearest visible code | most frequent code |\n"
            "| --- | ---: | ---: | ---: | ---: |\n" + "\n".join(rows))
    return label_row(panels), text, nums


# ----------------------------------------------------------------------------- the tab's contract (part 5)


@dataclass(frozen=True)
class KindsControls:
    """What part 5 depends on: the image, the tokenizer and code to follow, and part 3's mask settings."""

    image: str | None
    follow: str
    code: float | None
    mask_ratio: float
    seed: float
    pattern: str


@dataclass(frozen=True)
class Kinds:
    """Part 5: both tokenizers on the photo, where one code occurs, and both BEiT models under one mask (fields
    named after the BEiT tab's components, :mod:`vitviz.ui.beit_tab`)."""

    kinds_panels: np.ndarray | None
    kinds_text: str
    occurrence: np.ndarray | None
    occurrence_text: str
    kinds_predict: np.ndarray | None
    kinds_predict_text: str
    kinds_numbers: dict


def kinds(c: KindsControls) -> Kinds:
    """Part 5: :func:`tokenizer_pair_view`, :func:`code_occurrence_view` and :func:`predict_pair_view`; a painted
    mask (part 3's) becomes a block mask from the seed, and the words say so."""
    pair = tokenizer_pair_view(c.image)
    occ, occ_text, _ = code_occurrence_view(c.image, c.follow, c.code)
    pattern = c.pattern if c.pattern in BEIT_PATTERNS else "block"
    panels, text, nums = predict_pair_view(c.image, c.mask_ratio, c.seed, pattern)
    text = text if pattern == c.pattern else f"(A painted mask is part 3's; here: a block mask from the seed.)\n\n{text}"
    return Kinds(pair.panels, pair.text, occ, occ_text, panels, text, {"tokens": pair.metrics, "predict": nums})


def kinds_unavailable(reason: object) -> Kinds:
    """Part 5 without vq-kd-tiny's teacher: a sentence, no panels."""
    return Kinds(None, f"**Part 5 needs dinov2-small's weights** (vq-kd-tiny's teacher): {reason}", None, "", None, "",
                 {})
