"""Head and token ablation: switch parts of a ViT off and recompute what it says, beside what it said.

``vitviz.ablate(model, image, heads=[(11, 3)], tokens=["cls"], mode="zero")`` runs the model twice
on the photo, plainly and with the change (:mod:`vitviz.intervene.hooks`), and returns both
:class:`Outcome` s: the classifier's probabilities (lab8 and ImageNet heads), an MAE's reconstruction
and its hidden-patch error, a backbone's final class-token feature, and for every kind the
attention of every block (class-token attention and rollout: :mod:`vitviz.explain`) and the
token norms (:mod:`vitviz.explain.norms`).

:func:`rank_heads` removes each head of a layer alone and sorts them by how much that moves the
prediction (a classifier: the probability of the plain answer; an MAE: the hidden-patch error; a
backbone: the class token's cosine distance), after Michel, Levy and Neubig (NeurIPS 2019, "Are
Sixteen Heads Really Better than One?"), who found that many heads can go with little loss.

Layers and heads are counted from 0. Each outcome costs two forward passes: one plain (the
model's own fused attention: with nothing changed it equals the model's forward bit for bit) and
one through the attention capture (:mod:`vitviz.explain.capture`) for the maps and norms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .. import settings
from ..cache import LRU
from ..core.images import ImageInput, model_input, pixels_digest, square_view
from ..explain.attention import maps_of
from ..explain.capture import attention_modules, capture_block_tokens, capturing
from ..explain.labels import class_names, softmax
from ..explain.maps import AttentionMaps
from ..explain.norms import TokenNorms, norms_of
from ..mae.reconstruct import Reconstruction, assemble_stops, predict
from ..models.loading import LoadedModel
from ..models.runner import pause_point, runs_model
from .hooks import Change, check_heads, check_mode, intervening
from .means import reference_means
from .subject import MAE_RATIO, Subject, subject_of

#: The token word that stands for every high-norm patch token (:mod:`vitviz.explain.norms`).
HIGH_NORM = "high-norm"
TokenSpec = int | str | tuple[int, int]


@dataclass(frozen=True, eq=False)
class Outcome:
    """What the model computes on one photo, with or without a change.

    Attributes:
        logits: ``(C,)`` float32 class logits (classifiers), else None.
        feature: ``(D,)`` float32 what the head reads (the pooled, normed class token), classifiers
            and backbones; None for an MAE.
        reconstruction: an MAE's reconstruction under the subject's mask, else None.
        attention: every block's ``(L, H, T, T)`` attention.
        norms: every layer's token norms, outliers marked.
    """

    logits: np.ndarray | None
    feature: np.ndarray | None
    reconstruction: Reconstruction | None
    attention: AttentionMaps
    norms: TokenNorms

    @property
    def probs(self) -> np.ndarray | None:
        """``(C,)`` float64 softmax of the logits (None without a head)."""
        return None if self.logits is None else softmax(self.logits)

    @property
    def hidden_error(self) -> float | None:
        """An MAE's MSE over the hidden patches (RGB in [0, 1]); None for other models."""
        return None if self.reconstruction is None else self.reconstruction.masked_mse

    def cls_attention(self) -> np.ndarray:
        """``(gh, gw)``: the last block's class-token attention over the patches, mean of heads (0 at hidden patches)."""
        lay = self.attention.layout
        row = self.attention.attentions[-1, :, lay.resolve("cls"), lay.num_prefix:].mean(axis=0)
        return lay.scatter(row, fill=0.0)

    def rollout(self) -> np.ndarray:
        """``(gh, gw)``: the class token's attention rollout (sums to 1)."""
        return self.attention.rollout()


def _plain(subject: Subject, x: torch.Tensor, view: np.ndarray) -> tuple[Any, Any, Any]:
    """The model's own forward pass: ``(logits, feature, reconstruction)`` as NumPy / a Reconstruction."""
    model, module = subject.model, subject.model.module
    if subject.kind == "mae":
        assert subject.mask is not None
        masks = subject.mask.unsqueeze(0)
        pixels, losses = predict(model, view, masks, channels_last=True)
        return None, None, assemble_stops(view, pixels, masks, losses, module.patch_size, model.norm_pix)[0]
    with torch.inference_mode():
        feats = module.forward_features(x)
        out = module.forward_head(feats)
        pooled = module.forward_head(feats, pre_logits=True)
    logits = out[0].float().cpu().numpy() if subject.kind == "classifier" else None
    return logits, pooled[0].float().cpu().numpy(), None


@runs_model
def run_outcome(model: LoadedModel, view: np.ndarray, mask: np.ndarray | None, heads: tuple[tuple[int, int], ...],
                tokens: tuple[int, ...], mode: str, capture: bool = True) -> Outcome | tuple[Any, Any, Any]:
    """One photo through the model with ``heads`` and ``tokens`` changed (uncached; see :func:`ablate`).

    Args:
        view: ``(S, S, 3)`` uint8 square view.
        mask: MAE only: ``(gh, gw)`` bool, True = hidden; None otherwise.
        heads, tokens, mode: the change (validated).
        capture: also run the attention capture (the maps and norms); False returns only the plain
            pass's ``(logits, feature, reconstruction)``.
    """
    subject = subject_of(model, mask)
    means = reference_means(subject) if mode == "mean" and (heads or tokens) else None
    change = Change(heads, tokens, mode, means)
    x = model_input(view, model.data_config, model.device)
    with intervening(subject.blocks, change):
        plain = _plain(subject, x, view)
        if not capture:
            return plain
        with capturing(attention_modules(subject.blocks)) as store:
            seq, _ = capture_block_tokens(subject.blocks, subject.encoder_run(x))
    if not all(len(s) == 1 for s in store):
        raise RuntimeError("a block did not run exactly once during the capture")
    a = torch.stack([s[0][0].float().cpu() for s in store]).numpy()
    tok = tuple(t[0].numpy() for t in seq)
    names = ("embedding",) + tuple(f"block {i + 1}" for i in range(len(tok) - 1))
    maps = maps_of(model, "encoder", a, subject.layout, np.array(view, copy=True), None)
    norms = norms_of(model.name, names, tok, subject.layout, a, bool(model.random_init))
    return Outcome(*plain, attention=maps, norms=norms)


def resolve_tokens(subject: Subject, tokens: Sequence[TokenSpec], norms: TokenNorms | None = None) -> tuple[int, ...]:
    """Sequence positions of ``tokens``: indices, prefix names (``cls``, ``dist``, ``reg0``), ``(row, col)``
    patches, or ``high-norm`` (every patch token that :mod:`vitviz.explain.norms` marks after any block,
    on this photo: needs ``norms``).

    Raises:
        ValueError: an unknown name or a position out of range (naming the valid ones).
    """
    out: set[int] = set()
    lay = subject.layout
    for t in tokens:
        if isinstance(t, str) and t == HIGH_NORM:
            if norms is None:
                raise ValueError("high-norm tokens are found on the plain pass; none given")
            marked = norms.outliers[1:].any(axis=0)
            out.update(int(i) + lay.num_prefix for i in np.flatnonzero(marked))
        elif isinstance(t, (list, tuple)):
            out.add(lay.resolve((int(t[0]), int(t[1]))))
        else:
            out.add(lay.resolve(t))
    return tuple(sorted(out))


@dataclass(frozen=True, eq=False)
class Ablation:
    """A photo through a model, plainly (``before``) and with heads or tokens removed (``after``).

    Attributes:
        model_name: registry name.
        kind: ``classifier``, ``mae`` or ``backbone``.
        heads: the ``(layer, head)`` pairs changed, from 0.
        tokens: the sequence positions changed; ``token_names`` says which they are.
        mode: ``zero`` or ``mean``.
        classes: the classifier's class names (empty for other kinds).
        before, after: the two :class:`Outcome` s.
        random_init: the weights are random.
    """

    model_name: str
    kind: str
    heads: tuple[tuple[int, int], ...]
    tokens: tuple[int, ...]
    token_names: tuple[str, ...]
    mode: str
    classes: tuple[str, ...]
    before: Outcome
    after: Outcome
    random_init: bool = False

    def top(self, k: int = 5, which: str = "before") -> list[tuple[str, float]]:
        """The ``k`` most probable classes of ``before`` or ``after`` (empty without a head)."""
        p = (self.before if which == "before" else self.after).probs
        if p is None:
            return []
        order = np.argsort(-p, kind="stable")[:k]
        return [(self.classes[i], float(p[i])) for i in order]

    def target(self) -> int | None:
        """Index of the plain answer (the class ``before`` ranks first), or None without a head."""
        p = self.before.probs
        return None if p is None else int(np.argmax(p))

    def effect(self, target: int | None = None) -> float:
        """How much the change moved the output: a classifier's probability of ``target`` (default: the
        plain answer) after minus before; an MAE's hidden-patch error after minus before; a backbone's
        cosine distance between the class-token features."""
        return _effect(self.kind, self.before, self.after, self.target() if target is None else target)

    def summary(self) -> str:
        """One measured sentence."""
        parts = [", ".join(f"layer {layer} head {h}" for layer, h in self.heads)] if self.heads else []
        if self.tokens:
            parts.append("the " + ", ".join(self.token_names))
        what = " and ".join(parts) or "nothing"
        if self.mode == "zero":
            how = {(True, False): "zeroed", (False, True): "unread by the other tokens",
                   (False, False): "removed"}.get((bool(self.heads), bool(self.tokens)),
                                                  "removed (heads zeroed, tokens unread)")
        else:
            how = "held at their mean over the example photos"
        if self.kind == "classifier":
            t = self.target()
            assert t is not None and self.after.probs is not None and self.before.probs is not None
            now = self.top(1, "after")[0]
            return (f"With {what} {how}, {self.model_name}'s probability of *{self.classes[t]}* goes from "
                    f"{self.before.probs[t]:.1%} to {self.after.probs[t]:.1%}; its answer is now *{now[0]}* "
                    f"({now[1]:.1%}).")
        if self.kind == "mae":
            return (f"With {what} {how}, {self.model_name}'s error on the hidden patches goes from "
                    f"{self.before.hidden_error:.4f} to {self.after.hidden_error:.4f} (MSE, RGB in [0, 1]).")
        return (f"With {what} {how}, {self.model_name}'s class-token feature moves by a cosine distance of "
                f"{self.effect():.4f}.")


def _effect(kind: str, before: Any, after: Any, target: int | None) -> float:
    """See :meth:`Ablation.effect`; ``before``/``after`` are Outcomes or plain ``(logits, feature, rec)`` triples."""
    def part(o: Any, i: int) -> Any:
        return o[i] if isinstance(o, tuple) else (o.logits, o.feature, o.reconstruction)[i]

    if kind == "classifier":
        return float(softmax(part(after, 0))[target] - softmax(part(before, 0))[target])
    if kind == "mae":
        return float(part(after, 2).masked_mse - part(before, 2).masked_mse)
    a, b = part(before, 1).astype(np.float64), part(after, 1).astype(np.float64)
    return float(1.0 - a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12))


#: Outcomes, keyed by model, photo, mask and change (an outcome of dinov2-small: about 3.5 MB).
CACHE: LRU[tuple, Outcome] = LRU(lambda: settings.get("VITVIZ_ATTENTION_CACHE") * 2, name="intervene.outcomes")


def _model_key(model: LoadedModel) -> tuple:
    return (model.name, bool(model.random_init), str(model.device), id(model.architecture))


def _mask_np(subject: Subject) -> np.ndarray | None:
    return None if subject.mask is None else subject.mask.cpu().numpy().astype(bool)


def outcome(subject: Subject, view: np.ndarray, heads: tuple[tuple[int, int], ...] = (), tokens: tuple[int, ...] = (),
            mode: str = "zero") -> Outcome:
    """:func:`run_outcome`, cached per model, photo, mask and change."""
    mask = _mask_np(subject)
    key = (_model_key(subject.model), pixels_digest(view), None if mask is None else mask.tobytes(), heads, tokens,
           mode if heads or tokens else "")
    return CACHE.get_or_compute(key, lambda: run_outcome(subject.model, view, mask, heads, tokens, mode))


def ablate(model: LoadedModel, image: ImageInput, heads: Sequence[Sequence[int]] = (),
           tokens: Sequence[TokenSpec] = (), mode: str = "zero", mask: np.ndarray | None = None,
           mask_ratio: float = MAE_RATIO, seed: int = 0) -> Ablation:
    """Remove heads and tokens from a ViT, DeiT, DINO(v2) or MAE and recompute its outputs.

    Args:
        model: a loaded model (:func:`vitviz.load_model`).
        image: anything :func:`vitviz.load_image` reads.
        heads: ``(layer, head)`` pairs, counted from 0.
        tokens: sequence positions, prefix names (``cls``, ``dist``, ``reg0``...), ``(row, col)``
            patches, or ``"high-norm"`` (the patch tokens the token-norms view marks on this photo).
        mode: ``zero`` (heads' outputs zeroed, tokens unread by every other token) or ``mean``
            (held at their mean over the example photos, cached per model; :mod:`vitviz.intervene.means`).
        mask, mask_ratio, seed: MAE only: the encoder's mask (default 75% hidden at random, seed 0).

    Returns:
        :class:`Ablation`, ``before`` and ``after`` side by side.

    Raises:
        ValueError: a model that cannot be ablated, a head or token out of range, a bad mode.
        ImageError: unreadable image.
    """
    check_mode(mode)
    subject = subject_of(model, mask, mask_ratio, seed)
    view = square_view(image, model.input_size)
    hs = check_heads(heads, subject.depth, subject.num_heads)
    before = outcome(subject, view)
    ts = resolve_tokens(subject, tokens, before.norms)
    after = outcome(subject, view, hs, ts, mode)
    lay = subject.layout
    return Ablation(model.name, subject.kind, hs, ts, tuple(lay.describe(i) for i in ts), mode,
                    class_names(model) if subject.kind == "classifier" else (), before, after,
                    bool(model.random_init))


@dataclass(frozen=True)
class HeadRanking:
    """Every head of some layers, removed one at a time, sorted by how much that moved the output.

    Attributes:
        model_name: registry name.
        kind: ``classifier``, ``mae`` or ``backbone``.
        mode: ``zero`` or ``mean``.
        measure: what ``effect`` measures, in words.
        target: the class whose probability is measured (classifiers), else ``""``.
        rows: ``(layer, head, effect)``, largest movement first (classifiers: by the size of the
            change; an MAE: the largest rise of the error first).
    """

    model_name: str
    kind: str
    mode: str
    measure: str
    target: str
    rows: tuple[tuple[int, int, float], ...]

    def top(self, k: int = 3) -> tuple[tuple[int, int, float], ...]:
        """The first ``k`` rows."""
        return self.rows[:k]


#: Head rankings, keyed by model, photo, mask, layers, mode and target.
RANKINGS: LRU[tuple, HeadRanking] = LRU(lambda: settings.get("VITVIZ_ATTENTION_CACHE") * 4, name="intervene.rankings")


def check_target(classes: Sequence[str], target: int | str | None) -> int | None:
    """A class given by index or name, as an index; None stays None.

    Raises:
        ValueError: an unknown class, naming a few valid ones.
    """
    if target is None or target == "":
        return None
    if isinstance(target, str) and not target.lstrip("-").isdigit():
        if target not in classes:
            raise ValueError(f"unknown class {target!r}; this model's classes include {', '.join(classes[:10])}")
        return list(classes).index(target)
    i = int(target)
    if not 0 <= i < len(classes):
        raise ValueError(f"class index must be 0..{len(classes) - 1}, got {target}")
    return i


def rank_heads(model: LoadedModel, image: ImageInput, layers: Sequence[int] | int | None = None, mode: str = "zero",
               target: int | str | None = None, mask: np.ndarray | None = None, mask_ratio: float = MAE_RATIO,
               seed: int = 0, progress: Callable[[float, str], None] | None = None) -> HeadRanking:
    """Remove each head of ``layers`` alone and rank the heads by how much that moves the output.

    Args:
        layers: a layer, several, or None for every layer (counted from 0).
        target: a classifier's class (index or name) whose probability is measured; default the plain answer.
        progress: called with ``(fraction done, message)`` after each head.
        Other arguments as :func:`ablate`.

    Returns:
        :class:`HeadRanking` (cached per model, photo, mask, layers, mode and target).
    """
    check_mode(mode)
    subject = subject_of(model, mask, mask_ratio, seed)
    all_layers = range(subject.depth)
    chosen = tuple(all_layers) if layers is None else ((layers,) if isinstance(layers, int) else tuple(layers))
    check_heads([(layer, 0) for layer in chosen], subject.depth, subject.num_heads)
    view = square_view(image, model.input_size)
    classes = class_names(model) if subject.kind == "classifier" else ()
    t = check_target(classes, target) if classes else None
    m = _mask_np(subject)
    key = (_model_key(model), pixels_digest(view), None if m is None else m.tobytes(), chosen, mode, t)

    computed: list[bool] = []

    def compute() -> HeadRanking:
        computed.append(True)
        base = outcome(subject, view)
        tgt = int(np.argmax(base.probs)) if subject.kind == "classifier" and t is None else t
        pairs = [(layer, h) for layer in chosen for h in range(subject.num_heads)]
        rows = []
        for n, (layer, h) in enumerate(pairs):
            pause_point()
            after = run_outcome(model, view, m, ((layer, h),), (), mode, capture=False)
            rows.append((layer, h, _effect(subject.kind, base, after, tgt)))
            if progress is not None:
                progress((n + 1) / len(pairs), f"layer {layer} head {h}")
        if subject.kind == "classifier":
            rows.sort(key=lambda r: -abs(r[2]))
            measure = "change of the probability of the target class"
        elif subject.kind == "mae":
            rows.sort(key=lambda r: -r[2])
            measure = "rise of the hidden-patch error (MSE, RGB in [0, 1])"
        else:
            rows.sort(key=lambda r: -r[2])
            measure = "cosine distance of the class-token feature"
        return HeadRanking(model.name, subject.kind, mode, measure, classes[tgt] if tgt is not None else "",
                           tuple(rows))

    ranking = RANKINGS.get_or_compute(key, compute)
    if progress is not None and not computed:  # from the cache: a progress bar still ends
        progress(1.0, "done")
    return ranking
