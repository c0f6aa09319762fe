"""Deletion and insertion curves: is an explanation map faithful to the model?

Petsiuk, Das & Saenko, "RISE: Randomized Input Sampling for Explanation of Black-box
Models", BMVC 2018, section 4. Rank the patches by a map, most important first.
*Deletion* removes them in that order and tracks the class probability: a faithful map
makes it fall fast (low area under the curve). *Insertion* starts from the empty input
and adds them in that order: a faithful map makes it rise fast (high area).

Two ways to remove a patch:

- ``drop``: leave its token out of the sequence. A ViT runs on any number of tokens
  (as MAE's encoder does on the visible ones): the prefix tokens and the kept patch
  tokens, each with its own position embedding, nothing else. Nothing is painted, but a
  shorter sequence is off-distribution too: supervised ViTs were trained on full
  sequences only (only MAE's encoder saw subsets). The empty input is the prefix tokens
  alone.
- ``grey``: fill its pixels with the normalisation mean (0 after normalising), RISE's
  and most papers' choice. The sequence keeps its length; grey squares are an input the
  model never saw in training (a distribution shift the curve also measures).

Both are computed on tokens: the patch embedding is linear per patch, so a grey patch's
token is the embedding of a zero patch, and the encoder runs once per *distinct* set of
kept patches, batched (sets shared by several maps, such as the full and the empty
input, run once; ``drop`` batches sets of equal size together).

The baseline: the same curves along ``R`` random orders of the patches (seeded), what a map
that knows nothing gives. A random order's insertion curve runs along the *reverse* of the order
its deletion curve uses: the first ``k`` patches of the reversed order are the last ``k`` of the
order, exactly the patches its deletion keeps after removing ``P - k``. So the baseline's
insertion inputs are its deletion inputs and run once (half the baseline's forward passes), and
each curve is still that of a uniformly random order (the reverse of one is one too). Where the
points are symmetric (:func:`step_counts`: any even ``P``), the insertion curve is the deletion
curve read from the other end and the two areas of each order are equal: a random order's
insertion minus deletion area is 0, the chance level a map's difference is read against.

Precision: the curves may run in bfloat16 (``precision="bf16"``, a bf16 copy of the model,
:func:`vitviz.models.kernels.bf16_copy`); the app does so on a CPU that multiplies bf16 in
hardware (:func:`vitviz.models.precision.curve_precision`), where it is 2.6-3.4x faster. Its
error against fp32, measured on dinov2-small-lab8 over the four example photos and their
mirror images, both removals, 8 steps (``python bench/explain.py --precision``): areas
differ by at most :data:`BF16_AUC_TOLERANCE`, single points of a curve by at most 0.06.

Shapes: ``P`` patches, ``S`` steps (``S + 1`` points per curve), ``D`` channels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..core.images import ImageInput, model_input
from ..core.pos_embed import PositionEmbeddings
from ..embedding.sequence import encode, patch_tokens, position_embeddings
from ..models.kernels import bf16_copy
from ..models.loading import LoadedModel
from .methods import Explanation, check_classifier, explain_maps
from ..models.runner import runs_model

#: How a patch is removed: its token left out, or its pixels greyed.
REMOVALS: tuple[str, ...] = ("drop", "grey")
REMOVAL_NAMES: dict[str, str] = {"drop": "drop the token", "grey": "grey the patch"}
#: Default and largest number of steps of a curve.
DEFAULT_STEPS = 8
#: Sequences run through the encoder at once.
BATCH = 16
#: Random patch orders averaged into the baseline curves (what an uninformative map gives).
RANDOM_ORDERS = 3
#: Seed of the random orders (the same orders for every map, class and step count of an image).
RANDOM_SEED = 0
#: Arithmetic of the curves' forward passes.
PRECISIONS: tuple[str, ...] = ("fp32", "bf16")
#: Largest difference of an area under a curve between bf16 and fp32 measured (module docstring), rounded up.
BF16_AUC_TOLERANCE = 0.02


def check_precision(precision: str) -> str:
    """Validate a curve precision (``fp32`` or ``bf16``)."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    return precision


def random_orders(num_patches: int, n: int = RANDOM_ORDERS, seed: int = RANDOM_SEED) -> np.ndarray:
    """``n`` random orders of the patches, the baseline a map must beat.

    Returns:
        ``(n, P)`` int64, each row a permutation of ``0..P-1`` (``np.random.default_rng(seed)``).
    """
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(num_patches) for _ in range(int(n))]) if n > 0 else \
        np.empty((0, num_patches), np.int64)


def check_removal(removal: str) -> str:
    """Validate a removal mode (``drop`` or ``grey``)."""
    if removal not in REMOVALS:
        raise ValueError(f"unknown removal {removal!r}; choose one of {', '.join(REMOVALS)}")
    return removal


def step_counts(num_patches: int, steps: int) -> np.ndarray:
    """Patches removed (or inserted) at each point: ``round(linspace(0, P, S + 1))``.

    Returns:
        ``(S + 1,)`` int64, strictly increasing from 0 to ``P``; symmetric
        (``P - counts[::-1] == counts``) for an even ``P``, such as every Explain model's 196 or 256
        (rounding half to even), so a curve read from the other end has the same points.

    Raises:
        ValueError: ``steps`` not a whole number in ``1..P``.
    """
    try:
        s = int(steps)
    except (TypeError, ValueError):
        raise ValueError(f"steps must be a whole number, got {steps!r}") from None
    if s != steps or not 1 <= s <= num_patches:
        raise ValueError(f"steps must be a whole number in 1..{num_patches}, got {steps!r}")
    return np.round(np.linspace(0, num_patches, s + 1)).astype(np.int64)


def kept_patches(order: np.ndarray, counts: np.ndarray, curve: str) -> np.ndarray:
    """Which patches are present at each point of a curve.

    Args:
        order: ``(P,)`` patch indices, most important first.
        counts: ``(S + 1,)`` patches removed (deletion) or inserted (insertion).
        curve: ``deletion`` or ``insertion``.

    Returns:
        ``(S + 1, P)`` bool, True = present.
    """
    p = order.shape[0]
    rank = np.empty(p, dtype=np.int64)
    rank[order] = np.arange(p)
    first = rank[None, :] < counts[:, None]  # among the first ``count`` of the order
    if curve == "deletion":
        return ~first
    if curve == "insertion":
        return first
    raise ValueError(f"curve must be deletion or insertion, got {curve!r}")


def _subset_positions(pos: PositionEmbeddings, keep: torch.Tensor) -> PositionEmbeddings:
    """The position embeddings of the prefix tokens and of the kept patches ``(N, K)``.

    ``full`` becomes ``(N, k + K, D)``: one row of positions per sequence, which
    :func:`vitviz.embedding.sequence.encode` adds to that sequence.
    """
    n = keep.shape[0]
    patches = pos.patches[keep]  # (N, K, D)
    prefix = pos.full[:, :pos.num_prefix].expand(n, -1, -1)
    return PositionEmbeddings(torch.cat([prefix, patches], dim=1), pos.grid, pos.num_prefix)


@torch.inference_mode()
def class_softmax(module: nn.Module, x: torch.Tensor, present: np.ndarray, removal: str = "drop",
                  batch: int = BATCH) -> np.ndarray:
    """The softmax over every class of a ViT classifier with only some patches present.

    Args:
        module: a timm ViT classifier (eval mode), fp32 or a bf16 copy (:func:`vitviz.models.kernels.bf16_copy`).
        x: ``(1, 3, S, S)`` normalised image (cast to the module's dtype here).
        present: ``(N, P)`` bool, True = the patch is there.
        removal: ``drop`` (absent tokens left out) or ``grey`` (absent patches filled
            with the normalisation mean).
        batch: sequences per encoder call.

    Returns:
        ``(N, C)`` float32 probabilities. A row does not depend on the other rows of the
        call (each sequence's numbers are its own; ``tests/explain/test_faithfulness.py``
        checks it), so rows can be kept and reused across calls.
    """
    check_removal(removal)
    mask = np.asarray(present, dtype=bool)
    x = x.to(module.patch_embed.proj.weight.dtype)
    tokens = patch_tokens(module, x)[0]  # (P, D)
    if mask.ndim != 2 or mask.shape[1] != tokens.shape[0]:
        raise ValueError(f"present must be (N, {tokens.shape[0]}), got {mask.shape}")
    pos = position_embeddings(module)
    out: np.ndarray | None = None
    if removal == "grey":
        grey = patch_tokens(module, torch.zeros_like(x))[0]  # the token of a mean-filled patch
        groups = [np.arange(mask.shape[0])]
    else:
        sizes = mask.sum(axis=1)
        groups = [np.flatnonzero(sizes == s) for s in np.unique(sizes)]
    dev = tokens.device
    for group in groups:
        for start in range(0, len(group), batch):
            rows = group[start:start + batch]
            m = torch.from_numpy(mask[rows]).to(dev)
            if removal == "grey":
                seq = torch.where(m[..., None], tokens, grey)
                use = pos
            else:
                keep = m.nonzero()[:, 1].reshape(len(rows), -1)  # (n, K) kept patches, raster order
                seq, use = tokens[keep], _subset_positions(pos, keep)
            logits = module.forward_head(encode(module, seq, use)).float()
            probs = torch.softmax(logits, dim=-1).cpu().numpy()
            if out is None:
                out = np.empty((mask.shape[0], probs.shape[1]), dtype=np.float32)
            out[rows] = probs
    return out if out is not None else np.empty((0, int(module.num_classes)), dtype=np.float32)


def class_probabilities(module: nn.Module, x: torch.Tensor, present: np.ndarray, target: int,
                        removal: str = "drop", batch: int = BATCH) -> np.ndarray:
    """The class probability of a ViT classifier with only some patches present.

    Args:
        module, x, present, removal, batch: as for :func:`class_softmax`.
        target: class index.

    Returns:
        ``(N,)`` float64 softmax probability of ``target``.
    """
    return class_softmax(module, x, present, removal, batch)[:, target].astype(np.float64)


@dataclass(frozen=True, eq=False)
class Curves:
    """Deletion and insertion curves of several maps for one image, model and class.

    Attributes:
        counts: ``(S + 1,)`` patches removed (deletion) or inserted (insertion); the x-axis.
        num_patches: ``P``.
        deletion: method -> ``(S + 1,)`` class probability as patches are removed.
        insertion: method -> ``(S + 1,)`` class probability as patches are added.
        removal: ``drop`` or ``grey``.
        target: class index.
        random_deletion, random_insertion: ``(R, S + 1)`` the same curves for ``R`` random
            orders of the patches (:func:`random_orders`; ``R`` may be 0): the chance level an
            area is read against. Row ``r`` of the insertion curves runs along the reverse of
            order ``r`` (module docstring): for an even ``P``, row ``r`` of the deletion curves read backwards.
        precision: the forward passes' arithmetic, ``fp32`` or ``bf16`` (module docstring).
    """

    counts: np.ndarray
    num_patches: int
    deletion: dict[str, np.ndarray]
    insertion: dict[str, np.ndarray]
    removal: str
    target: int
    random_deletion: np.ndarray | None = None
    random_insertion: np.ndarray | None = None
    precision: str = "fp32"

    @property
    def fractions(self) -> np.ndarray:
        """``(S + 1,)`` share of the patches removed / inserted, 0..1."""
        return self.counts / float(self.num_patches)

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods, in order."""
        return tuple(self.deletion)

    def auc(self) -> dict[str, tuple[float, float]]:
        """Method -> ``(deletion AUC, insertion AUC)``: trapezoids over the share of patches, 0..1.

        Lower deletion and higher insertion mean a more faithful map.
        """
        x = self.fractions
        return {m: (float(np.trapezoid(self.deletion[m], x)), float(np.trapezoid(self.insertion[m], x)))
                for m in self.methods}

    @property
    def random_count(self) -> int:
        """Random orders behind the baseline (0: none computed)."""
        return 0 if self.random_deletion is None else int(self.random_deletion.shape[0])

    def random_auc(self) -> tuple[float, float, float, float] | None:
        """The random orders' areas: ``(deletion mean, deletion std, insertion mean, insertion std)``
        over the orders, or None without a baseline."""
        if not self.random_count:
            return None
        x = self.fractions
        d = np.trapezoid(self.random_deletion, x, axis=1)
        i = np.trapezoid(self.random_insertion, x, axis=1)
        return float(d.mean()), float(d.std()), float(i.mean()), float(i.std())


def curves_for(module: nn.Module, x: torch.Tensor, rankings: dict[str, np.ndarray], target: int,
               removal: str = "drop", steps: int = DEFAULT_STEPS, batch: int = BATCH,
               known: dict[bytes, np.ndarray] | None = None, random: int = 0, precision: str = "fp32") -> Curves:
    """Deletion and insertion curves of every ranking, each distinct input run once.

    Args:
        module: a timm ViT classifier (eval mode).
        x: ``(1, 3, S, S)`` normalised image.
        rankings: method -> ``(P,)`` patch indices, most important first.
        target: class index.
        removal: ``drop`` or ``grey``.
        steps: points per curve minus one (``1..P``).
        known: softmax rows already computed for this module, image and removal, by
            ``np.packbits(present).tobytes()``; rows found there are not run again, and
            the rows this call runs are added to it. Curves of another class, method or
            number of steps share many inputs (the full and the empty one, the
            class-independent maps' orders), so a caller keeping this dict per image and
            removal runs each distinct input once. The curves are the same numbers as
            without it.
        random: also this many random orders (:func:`random_orders`), the baseline (insertion
            along each order's reverse, module docstring).
        precision: ``bf16`` runs the inputs on :func:`vitviz.models.kernels.bf16_copy` of ``module``
            (``known`` must then hold bf16 rows only).
    """
    check_removal(removal)
    if check_precision(precision) == "bf16":
        module = bf16_copy(module)
    p = int(next(iter(rankings.values())).shape[0])
    counts = step_counts(p, steps)
    # key -> (deletion order, insertion order): a map's ranking for both; a random order's insertion runs
    # along its reverse (module docstring), so it reuses that order's deletion inputs
    orders: dict[Any, tuple[np.ndarray, np.ndarray]] = {m: (np.asarray(o), np.asarray(o)) for m, o in rankings.items()}
    baseline = [("random", i) for i in range(int(random))]
    orders.update((b, (o, o[::-1])) for b, o in zip(baseline, random_orders(p, int(random))))
    sets = {(m, c): kept_patches(pair[c == "insertion"], counts, c) for m, pair in orders.items()
            for c in ("deletion", "insertion")}
    rows = {} if known is None else known
    missing: dict[bytes, np.ndarray] = {}
    for present in sets.values():
        for row in present:
            key = np.packbits(row).tobytes()
            if key not in rows and key not in missing:
                missing[key] = row
    if missing:
        probs = class_softmax(module, x, np.stack(list(missing.values())), removal, batch)
        for key, row_probs in zip(missing, probs):
            row_probs.setflags(write=False)
            rows[key] = row_probs
    curve = {k: np.array([float(rows[np.packbits(r).tobytes()][target]) for r in v]) for k, v in sets.items()}
    for v in curve.values():
        v.setflags(write=False)
    counts.setflags(write=False)
    rand = {c: np.array([curve[(r, c)] for r in baseline]).reshape(len(baseline), len(counts))
            for c in ("deletion", "insertion")} if baseline else {"deletion": None, "insertion": None}
    return Curves(counts, p, {m: curve[(m, "deletion")] for m in rankings},
                  {m: curve[(m, "insertion")] for m in rankings}, removal, target, rand["deletion"],
                  rand["insertion"], precision)


@runs_model
def faithfulness(model: LoadedModel, image: ImageInput, target: int | str | None = None,
                 methods: Sequence[str] | str | None = None, removal: str = "drop", steps: int = DEFAULT_STEPS,
                 explanation: Explanation | None = None, known: dict[bytes, np.ndarray] | None = None,
                 random: int = RANDOM_ORDERS, precision: str = "fp32") -> Curves:
    """Deletion and insertion curves of the explanation maps of one image and class, and of
    ``random`` random orders of the patches (the baseline an area is read against).

    Args:
        model: a ViT classifier (see :func:`vitviz.explain.methods.explain_maps`).
        image: anything :func:`vitviz.load_image` reads, or an ``(S, S, 3)`` uint8 view.
        target: class index or the model's class name (see :func:`~vitviz.explain.methods.explain_maps`);
            None = the predicted class.
        methods: method ids (default all four).
        removal: ``drop`` (leave tokens out) or ``grey`` (fill patches with the mean).
        steps: points per curve minus one.
        explanation: maps already computed for this model and image (skips that pass).
        known: softmax rows of earlier calls for this model, image and removal (see
            :func:`curves_for`); rows found there are not run again.
        random: random orders of the baseline (:data:`RANDOM_ORDERS`; 0 = none).
        precision: ``fp32`` or ``bf16`` (module docstring; ``known`` must hold rows of that precision).

    Raises:
        ValueError: not a classifier, unknown method, class, removal, steps or precision.
    """
    module = check_classifier(model.module, model.name)
    check_removal(removal)
    check_precision(precision)
    e = explanation if explanation is not None else explain_maps(model, image, target, methods)
    x = model_input(e.image, model.data_config, model.device)
    wanted = [m for m in e.maps if methods is None or m in ((methods,) if isinstance(methods, str) else methods)]
    return curves_for(module, x, {m: e.ranking(m) for m in wanted}, e.target, removal, steps, known=known,
                      random=random, precision=precision)
