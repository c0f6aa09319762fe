"""What the Explain tab shows: four explanation maps of a classifier's decision side by
side, their deletion and insertion curves, and the area under each curve.

Maps come from :func:`vitviz.explain.methods.explain_maps` (one forward and one backward
pass), curves from :func:`vitviz.explain.faithfulness.faithfulness`; both are cached per
model, image and class. Returns panels (uint8 arrays), Plotly figures, table rows and
sentences; no gradio here.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..cache import LRU
from ..core.images import pixels_digest, square_view
from ..explain.labels import class_names, imagenet_labels
from ..explain.faithfulness import (BF16_AUC_TOLERANCE, DEFAULT_STEPS, RANDOM_ORDERS, REMOVAL_NAMES, Curves,
                                    check_removal, faithfulness)
from ..explain.methods import (METHOD_NAMES, METHODS, Explanation, check_classifier, check_methods, check_target,
                               explain_maps)
from ..models.loading import LoadedModel, load_choice
from ..models.precision import curve_precision
from ..models.registry import MODELS, parse_choice
from ..plots.explain import faithfulness_figure
from ..render.explain import explanation_row
from .attention import model_choices as _choices
from .attention import model_note
from .common import require_image

__all__ = ["model_note"]

#: Families of classifiers: ImageNet's (``vit``, ``deit``), and a frozen backbone with a head vitviz
#: trained on the labelled set (``probe``: dinov2-small-lab8).
FAMILIES = ("vit", "deit", "probe")
#: Families offered with random weights too (a random head on a random backbone shows nothing more).
RANDOM_FAMILIES = ("vit", "deit")
#: The default: the real trained classifier where dinov2-small's weights are here...
DEFAULT_TRAINED = "dinov2-small-lab8"
#: ...else the smaller ImageNet classifier, pretrained or with random weights.
DEFAULT_NAME = "deit-small-distilled"
#: The class choice that means "the model's top-1".
PREDICTED = "predicted"
#: The method choice that means every method.
ALL = "all"
METHOD_CHOICES: list[tuple[str, str]] = [("all four (compare)", ALL)] + [(METHOD_NAMES[m], m) for m in METHODS]
REMOVAL_CHOICES: list[tuple[str, str]] = [
    ("drop the tokens (the ViT runs on fewer tokens)", "drop"),
    ("grey the patches (fill with the normalisation mean)", "grey"),
]
#: Largest number of curve steps offered.
MAX_STEPS = 16
TABLE_HEADERS = ["method", "deletion AUC ↓", "insertion AUC ↑", "insertion − deletion ↑"]

HELP_METHODS = (
    "Four answers to *which patches made the model say this class?*, each drawn from its own minimum to its maximum. "
    "**Last-layer CLS attention**: where the class token looks in the last layer, mean over heads. "
    "**Attention rollout**: attention followed through every layer, with the residual connection as an identity "
    "*(Abnar & Zuidema 2020, §3)*. Neither depends on the class. **Gradient-weighted rollout**: each layer's "
    "attention weighted by the gradient of the class score, negative parts dropped, heads averaged, then "
    "accumulated as R ← R + ĀR *(Chefer, Gur & Wolf, ICCV 2021, §3)*. **Grad-CAM**: the tokens entering the "
    "last block, weighted per channel by the mean gradient of the class score *(Selvaraju et al., ICCV 2017, eq. 1–2)*; "
    "the last block's *output* patch tokens would give nothing, as the head reads only the prefix tokens there "
    "(vit-base and dinov2-small-lab8: the class token after the final norm; deit-small-distilled: the class and the "
    "distillation token, whose two heads' outputs are averaged, *DeiT §4*). The first three maps read the class token's row alone, so for "
    "deit-small-distilled they leave out the distillation token's path; Grad-CAM's gradient comes through both heads."
)
HELP_CURVES = (
    "**Which map is faithful?** Remove the patches in a map's order, most important first, and follow the "
    "probability of the class (**deletion**: a faithful map makes it fall fast, small area); or start from "
    "nothing and add them in that order (**insertion**: it should rise fast, large area) "
    "*(RISE, Petsiuk et al., BMVC 2018, §4; RISE's insertion starts from a blurred copy, vitviz's from the empty "
    "input)*. Two ways to remove a patch: **drop** its token — a ViT runs on any "
    "number of tokens, as MAE's encoder does, so the model sees only the class token(s) and the kept patches with "
    "their own positions, no paint; or **grey** it — fill it with the normalisation mean, the usual choice, which "
    "shows the model grey squares it never saw in training. Neither is neutral: these classifiers were never trained "
    "on sequences with some patches left out, so a shorter one is also an input they never saw (only MAE's "
    "encoder was trained on subsets). The empty input is the class token(s) alone (drop) or an all-grey image (grey). Each curve has the "
    "chosen number of steps; every distinct input is run once.  \n"
    "**Read the areas against a random order** (grey dashed curves and the table's last row: the mean of "
    "three random orders of the patches, the same for every map). A random order's insertion adds the patches in the "
    "reverse of the order its deletion removes them, so both curves run through the same inputs, each once, and "
    "their areas come out equal: for a random order, insertion − deletion is 0. A map earns the word "
    "*faithful* only when its deletion area is clearly below, and its insertion area clearly above, what a random "
    "order gives on the same image. RISE compares maps with each other; the random-order control is vitviz's own (in the spirit of Samek et al. 2017's random baseline). *(RISE §4; Samek et al. 2017; MAE §3 for subsets)*"
)
HELP_RANDOM_CURVES = (
    "⚠️ **Random weights**: no class is learned, so probabilities stay near 1/(number of classes), every curve is noise and **no "
    "ranking of the maps is meaningful** (a random order of the patches would do as well); the curves show how "
    "the computation works. Set these maps beside the trained classifier's: that is Adebayo et al.'s "
    "model-randomisation sanity check, and a method whose map barely changes when the weights are random does not "
    "explain what the model learned. *(Adebayo et al. 2018 §3)*"
)

#: Explanations and curves, keyed by model, image content, class index and settings.
MAPS: LRU[tuple, tuple[LoadedModel, Explanation]] = LRU(8)
CURVES: LRU[tuple, Curves] = LRU(16)
#: The top-1 class of (model, image): "predicted" and that class's name share one explanation.
PREDICTED_CLASS: LRU[tuple, int] = LRU(32)
#: Softmax rows of the curves' inputs per (model, image, removal, precision), by kept-patch set
#: (:func:`vitviz.explain.faithfulness.curves_for`'s ``known``): a change of class or of
#: steps runs only the inputs no earlier curve of this image ran.
ROWS: LRU[tuple, dict[bytes, np.ndarray]] = LRU(8)
#: Rows kept per (model, image, removal) before the dict starts again (1000 classes: 4 KB a row).
MAX_ROWS = 2048
#: What the page says of dinov2-small-lab8's decision (model note and caption).
TRAINED_NOTE = ("a **real trained decision on 8 classes**: dinov2-small, frozen, with a linear softmax head vitviz "
                "trained on the labelled photo set's train split (card: `assets/labelled/head/dinov2-small-lab8.md`)")


def model_choices() -> list[tuple[str, str]]:
    """(label, value) pairs of the classifiers (pretrained when here, random weights of the ImageNet ones always).

    Labels are short enough to be read whole in the picker's narrow column at 1280 px (``name (random
    weights)``: the model note below says what random weights mean)."""
    def label_of(label: str, value: str) -> str:
        name, random_init = parse_choice(value)
        if random_init:
            return f"{name} (random weights)"
        if MODELS.get(value) is not None and MODELS[value].head and "unavailable" not in label:
            return f"{value} (8 classes, by vitviz)"
        return label

    return [(label_of(label, value), value) for label, value in _choices(FAMILIES, RANDOM_FAMILIES)]


def default_model(choices: list[tuple[str, str]]) -> str | None:
    """dinov2-small-lab8 where dinov2-small's weights are here, else deit-small-distilled (pretrained if here,
    else random weights), else the first choice."""
    usable = [v for label, v in choices if "unavailable" not in label]
    for name in (DEFAULT_TRAINED, DEFAULT_NAME):
        preferred = [v for v in usable if parse_choice(v)[0] == name]
        if preferred:
            return preferred[0]
    return (usable or [v for _, v in choices] or [None])[0]


def parse_class(value: Any) -> int | str | None:
    """A class from the UI: ``predicted``/empty -> None (top-1), a number -> an index, else a name."""
    if value is None:
        return None
    text = str(value).strip()
    if text in ("", PREDICTED):
        return None
    return int(text) if text.isdigit() else text


def parse_methods(value: Any) -> tuple[str, ...]:
    """``all``/empty -> every method, else one method id."""
    return METHODS if value in (None, "", ALL) else check_methods(str(value))


def parse_steps(value: Any) -> int:
    """Curve steps from a slider: a whole number in ``2..MAX_STEPS``."""
    try:
        f = float(DEFAULT_STEPS if value is None else value)
    except (TypeError, ValueError):
        raise ValueError(f"steps must be a whole number, got {value!r}") from None
    if not np.isfinite(f) or not 2 <= round(f) <= MAX_STEPS:
        raise ValueError(f"steps must be a whole number in 2..{MAX_STEPS}, got {value!r}")
    return int(round(f))


def explanation_for(image: Any, choice: str | None, target: Any) -> tuple[LoadedModel, Explanation]:
    """The picked model and its (cached) four maps for the image and class.

    One forward and backward pass per model, image and class *index*: ``predicted``, the
    top-1 class's name and its index all reach the same cached explanation.
    """
    require_image(image)
    model = load_choice(choice)
    view = square_view(image, model.input_size)
    image_key = (model.choice, id(model.architecture), pixels_digest(view))
    t = parse_class(target)
    if t is None:
        t = PREDICTED_CLASS.get(image_key)
    elif isinstance(t, str) or isinstance(t, int):
        t = check_target(t, int(getattr(check_classifier(model.architecture, model.name), "num_classes", 0)),
                         class_names(model))
    if t is None:  # the top-1 class is not known yet: this pass finds it
        model_e = MAPS.get_or_compute(image_key + (None,), lambda: (model, explain_maps(model, view, None)))
        PREDICTED_CLASS.put(image_key, model_e[1].target)
        return MAPS.get_or_compute(image_key + (model_e[1].target,), lambda: model_e)
    return MAPS.get_or_compute(image_key + (t,), lambda: (model, explain_maps(model, view, t)))


def first_pass_steps(steps: int) -> int | None:
    """The steps of the quick first pass that the page draws before curves of ``steps`` steps: every other
    point (``steps // 2``; for an even number those points are exactly every other point of the full curve,
    :func:`vitviz.explain.faithfulness.step_counts`, so the full pass reuses all of them), or None where there
    is none (an odd number, or fewer than 4 steps)."""
    return steps // 2 if steps % 2 == 0 and steps >= 4 else None


def curves_for(image: Any, choice: str | None, target: Any, removal: str, steps: Any,
               methods: tuple[str, ...] = METHODS, first_pass: bool = False
               ) -> tuple[LoadedModel, Explanation, Curves]:
    """The maps and the (cached) deletion/insertion curves of ``methods``.

    Inputs that an earlier curve of this model, image and removal already ran (another
    class, method or number of steps) are not run again (:data:`ROWS`). The forward passes run
    in :func:`vitviz.models.precision.curve_precision`'s arithmetic (bf16 on a CPU that has it).
    ``first_pass``: the curves of :func:`first_pass_steps` and without the random baseline instead (its
    orders are a quarter of the first pass's inputs; the full pass adds them), unless those of ``steps`` are
    already cached (then those: the page skips straight to them).
    """
    model, e = explanation_for(image, choice, target)
    r, s = check_removal(str(removal or "drop")), parse_steps(steps)
    precision = curve_precision(model.device)
    image_key = (model.choice, id(model.architecture), pixels_digest(e.image))
    orders = RANDOM_ORDERS
    key = image_key + (e.target, r, s, orders, methods, precision)
    quick = first_pass_steps(s) if first_pass else None
    if quick is not None and key not in CURVES:
        s, orders = quick, 0
        key = image_key + (e.target, r, s, orders, methods, precision)

    def compute() -> Curves:
        rows_key = image_key + (r, precision)
        known = ROWS.setdefault(rows_key, dict)
        if len(known) > MAX_ROWS:  # start again (a fresh dict: a concurrent call keeps reading its own)
            known = {}
            ROWS.put(rows_key, known)
        return faithfulness(model, e.image, e.target, methods, r, s, e, known=known, random=orders,
                            precision=precision)

    return model, e, CURVES.get_or_compute(key, compute)


def _tag(e: Explanation) -> str:
    return " (random weights)" if e.random_init else ""


@functools.lru_cache(maxsize=8)
def held_out_accuracy(head: str) -> tuple[float, int, dict[str, float]] | None:
    """How often a head vitviz trained is right on the labelled set's test photos, which it never saw: its
    accuracy, the number of test photos and the accuracy on each class's test photos, as its card states them
    (``assets/labelled/head/<model>.json``, written by ``python -m vitviz.training.linear_head``); ``None``
    without a card. ``head`` is the registry's :attr:`head` file name (``dinov2-small-lab8.safetensors``)."""
    from ..probing.head import card_json_path

    path = card_json_path(Path(head).stem)
    if not path.is_file():
        return None
    card = json.loads(path.read_text(encoding="utf-8"))
    return float(card["accuracy"]["test"]), int(card["count"]["test"]), dict(card["per_class"]["test"])


def how_often_wrong(model: LoadedModel, e: Explanation) -> str:
    """A sentence beside a trained head's prediction: how often the classifier is right on held-out photos,
    overall and for the class shown, so that a wrong answer is not taken for the lesson ("" for a model
    without a card: an ImageNet classifier or random weights)."""
    figures = held_out_accuracy(model.spec.head) if model.spec.head and not e.random_init else None
    if figures is None:
        return ""
    overall, count, per_class = figures
    text = f"**How often it is wrong:** it is right on {overall:.0%} of {count} test photos it never saw"
    if e.class_name in per_class:
        text += f" ({per_class[e.class_name]:.0%} of those labelled *{e.class_name}*)"
    return text + f"; a photo of none of its {len(per_class)} classes still gets one of them."


def all_class_names() -> tuple[str, ...]:
    """Every class name of every Explain model, each once: ImageNet-1k's, then those of the heads vitviz trained.

    The server's class picker accepts these (a picked class, or one sent through the API, is validated
    against them); each model's own list reaches the page with its first answer (:func:`class_choices`).
    """
    from ..models.linear_head import head_dir, read_head

    names = list(imagenet_labels())
    for spec in MODELS.values():
        if spec.head and spec.family in FAMILIES:
            names += [n for n in read_head(head_dir() / spec.head).classes if n not in names]
    return tuple(names)


def class_choices(e: Explanation | None = None, k: int = 5) -> list[tuple[str, str]]:
    """The class picker, searchable by name: the model's top-1, its ``k`` most probable classes with their
    probabilities (when ``e`` is given), then every other class of that model in alphabetical order
    (without ``e``: every class of :func:`all_class_names`)."""
    head = [("predicted class (top-1)", PREDICTED)]
    if e is None:
        names, top = all_class_names(), []
    else:
        names = e.classes or tuple(e.name_of(i) for i in range(e.logits.shape[0]))
        top = e.top_k(k)
        head += [(f"{name} — {p:.2%}", name) for _, name, p in top]
    shown = {name for _, name, _ in top}
    rest = sorted((name for name in names if name not in shown), key=str.lower)
    return head + [(name, name) for name in rest]


def class_label(e: Explanation | None = None, choice: str | None = None) -> str:
    """The class picker's label: how many classes the model has (that of ``e``, else of the picked
    registry model ``choice`` without loading it, else ImageNet's 1000)."""
    if e is not None:
        n = e.logits.shape[0]
    else:
        from ..models.linear_head import head_dir, read_head

        spec = MODELS.get(parse_class_choice(choice))
        n = read_head(head_dir() / spec.head).num_classes if spec is not None and spec.head else len(imagenet_labels())
    return f"Class (this photo's top-{min(5, n)} first; type to search all {n})"


def parse_class_choice(choice: str | None) -> str:
    """The registry name of a picker value, or ``""``."""
    try:
        return parse_choice(choice)[0]
    except ValueError:
        return ""


def page_class(target: Any, choice: str | None = None) -> str:
    """The picker's value for ``target``: itself when it names a class (or index) of the picked model
    (default: ImageNet's classes), else :data:`PREDICTED` (text a person typed that is no class never
    reaches the model)."""
    t = parse_class(target)
    if t is None:
        return PREDICTED
    labels = class_names(load_choice(choice)) if choice else imagenet_labels()
    if isinstance(t, int):
        return labels[t] if 0 <= t < len(labels) else PREDICTED
    return t if t in labels else PREDICTED


def maps_view(image: Any, choice: str | None, target: Any, method: Any = ALL) -> tuple[np.ndarray, str]:
    """The maps of the chosen method(s) in one row of same-size panels, and a caption."""
    model, e = explanation_for(image, choice, target)
    methods = parse_methods(method)
    panels = explanation_row(e.image, [(METHOD_NAMES[m], e.maps[m]) for m in methods])
    predicted = int(np.argmax(e.logits))
    which = "the predicted class" if e.target == predicted else "a chosen class"
    text = (f"**{model.name}{_tag(e)}** explains **{e.class_name}** (class {e.target} of {e.logits.shape[0]}, "
            f"{which}), probability {e.probability:.2%}. Each map runs from its own minimum (dark) to its maximum "
            "(yellow = most important patch).")
    if model.spec.head and not e.random_init:
        text += f"  \nThis is {TRAINED_NOTE}."
    wrong = how_often_wrong(model, e)
    if wrong:
        text += f"  \n{wrong}"
    return panels, text


def _sig(x: float, digits: int = 3) -> float:
    """``x`` to ``digits`` significant digits (areas of random-weight models are about 0.002)."""
    return float(f"{x:.{digits}g}")


def random_name(c: Curves) -> str:
    """The baseline's name in the legend and the table."""
    return f"random order (mean of {c.random_count})"


def auc_rows(c: Curves) -> list[list[Any]]:
    """One table row per method: name, deletion AUC, insertion AUC, their difference (3 significant digits);
    last, the random orders' mean (the chance level), when computed."""
    rows = [[METHOD_NAMES[m], _sig(d), _sig(i), _sig(i - d)] for m, (d, i) in c.auc().items()]
    r = c.random_auc()
    if r is not None:
        rows.append([random_name(c), _sig(r[0]), _sig(r[2]), _sig(r[2] - r[0])])
    return rows


def against_random(c: Curves) -> str:
    """Which maps beat the random orders on both curves by more than the orders' own spread (a sentence)."""
    r = c.random_auc()
    if r is None:
        return ""
    d_mean, d_std, i_mean, i_std = r
    beat = [METHOD_NAMES[m] for m, (d, i) in c.auc().items() if d < d_mean - d_std and i > i_mean + i_std]
    head = (f"A random order of the patches gives deletion area {d_mean:.3g} ± {d_std:.2g} and insertion area "
            f"{i_mean:.3g} ± {i_std:.2g} ({c.random_count} orders): ")
    if not beat:
        return head + "no map beats it on both curves by more than that spread on this image."
    return head + f"beaten on both curves by more than that spread: **{', '.join(beat)}**."


def curves_view(image: Any, choice: str | None, target: Any, method: Any = ALL, removal: str = "drop",
                steps: Any = DEFAULT_STEPS, first_pass: bool = False) -> tuple[go.Figure, list[list[Any]], str]:
    """Deletion and insertion curves, the AUC table rows and a caption (no ranking of the maps on random weights).

    ``first_pass``: the page's quick first drawing (:func:`curves_for`), said so in the title and the caption
    while it has fewer points than asked for.
    """
    model, e, c = curves_for(image, choice, target, removal, steps, parse_methods(method), first_pass)
    auc = c.auc()
    r = c.random_auc()
    asked = parse_steps(steps)
    partial = len(c.counts) - 1 < asked
    fig = faithfulness_figure(c.fractions, c.deletion, c.insertion, METHOD_NAMES, auc,
                              f"{model.name}{_tag(e)}: {e.class_name}, {len(c.counts) - 1} steps"
                              + (f" (first pass; {asked} follow)" if partial else ""),
                              REMOVAL_NAMES[c.removal],
                              random=None if r is None else (c.random_deletion.mean(axis=0),
                                                             c.random_insertion.mean(axis=0)),
                              random_auc=None if r is None else (r[0], r[2]), random_name=random_name(c))
    best_d = min(auc, key=lambda m: auc[m][0])
    best_i = max(auc, key=lambda m: auc[m][1])
    text = (f"Areas under the curves (↓: lower is more faithful, ↑: higher is). "
            f"Patches removed by **{REMOVAL_NAMES[c.removal]}**; {len(c.counts)} points per curve over "
            f"{c.num_patches} patches.")
    if partial:
        later = "points" if c.random_count else "points and the random baseline"
        text = (f"**First pass: {len(c.counts)} of the {asked + 1} points per curve** (every other one"
                + ("" if c.random_count else ", no random baseline yet") + f"); the other {later} are being "
                "computed and will replace these curves, areas and sentences.  \n" + text)
    if c.precision == "bf16":
        text += (f" Computed in bfloat16 on this CPU (about 3x faster): areas within ±{BF16_AUC_TOLERANCE} of "
                 "float32 in vitviz's measurement (`VITVIZ_PRECISION=fp32` for float32).")
    if e.random_init:
        text += "  \n" + HELP_RANDOM_CURVES
    else:
        text += (f" Lowest deletion area here: **{METHOD_NAMES[best_d]}**; highest insertion area: "
                 f"**{METHOD_NAMES[best_i]}**. One image is one test: the papers average over thousands.")
        text += " " + against_random(c)
    return fig, auc_rows(c), text


def explain_view(image: Any, choice: str | None, target: Any, method: Any = ALL, removal: str = "drop",
                 steps: Any = DEFAULT_STEPS) -> tuple[np.ndarray, go.Figure, list[list[Any]], str]:
    """Everything for one request: (maps row, curves figure, AUC rows, caption)."""
    check_removal(str(removal))
    panels, note = maps_view(image, choice, target, method)
    fig, rows, text = curves_view(image, choice, target, method, removal, steps)
    return panels, fig, rows, note + "  \n" + text
