"""The result of an attention capture: every layer's maps for one image, mask and part."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .layout import TokenLayout
from .rollout import mass_region, mean_attention_distance, rollout_matrix, uniform_distance


@dataclass(frozen=True, eq=False)
class AttentionMaps:
    """Every layer's attention for one image (and mask) through one model part.

    Arrays are read-only: results are cached and shared.

    Attributes:
        model_name: registry name of the model.
        part: ``encoder`` or ``decoder``.
        attentions: ``(L, H, T, T)`` float32 softmax weights; every row sums to 1.
        layout: which token is which (:class:`TokenLayout`).
        image: ``(S, S, 3)`` uint8, the model's view of the image.
        logits: ``(1000,)`` float32 ImageNet logits for classifiers, else None.
        random_init: True when the model's weights are random (maps show the
            architecture, not learned attention).
    """

    model_name: str
    part: str
    attentions: np.ndarray
    layout: TokenLayout
    image: np.ndarray
    logits: np.ndarray | None = None
    random_init: bool = False

    @property
    def depth(self) -> int:
        """Number of layers ``L``."""
        return int(self.attentions.shape[0])

    @property
    def num_heads(self) -> int:
        """Number of heads ``H``."""
        return int(self.attentions.shape[1])

    @property
    def num_tokens(self) -> int:
        """Sequence length ``T``."""
        return int(self.attentions.shape[-1])

    def check_layer(self, layer: int) -> int:
        """Validate a 0-based layer index (negative counts from the end)."""
        try:
            i = int(layer)
        except (TypeError, ValueError):
            raise ValueError(f"layer must be an integer, got {layer!r}") from None
        if not -self.depth <= i < self.depth:
            raise ValueError(f"layer must be 0..{self.depth - 1} (this {self.part} has {self.depth}), got {layer}")
        return i % self.depth

    def layer(self, layer: int) -> np.ndarray:
        """``(H, T, T)`` attention of one layer (0-based; -1 = last)."""
        return self.attentions[self.check_layer(layer)]

    def query(self, layer: int, token: int | str | tuple[int, int]) -> np.ndarray:
        """One token's attention over the image, per head.

        Args:
            layer: 0-based layer (-1 = last).
            token: ``cls``, ``dist``, a grid ``(row, col)`` or a sequence index.

        Returns:
            ``(H, gh, gw)`` float32 weights on the patch keys; NaN where no token is
            (hidden patches). They sum to less than 1 by the weight on prefix tokens
            (:meth:`prefix_share`).
        """
        i = self.layout.resolve(token)
        row = self.layer(layer)[:, i, self.layout.num_prefix:]
        return self.layout.scatter(row).astype(np.float32)

    def query_mean(self, layer: int, token: int | str | tuple[int, int]) -> np.ndarray:
        """:meth:`query` averaged over heads: ``(gh, gw)`` float32, NaN where no token is."""
        i = self.layout.resolve(token)
        row = self.layer(layer)[:, i, self.layout.num_prefix:].mean(axis=0)
        return self.layout.scatter(row).astype(np.float32)

    def prefix_share(self, layer: int, token: int | str | tuple[int, int]) -> dict[str, np.ndarray]:
        """Weight a token gives to each prefix token: ``{name: (H,) float}``."""
        i = self.layout.resolve(token)
        a = self.layer(layer)
        return {name: a[:, i, j].astype(np.float64) for j, name in enumerate(self.layout.prefix)}

    def prefix_share_mean(self, layer: int, token: int | str | tuple[int, int]) -> dict[str, float]:
        """:meth:`prefix_share` averaged over heads: ``{name: float}``."""
        return {name: float(v.mean()) for name, v in self.prefix_share(layer, token).items()}

    def mass_regions(self, layer: int, token: int | str | tuple[int, int], keep: float = 0.6) -> np.ndarray:
        """Per head, the patches holding ``keep`` of the token's patch attention (:func:`mass_region`).

        Returns:
            ``(H, gh, gw)`` bool.
        """
        return np.stack([mass_region(h, keep) for h in self.query(layer, token)])

    def rollout_matrix(self, head_fusion: str = "mean", discard_ratio: float = 0.0) -> np.ndarray:
        """``(T, T)`` rollout through every layer (see :func:`rollout_matrix`)."""
        return rollout_matrix(self.attentions, head_fusion, discard_ratio)

    def rollout(self, head_fusion: str = "mean", discard_ratio: float = 0.0,
                token: int | str | tuple[int, int] = "cls") -> np.ndarray:
        """Attention rollout of one output token over the image patches.

        The token's row of :func:`rollout_matrix`, restricted to the patch tokens and
        renormalised to sum 1 (the share that flows from prefix tokens is dropped).

        Args:
            head_fusion: ``mean``, ``max`` or ``min``.
            discard_ratio: share of the weakest off-diagonal entries of each row zeroed
                per layer, in [0, 0.99] (see :func:`discard_lowest`).
            token: whose rollout; default the class token.

        Returns:
            ``(gh, gw)`` float64 summing to 1; 0 at hidden patches.
        """
        i = self.layout.resolve(token)
        row = self.rollout_matrix(head_fusion, discard_ratio)[i, self.layout.num_prefix:]
        total = row.sum()
        row = row / total if total > 0 else np.full_like(row, 1.0 / max(row.size, 1))
        return self.layout.scatter(row, fill=0.0).astype(np.float64)

    def rollout_summary(self, rollout: np.ndarray, top: float = 0.1) -> dict[str, float]:
        """How concentrated a rollout map is.

        Args:
            rollout: ``(gh, gw)`` from :meth:`rollout`.
            top: share of the patch tokens counted in ``top_share``.

        Returns:
            ``sum`` (1 up to rounding), ``max_share`` (the strongest patch), ``top_share``
            (the strongest ``top`` of the patch tokens) and ``uniform_top_share`` (what
            ``top_share`` would be under a uniform map).
        """
        r = np.asarray(rollout, dtype=np.float64)
        n = max(1, self.layout.num_patches)
        k = max(1, int(round(top * n)))
        flat = np.sort(r.reshape(-1))[::-1]
        return {"sum": float(r.sum()), "max_share": float(flat[0]), "top_share": float(flat[:k].sum()),
                "uniform_top_share": k / n}

    def mean_distance(self) -> np.ndarray:
        """``(L, H)`` mean attention distance in input pixels (see :func:`mean_attention_distance`)."""
        return mean_attention_distance(self.attentions, self.layout)

    def uniform_distance(self) -> float:
        """Mean distance in pixels under uniform attention over this sequence's patches."""
        return uniform_distance(self.layout)

    def top_k(self, k: int = 5) -> list[tuple[str, float]]:
        """Top-``k`` ImageNet-1k labels with probabilities; ``[]`` for models without a classifier."""
        if self.logits is None:
            return []
        from .labels import top_k

        return top_k(self.logits, k)
