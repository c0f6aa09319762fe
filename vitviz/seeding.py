"""The one place where vitviz seeds PyTorch's global RNG, and why it is safe.

timm and torch module constructors draw their initial weights from the global RNG
and take no generator argument. To build a random-weight architecture that depends
only on a seed, :func:`isolated_seed` forks the RNG state, seeds the fork, and
restores the caller's state on exit; nothing outside the ``with`` block sees it.
Everything else in vitviz uses a ``torch.Generator`` per call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def isolated_seed(seed: int) -> Iterator[None]:
    """Seed the (forked, CPU) global RNG for the block; restore the caller's state after."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
