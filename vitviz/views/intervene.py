"""What the Ablation & lens tab shows, as data: before/after of an ablation, a layer's heads ranked, the lens.

No gradio here; the tab (:mod:`vitviz.ui.intervene_tab`) places these views. Layers and heads are counted
from 0, as in :func:`vitviz.ablate`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..intervene.ablation import Ablation, ablate, rank_heads
from ..intervene.commands import parse_heads, parse_tokens
from ..intervene.lens import ClassLens, logit_lens
from ..intervene.subject import subject_of
from ..models.loading import LoadedModel, load_choice
from ..models.runner import runs_with_model
from ..plots.intervene import before_after_bars, lens_lines, ranking_bars
from ..render._draw import panel_row, to_uint8, upscale
from ..render.attention import heat_overlay
from . import attention as av
from .common import require_image

#: Models of the tab: the Attention tab's (MAE, ViT, DeiT, DINO, DINOv2) and dinov2-small-lab8.
FAMILIES = av.FAMILIES + ("probe",)
#: The tab's first model where its weights are here, else the embedded mae-tiny.
PREFERRED = "dinov2-small-lab8"
FALLBACK = "mae-tiny"
#: Tokens the picker offers: (label, value).
TOKEN_CHOICES: list[tuple[str, str]] = [("none", ""), ("the class token", "cls"),
                                        ("the high-norm tokens", "high-norm"),
                                        ("class token and high-norm tokens", "cls,high-norm")]
#: Ablation modes: (label, value).
MODES: list[tuple[str, str]] = [("zero", "zero"), ("mean over the example photos", "mean")]
#: The head-list edits of the buttons.
ACTIONS = ("off", "layer", "only", "reset")
PANEL_PX = 224


def model_choices() -> list[tuple[str, str]]:
    """(label, value) pairs of the tab's picker."""
    return av.model_choices(families=FAMILIES)


def default_model(choices: list[tuple[str, str]]) -> str | None:
    """dinov2-small-lab8 when it is available here, else mae-tiny."""
    from ..models.loading import available_models

    ready = {i.name for i in available_models() if i.available}
    values = [v for _, v in choices]
    for name in (PREFERRED, FALLBACK):
        if name in ready and name in values:
            return name
    return values[0] if values else None


def head_range(choice: str | None) -> tuple[int, int]:
    """``(layers, heads)`` of the encoder of a model choice."""
    s = subject_of(load_choice(choice))
    return s.depth, s.num_heads


def edit_heads(choice: str | None, heads_off: str, layer: float, head: float, action: str) -> str:
    """The list of heads switched off (``"11.2, 8.4"``) after a button: ``off`` adds the head, ``layer`` adds
    every head of the layer, ``only`` switches off every other head of the layer, ``reset`` empties it."""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; choose one of {', '.join(ACTIONS)}")
    if action == "reset":
        return ""
    depth, n = head_range(choice)
    layer_i, head_i = int(round(float(layer or 0))), int(round(float(head or 0)))
    current = set(parse_heads(heads_off or ""))
    if action == "off":
        current.add((layer_i, head_i))
    elif action == "layer":
        current |= {(layer_i, h) for h in range(n)}
    else:
        current = {p for p in current if p[0] != layer_i} | {(layer_i, h) for h in range(n) if h != head_i}
    return ", ".join(f"{a}.{b}" for a, b in sorted(current))


@dataclass(frozen=True)
class AblationView:
    """Before and after (fields name the tab's components)."""

    ab_chart: Any
    ab_panels: np.ndarray
    ab_text: str


def _panels(ab: Ablation) -> np.ndarray:
    view = ab.before.attention.image
    out = []
    for tag, o in (("before", ab.before), ("after", ab.after)):
        if o.reconstruction is not None:
            out.append((f"reconstruction {tag}", to_uint8(upscale(o.reconstruction.pasted, PANEL_PX))))
    for tag, o in (("before", ab.before), ("after", ab.after)):
        out.append((f"class-token attention {tag}", heat_overlay(view, o.cls_attention(), size=PANEL_PX)))
    for tag, o in (("before", ab.before), ("after", ab.after)):
        out.append((f"rollout {tag}", heat_overlay(view, o.rollout(), size=PANEL_PX)))
    return panel_row(out, font_size=15)


def ablation_view(image: Any, model: str | None, heads_off: str, tokens: str, mode: str) -> AblationView:
    """The photo through the model plainly and with ``heads_off`` (``"L.H, ..."``) and ``tokens`` removed."""
    require_image(image)
    return _ablation_view(load_choice(model), image, heads_off, tokens, mode)


@runs_with_model
def _ablation_view(m: LoadedModel, image: Any, heads_off: str, tokens: str, mode: str) -> AblationView:
    """:func:`ablation_view` drawn where the model's calls run: with model workers the two outcomes' attention
    stacks stay in the worker and only the chart, the panels and the text come back."""
    ab = ablate(m, image, heads=parse_heads(heads_off or ""), tokens=parse_tokens(tokens or ""), mode=mode)
    if ab.kind == "classifier":
        names = [n for n, _ in ab.top(5)]
        idx = [ab.classes.index(n) for n in names]
        chart = before_after_bars(names, [ab.before.probs[i] for i in idx], [ab.after.probs[i] for i in idx],
                                  "top-5 before, and the same classes after")
    elif ab.kind == "mae":
        chart = before_after_bars(["hidden-patch error"], [ab.before.hidden_error], [ab.after.hidden_error],
                                  "MAE error on the hidden patches (MSE, RGB in [0, 1])", unit="MSE")
    else:
        chart = before_after_bars(["cosine distance"], [0.0], [ab.effect()],
                                  "class-token feature: how far it moved", unit="cosine distance")
    text = ab.summary()
    if ab.kind == "classifier":
        text += "\n\nAfter: " + ", ".join(f"{n} {p:.1%}" for n, p in ab.top(5, "after"))
    if ab.random_init:
        text += "\n\n*Random weights: the numbers show the architecture, not anything learned.*"
    return AblationView(chart, _panels(ab), text)


@dataclass(frozen=True)
class RankingView:
    """A layer's heads ranked."""

    rank_chart: Any
    rank_text: str


def ranking_view(image: Any, model: str | None, layer: float, mode: str,
                 progress: Callable[[float, str], None] | None = None) -> RankingView:
    """Every head of ``layer`` removed alone, ranked by how much that moves the output."""
    require_image(image)
    m = load_choice(model)
    layer_i = int(round(float(layer or 0)))
    r = rank_heads(m, image, layers=layer_i, mode=mode, progress=progress)
    labels = [f"layer {a} head {b}" for a, b, _ in r.rows]
    target = f" of *{r.target}*" if r.target else ""
    chart = ranking_bars(labels, [e for _, _, e in r.rows], f"layer {layer_i}: each head removed alone ({mode})",
                         r.measure)
    a, b, e = r.rows[0]
    return RankingView(chart, f"Measured: the {r.measure}{target}. The head that matters most here is **layer {a} "
                              f"head {b}** ({e:+.4g}).")


@dataclass(frozen=True)
class LensView:
    """The lens by layer."""

    lens_chart: Any
    lens_pictures: np.ndarray | None
    lens_text: str


def lens_view(image: Any, model: str | None) -> LensView:
    """Every layer read through the final norm and head (an MAE: its decoder's picture by layer)."""
    require_image(image)
    m = load_choice(model)
    lens = logit_lens(m, image)
    if isinstance(lens, ClassLens):
        name = lens.classes[lens.final]
        chart = lens_lines(lens.names, {f"p({name}), class token": lens.prob_by_layer(),
                                        f"p({name}), patch average": lens.prob_by_layer(pool="avg")},
                           f"the final answer, {name}, read after each block")
        rows = "\n".join(f"| {n} | {lens.prob_by_layer()[i]:.1%} | "
                         + ", ".join(f"{c} {p:.0%}" for c, p in lens.top(i, 3)) + " |"
                         for i, n in enumerate(lens.names))
        table = f"| layer | p({name}) | top-3 (class token) |\n|---|---|---|\n{rows}"
        return LensView(chart, None, lens.summary() + "\n\n" + table)
    chart = lens_lines(list(lens.names), {"hidden-patch error": lens.errors},
                       "MAE decoder read after each block", unit="MSE", percent=False)
    pictures = panel_row([(n, to_uint8(upscale(p, 160))) for n, p in zip(lens.names, lens.pictures)], font_size=15)
    return LensView(chart, pictures, lens.summary())


def url_controls(state: Any) -> dict[str, Any]:
    """The URL's model, layer and heads (``?tab=intervene&model=dinov2-small-lab8&heads=11.2``)."""
    out: dict[str, Any] = {}
    if state.model in [v for _, v in model_choices()]:
        out["model"] = state.model
    if state.layer is not None:
        out["layer"] = state.layer
    if getattr(state, "heads", None):
        out["heads_off"] = state.heads
    return out
