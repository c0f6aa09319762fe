"""What the Pretraining tab shows: linear probes on frozen features against the number of labels,
and the shipped fine-tuning and from-scratch runs beside them, with a verdict computed from the logs.

The probes come from the cached features (:mod:`vitviz.probing`; no encoder runs here), the
trained runs from the shipped logs (:mod:`vitviz.probing.protocols`). Returns Plotly figures
and Markdown; no gradio here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..cache import LRU
from ..errors import ModelUnavailable
from ..plots.pretraining import Bar, Series, epochs_figure, probe_figure, protocols_figure
from ..probing.features import FeatureSet, available_features, find_features, load_manifest
from ..probing.linear import LABELS_PER_CLASS, SEEDS, ProbeCurve, probe_curve
from ..probing.protocols import RUN_NAMES, read_logs, shipped_summary

#: The shipped schedule of trained runs shown (``assets/labelled/finetune/<schedule>``).
SCHEDULE = "e10"
#: Encoders in display order (their random-weight versions follow each).
ORDER: tuple[str, ...] = ("dinov2-small", "mae-tiny", "beit-tiny")
#: Which layer is probed, as a share of each encoder's depth (encoders differ in depth: 8 or 12 blocks).
DEPTHS: dict[str, float] = {"last": 1.0, "3/4": 0.75, "1/2": 0.5, "1/4": 0.25, "0": 0.0}
DEPTH_CHOICES: list[tuple[str, str]] = [("last block", "last"), ("¾ of the depth", "3/4"),
                                        ("half the depth", "1/2"), ("¼ of the depth", "1/4"),
                                        ("embedding (layer 0)", "0")]
DEPTH_NAMES: dict[str, str] = {v: lab for lab, v in DEPTH_CHOICES}
POOLING_CHOICES: list[tuple[str, str]] = [("class token (CLS)", "cls"), ("average of the patch tokens", "avg")]
#: Family of each trained run (its colour).
RUN_FAMILY: dict[str, str] = {"ft-llrd": "mae", "ft": "mae", "scratch-vit": "scratch", "scratch-cnn": "cnn"}

INTRO = (
    "*Does pretraining pay off when labels are few?* A ViT has much less of a CNN's built-in bias for nearby pixels "
    "(only its patching and the resizing of its position embeddings use the 2-D layout; *ViT §3.1*), so "
    "trained from scratch on little data it loses to a CNN *(ViT §4.3, fig. 3–4)*; self-supervised pretraining "
    "on unlabelled photos is meant to close that gap *(MAE §4.2, fig. 8; DINOv2, linear evaluation)*. Here the "
    "question is asked of a small labelled set, **268 photos in 8 classes** from Debian packages "
    "(172 train, 32 validation, 64 test; the test photos chose nothing). Two ways to use a pretrained "
    "encoder: **linear probe** (freeze it, fit only a linear classifier on its features) and **fine-tune** "
    "(train every weight) *(MAE §4.3 and fig. 9: the two can disagree)*."
)
HELP_PROBES = (
    "**Linear probes.** Each point: a linear classifier fitted on the frozen features of *k* labelled train "
    "photos per class, scored on the 64 test photos; the line is the mean over 5 seeds (which photos get the "
    "labels), the bar ± one standard deviation. *all* uses every train photo (one fit, so no spread). Dashed lines "
    "with open markers: the **same architecture with random weights** — what the architecture alone gives, "
    "Adebayo et al.'s (2018) model-randomisation check: what survives random weights comes from the architecture,"
    " not from training. Here only dinov2-small sits clearly above its twin; mae-tiny is below its twin with 1 "
    "label a class and a few points above with 5 (the labelled set's card). The "
    "classifier is ViT's few-shot probe: regularised least squares to {−1, 1} targets in closed form *(ViT §4.1, "
    "Metrics)*, on features standardised per channel *(MAE §A.1: a BatchNorm without affine parameters)*. Curves "
    "come from features computed once and shipped, so a change answers in about a second."
)
HELP_PROTOCOLS = (
    "Frozen features + linear probe (224 px, as the encoders were "
    "pretrained), beside networks trained on the same 172 photos by `python -m vitviz.training.finetune`: "
    "mae-tiny **fine-tuned** end to end with and without layer-wise learning-rate decay (lower layers learn "
    "slower: the rate of block *i* is multiplied by 0.75^(depth − i), blocks counted from 0; the Features tab "
    "counts blocks from 1, with 0 the embeddings, so there it reads 0.75^(depth + 1 − i); *MAE §A.1, table 9*), "
    "the **same ViT from scratch**, and a small **CNN from scratch** (timm resnet10t, comparable FLOPs). Bars: mean over seeds; "
    "diamonds: each seed. These runs are CI-free: their logs are shipped and read here."
)
SOURCES = (
    "**Sources.** ViT: Dosovitskiy et al., ICLR 2021 — §4.1 *Metrics* (few-shot linear probe by least squares), "
    "§4.3 *Pre-training data requirements*, fig. 3 (ResNets ahead when pretrained on ImageNet-1k, ViTs ahead on "
    "JFT-300M) and fig. 4 (linear 5-shot on JFT subsets) — checked (§4.2 is the comparison to the "
    "state of the art). MAE: He et al., CVPR 2022 — table 1 (§4.1, ablations with fine-tuning and linear "
    "probing), fig. 8 (§4.2, MAE vs. supervised training from scratch), fig. 9 (§4.3, partial fine-tuning: 0 "
    "blocks is linear probing), §A.1 (fine-tuning recipe with layer-wise decay 0.75, table 9; linear probing with "
    "a BatchNorm, table 10) — checked. DINOv2: Oquab et al., TMLR 2024 — linear evaluation on frozen features "
    "(class token, optionally with the average patch token) — section number unchecked. DeiT: Touvron et al., "
    "ICML 2021 — a ViT trained on ImageNet-1k alone reaches strong accuracy with heavy augmentation, "
    "regularisation and distillation, so “ViTs need huge data” is a statement about a recipe as much as about "
    "the architecture — section numbers unchecked."
)

#: Probe curves, keyed by feature file, layer, pooling, labels per class and seeds.
CURVES: LRU[tuple, ProbeCurve] = LRU(64, name="views.pretraining")


def split_key(key: str) -> tuple[str, bool]:
    """``mae-tiny-random`` -> ``("mae-tiny", True)``; ``mae-tiny`` -> ``("mae-tiny", False)``."""
    return (key[: -len("-random")], True) if key.endswith("-random") else (key, False)


def family(model: str) -> str:
    """The colour family of a registry name (dinov2, mae, beit or other)."""
    for f in ("dinov2", "mae", "beit"):
        if model.startswith(f):
            return f
    return "other"


def label(key: str) -> str:
    """Readable name of a feature key."""
    model, random = split_key(key)
    return f"{model} (random weights)" if random else model


def encoder_choices() -> list[tuple[str, str]]:
    """(label, feature key) of every encoder whose features are on disk: known encoders first, each
    followed by its random-weight version."""
    have = available_features()
    rank = {m: i for i, m in enumerate(ORDER)}

    def order(key: str) -> tuple:
        model, random = split_key(key)
        return (rank.get(model, len(ORDER)), model, random)

    return [(label(k), k) for k in sorted(have, key=order)]


def check_encoders(values: Any) -> tuple[str, ...]:
    """The chosen feature keys, validated against those on disk, in display order.

    Raises:
        ValueError: none chosen, or one with no features here (naming those there are).
    """
    if isinstance(values, str):
        values = [v for v in values.split(",") if v.strip()]
    asked = [str(v).strip() for v in (values or [])]
    if not asked:
        raise ValueError("choose at least one encoder")
    known = [k for _, k in encoder_choices()]
    bad = [a for a in asked if a not in known]
    if bad:
        raise ModelUnavailable(f"no probe features of {bad[0][:60]!r} here; have: {', '.join(known) or 'none'}")
    return tuple(k for k in known if k in asked)


def check_depth(depth: Any) -> str:
    """A key of :data:`DEPTHS` (ValueError naming them otherwise)."""
    if depth not in DEPTHS:
        raise ValueError(f"depth must be one of {', '.join(DEPTHS)}, got {str(depth)[:40]!r}")
    return str(depth)


def check_pooling(pooling: Any) -> str:
    """``cls`` or ``avg`` (ValueError otherwise)."""
    if pooling not in ("cls", "avg"):
        raise ValueError(f"pooling must be cls or avg, got {str(pooling)[:40]!r}")
    return str(pooling)


def features_of(key: str) -> FeatureSet:
    """The cached feature set of a key (ModelUnavailable when it is not on disk)."""
    model, random = split_key(key)
    fs = find_features(model, random)
    if fs is None:
        raise ModelUnavailable(f"no probe features of {key} here")
    return fs


def layer_of(fs: FeatureSet, depth: str) -> int:
    """The block probed for a share of the depth: ``round(share * depth)`` (0 = embedding)."""
    return int(round(DEPTHS[check_depth(depth)] * fs.depth))


def curve(key: str, depth: str = "last", pooling: str = "cls",
          labels_per_class: Sequence[int | str] = LABELS_PER_CLASS, seeds: Sequence[int] = SEEDS) -> ProbeCurve:
    """One encoder's probe curve from its cached features (memoised; the encoder is never run)."""
    fs = features_of(key)
    layer = layer_of(fs, depth)
    pooling = check_pooling(pooling)
    k = (id(fs), key, layer, pooling, tuple(labels_per_class), tuple(seeds))
    return CURVES.get_or_compute(k, lambda: probe_curve(fs, layer, pooling, labels_per_class, seeds))


def _series(key: str, c: ProbeCurve, depth_of: int) -> Series:
    model, random = split_key(key)
    num_classes = round(1 / c.chance)
    x = c.n_fit.mean(axis=1) / num_classes  # labelled photos per class, on average
    ticks = tuple("all" if k == "all" else str(k) for k in c.labels_per_class)
    return Series(f"{label(key)} · block {c.layer}/{depth_of}", family(model), random, x, ticks, c.accuracy)


def accuracy_text(mean: float, spread: float, n_seeds: int, n_test: int) -> str:
    """A test accuracy over seeds as ``"49.5% ± 1.9"``; where every seed scored the same, it says so with the
    count (``"32.8%, 21 of 64 on every seed"``): a bare ``± 0.0`` reads as the rounding of a small spread."""
    if n_seeds == 1:
        return f"{100 * mean:.1f}% (one seed)"
    if spread < 1e-9:
        return f"{100 * mean:.1f}%, {round(mean * n_test)} of {n_test} on every seed"
    return f"{100 * mean:.1f}% ± {100 * spread:.1f}"


def _cell(c: ProbeCurve, k: int | str) -> str:
    mean, spread = c.at(k)
    return f"{100 * mean:.1f}%" if k == "all" else accuracy_text(mean, spread, len(c.seeds), c.n_test)


@dataclass(frozen=True)
class Probe:
    """Probe curves (Plotly), a Markdown table and a caption (fields: the Pretraining tab's components)."""

    probe_plot: go.Figure
    probe_table: str
    probe_text: str


@dataclass(frozen=True)
class Protocols:
    """Every protocol with all labels (bars), the training curves, their recipes and the verdict."""

    bars: go.Figure
    epochs: go.Figure
    recipes: str
    verdict: str


def probe_view(encoders: Any, depth: Any = "last", pooling: Any = "cls",
               progress: Callable[[int, int], None] | None = None) -> Probe:
    """The probe curves of the chosen encoders at one depth and pooling: figure, table, caption.

    Args:
        encoders: feature keys (``dinov2-small``, ``mae-tiny-random``...), a list or comma-separated.
        depth: a key of :data:`DEPTHS`. pooling: ``cls`` or ``avg``.
        progress: optional ``callable(done, total)`` after each encoder.
    """
    keys = check_encoders(encoders)
    depth, pooling = check_depth(depth), check_pooling(pooling)
    curves = []
    for i, key in enumerate(keys):
        curves.append((key, curve(key, depth, pooling), features_of(key).depth))
        if progress is not None:
            progress(i + 1, len(keys))
    pool = {v: lab for lab, v in POOLING_CHOICES}[pooling]
    fig = probe_figure([_series(k, c, d) for k, c, d in curves], curves[0][1].chance,
                       f"Linear probe: {DEPTH_NAMES[depth]}, {pool}")
    ks = curves[0][1].labels_per_class
    head = "| encoder | block | " + " | ".join(f"{k} / class" if k != "all" else "all labels" for k in ks) + " |"
    rows = [head, "|" + "---|" * (len(ks) + 2)]
    rows += [f"| {label(k)} | {c.layer} of {d} | " + " | ".join(_cell(c, x) for x in ks) + " |" for k, c, d in curves]
    best = max(curves, key=lambda t: t[1].at(5)[0] if 5 in ks else t[1].mean()[-1])
    n_test = curves[0][1].n_test
    caption = (f"Test accuracy on {n_test} photos, mean ± standard deviation over {len(curves[0][1].seeds)} seeds; "
               f"chance is {100 * curves[0][1].chance:.1f}%. Highest here at 5 labels per class: **{label(best[0])}**. "
               "`python -m vitviz probe --model NAME [--pooling avg] [--random-weights]` prints the same numbers.")
    return Probe(fig, "\n".join(rows), caption)


def _trained_bars(summary: dict) -> list[Bar]:
    return [Bar(f"{v['name']} ({v['epochs']} epochs)", RUN_FAMILY.get(run, "other"), False,
                tuple(float(a) for a in v["test_acc"]), "trained on the 172 train photos") for run, v in summary.items()]


def _probe_bars(pooling: str) -> list[tuple[Bar, ProbeCurve]]:
    out = []
    for _, key in encoder_choices():
        c = curve(key, "last", pooling, ("all",), (0,))
        model, random = split_key(key)
        out.append((Bar(f"linear probe: {label(key)}", family(model), random, (float(c.accuracy[0, 0]),),
                        "frozen features, last block, linear classifier"), c))
    return out


def verdict(summary: dict, probes: Sequence[tuple[Bar, ProbeCurve]] = ()) -> str:
    """One sentence, computed from the shipped logs: does a CNN beat the same-size ViT trained from scratch
    (the ViT paper's small-data finding), and does pretraining close the gap here?"""
    cnn, vit = summary.get("scratch-cnn"), summary.get("scratch-vit")
    if cnn is None or vit is None:
        return "The shipped runs lack a from-scratch ViT or CNN, so there is no verdict."

    n_test = sum(p.get("split") == "test" for p in load_manifest()["photos"])

    def pm(v: dict) -> str:
        return accuracy_text(v["mean"], v["spread"], len(v["test_acc"]), n_test)

    n = len(cnn["test_acc"])
    finetuned = [summary[r] for r in ("ft", "ft-llrd") if r in summary]
    best_ft = max(finetuned, key=lambda v: v["mean"]) if finetuned else None
    frozen = [(b, c) for b, c in probes if not b.random]
    best_probe = max(frozen, key=lambda t: t[1].accuracy[0, 0]) if frozen else None
    separated = cnn["mean"] - cnn["spread"] > vit["mean"] + vit["spread"]
    if separated:
        head = (f"**It reproduces at this scale:** trained from scratch on 172 labelled photos, the CNN reaches "
                f"{pm(cnn)} and the same-size ViT {pm(vit)} ({n} seeds each)")
    elif vit["mean"] >= cnn["mean"]:
        head = (f"**It does not reproduce here:** from scratch the ViT ({pm(vit)}) is not behind the CNN "
                f"({pm(cnn)}), probably because neither learns much in {cnn['epochs']} epochs on 172 photos")
    else:
        head = (f"**Not clearly:** from scratch the CNN ({pm(cnn)}) leads the ViT ({pm(vit)}) by less than their "
                f"spread over {n} seeds")
    tail = ""
    if best_ft is not None:
        closes = best_ft["mean"] >= cnn["mean"]
        tail += (f"; fine-tuning our small MAE ({pm(best_ft)} at best) {'closes' if closes else 'does not close'} "
                 "the gap")
    if best_probe is not None:
        acc = float(best_probe[1].accuracy[0, 0])
        name = best_probe[0].name.split(": ", 1)[-1]
        tail += (f", {'and' if best_probe[1].accuracy[0, 0] < cnn['mean'] else 'while'} a linear probe on "
                 f"{name}'s frozen features {'beats' if acc > cnn['mean'] else 'does not beat'} the CNN "
                 f"({100 * acc:.1f}%)")
    return head + tail + "."


def recipe_table(schedule: str = SCHEDULE) -> str:
    """The trained runs' recipes, from the first line of their logs (Markdown)."""
    logs = read_logs(schedule)
    seen: dict[str, dict] = {}
    for log in logs:
        seen.setdefault(log.run, {**log.recipe, "seeds": []})["seeds"].append(log.seed)
    rows = ["| run | lr | layer decay | epochs | resolution | batch | seeds | params |", "|---|---|---|---|---|---|---|---|"]
    for run, r in seen.items():
        rows.append(f"| {RUN_NAMES.get(run, run)} | {r['lr']:g} | {r['llrd']:g} | {r['epochs']} | {r['resolution']} px "
                    f"| {r['batch']} | {', '.join(map(str, r['seeds']))} | {r.get('params', 0) / 1e6:.2f} M |")
    common = next(iter(seen.values()), {})
    if common:
        rows.append("")
        rows.append(f"Every run: AdamW (weight decay {common['weight_decay']:g}), {common['warmup_epochs']} warm-up "
                    f"epoch then cosine, label smoothing {common['label_smoothing']:g}, random resized crop (scale "
                    f"{common['crop_scale'][0]:g}–{common['crop_scale'][1]:g}) and flip, {common['n_train']} train "
                    f"photos; test accuracy scored once, after the last epoch. Reproduce: `python -m "
                    "vitviz.training.labelled --work .train/labelled` then `python -m vitviz.training.finetune "
                    "--data .train/labelled --out .train/finetune --runs ft-llrd ft scratch-vit scratch-cnn --seeds 0 1 2`.")
    return "\n".join(rows)


def protocols_view(pooling: Any = "cls", schedule: str = SCHEDULE) -> Protocols:
    """Every protocol with all labels side by side, the training curves, the recipes and the verdict.

    Returns:
        (bars figure, epochs figure, recipe table Markdown, verdict sentence Markdown).
    """
    pooling = check_pooling(pooling)
    summary = shipped_summary(schedule)
    probes = _probe_bars(pooling)
    chance = 1.0 / len(load_manifest()["classes"])
    bars = [b for b, _ in probes] + _trained_bars(summary)
    fig = protocols_figure(bars, chance, f"All labels, every protocol (probes: last block, {pooling})")
    logs = read_logs(schedule)
    runs = []
    for run, v in summary.items():
        val = np.array([[e["val_acc"] for e in log.epochs] for log in logs if log.run == run])
        runs.append((v["name"], RUN_FAMILY.get(run, "other"), val))
    epochs = epochs_figure(runs, chance, "Training on 172 photos: validation accuracy per epoch")
    return Protocols(fig, epochs, recipe_table(schedule), verdict(summary, probes))
