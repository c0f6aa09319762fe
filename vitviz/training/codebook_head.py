"""A training-time head for ``beit-tiny`` tied to vq-tiny's codebook (folds into a linear head).

BEiT's head is a linear map from a feature ``h`` (D) to logits over the codebook (V).
Trained from scratch, that map has to discover the codebook's geometry from hard labels
alone: a near miss (a code that decodes to almost the same patch) costs as much as a
far one. This head builds the geometry in. It predicts a point ``z = W h + b`` in the
tokenizer's code space (``code_dim``) and scores each code by the negative squared
distance, scaled by a learned temperature::

    logit_k = s * (2 z . e_k - |e_k|^2)          (= -s |z - e_k|^2 + s |z|^2)

The dropped ``s |z|^2`` is the same for every code of a position, so softmax and argmax
are those of the distance. Because the expression is linear in ``h``, the head folds
exactly into BEiT's ``lm_head`` (``weight = 2 s E W``, ``bias = s (2 E b - |e|^2)``):
the exported file has the usual format and loads into the usual module.
"""

from __future__ import annotations

import torch
from torch import nn


class CodebookHead(nn.Module):
    """Logits over a frozen codebook from a learned projection into its space.

    Args:
        dim: feature width D of the encoder.
        codebook: ``(V, C)`` code vectors of the tokenizer (copied, frozen).
    """

    def __init__(self, dim: int, codebook: torch.Tensor) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, codebook.shape[1])
        self.register_buffer("codebook", codebook.detach().clone().float())  # (V, C)
        # |z - e|^2 of typical codes is of the order of the codebook's spread: start at a temperature
        # that makes one spread worth a few nats
        spread = float(codebook.float().var(0).sum())
        self.log_scale = nn.Parameter(torch.tensor(float(-torch.log(torch.tensor(max(spread, 1e-6)) / 4.0))))
        nn.init.trunc_normal_(self.proj.weight, std=0.02)
        nn.init.zeros_(self.proj.bias)

    def point(self, h: torch.Tensor) -> torch.Tensor:
        """``(..., D)`` features -> ``(..., C)`` predicted points in code space."""
        return self.proj(h)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """``(..., D)`` features -> ``(..., V)`` logits."""
        e = self.codebook
        s = self.log_scale.exp()
        return s * (2.0 * self.proj(h) @ e.t() - e.pow(2).sum(1))

    @torch.no_grad()
    def folded(self) -> nn.Linear:
        """The same logits (up to a per-position constant) as one ``nn.Linear(D, V)``."""
        e, s = self.codebook, self.log_scale.exp()
        lin = nn.Linear(self.proj.in_features, e.shape[0])
        lin.weight.copy_(2.0 * s * e @ self.proj.weight)
        lin.bias.copy_(s * (2.0 * e @ self.proj.bias - e.pow(2).sum(1)))
        return lin
