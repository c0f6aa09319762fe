"""Check 5, what training left: attention distance and entropy by depth, near-uniform and sink heads,
high-norm tokens, each against mae-tiny and the model's random-weight twin.

Attention as near-uniform as the random twin's in every layer says the weights are untrained.
"""

from __future__ import annotations

from . import sources as S
from .case import Case, fmt, row
from .measure import Measures


def check(case: Case, m: Measures, twin: Measures, ref: Measures) -> None:
    """Set the checkpoint's attention statistics (``m``) against ``twin`` and ``ref`` (mae-tiny)."""
    if not m.distance:
        return
    random_like = (m.entropy_mean is not None and twin.entropy_mean is not None and not m.random_init
                   and m.entropy_mean >= twin.entropy_mean - 0.005 and min(m.distance) >= 0.97)
    ev = (f"attention distance by depth, as a share of uniform attention's: {row(m.distance)}; entropy by depth: "
          f"{row(m.entropy)}")
    exp = (f"mae-tiny: distance {row(ref.distance)}, entropy {row(ref.entropy)} ({S.MEASURED}); random twin: "
           f"distance {row(twin.distance)}, entropy {row(twin.entropy)} ({S.TWIN})")
    if random_like:
        case.add("problem", "training", "attention looks untrained",
                 "Every layer attends almost uniformly, as its random-weight twin does: training left no structure in "
                 "the attention.", evidence=ev, expected=exp,
                 action="check that these are the trained weights")
    else:
        local = sum(d < 0.9 for d in m.distance)
        case.add("ok", "training", "attention has structure",
                 f"Attention is more local than uniform in {local} of {len(m.distance)} layers; its mean entropy is "
                 f"{fmt(m.entropy_mean, 3)} (random twin {fmt(twin.entropy_mean, 3)}, mae-tiny "
                 f"{fmt(ref.entropy_mean, 3)}).", evidence=ev, expected=exp)
    case.add("note", "training", "near-uniform and sink heads",
             f"{100 * (m.dead_share or 0):.0f}% of heads are near-uniform (entropy ≥ {S.DEAD_ENTROPY}) and "
             f"{100 * (m.sink_share or 0):.0f}% park their attention on the class token; mae-tiny: "
             f"{100 * (ref.dead_share or 0):.0f}% and {100 * (ref.sink_share or 0):.0f}%, random twin: "
             f"{100 * (twin.dead_share or 0):.0f}% and {100 * (twin.sink_share or 0):.0f}%.",
             expected=f"{S.MEASURED}; {S.TWIN}")
    case.add("note", "training", "high-norm tokens",
             f"{100 * (m.outlier_share or 0):.1f}% of block-output patch tokens are high-norm outliers; the largest "
             f"patch norm is {fmt(m.max_norm_ratio, 1)}× its layer's median (mae-tiny: "
             f"{100 * (ref.outlier_share or 0):.1f}%, {fmt(ref.max_norm_ratio, 1)}×).",
             expected=f"{S.MEASURED}; {S.REGISTERS_SOURCE}")
