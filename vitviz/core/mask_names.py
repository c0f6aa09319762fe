"""The names and limits of the mask patterns, without torch or numpy.

:mod:`vitviz.core.masking` builds the masks and re-exports these; they live here so that
the command line can offer ``--pattern`` choices (and ``--help``) without importing torch.
"""

from __future__ import annotations

PATTERNS: tuple[str, ...] = ("random", "block", "grid")
#: Patterns whose masks, for one seed, are nested across ratios (a higher ratio hides a
#: superset). ``grid`` is redrawn at every ratio. Tests check this claim for every pattern.
NESTED_PATTERNS: tuple[str, ...] = ("random", "block")
#: Largest masking ratio.
MAX_RATIO = 0.95
