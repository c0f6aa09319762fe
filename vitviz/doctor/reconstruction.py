"""Check 4, does it reconstruct: hidden-patch error against the visible-ring baseline, the random twin and mae-tiny.

A checkpoint that does no better than filling each hidden patch with its visible ring's mean colour,
or than its own architecture with random weights, is named a problem; the ratio where its error
turns up is set beside mae-tiny's. :func:`panels` gives the pictures the report shows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import sources as S
from .case import Case, fmt
from .measure import Measures


@dataclass(frozen=True)
class Rival:
    """A reconstruction the checkpoint must beat, and how the finding reads either way.

    Attributes:
        share: the checkpoint must score below ``share`` × the rival's hidden-patch error.
        worse: the problem's title when it does not.
        than: the rival in words ("It reconstructs no better than ``than`` (a vs b): ``verdict``.").
        verdict: what losing to it says about the weights.
        action: what to do when it loses.
        better: the title when it wins.
        gain: how much it wins by, formatted with ``below`` (percent below the rival) and ``times``
            (the rival's error over the checkpoint's).
    """

    share: float
    worse: str
    than: str
    verdict: str
    action: str
    better: str
    gain: str


#: Filling each hidden patch with the mean colour of its nearest visible ring (:mod:`vitviz.mae.baseline`).
RING = Rival(S.BASELINE_SHARE, "no better than blurring the visible patches",
             "filling each hidden patch with the mean colour of the nearest visible ring",
             "untrained, or the wrong targets",
             "check the findings above (decoder, targets, position tables); else train longer",
             "beats the visible-ring baseline", "{below:.0f}% below the visible-ring baseline's")
#: The same architecture with seeded random weights (:func:`vitviz.doctor.measure.random_twin`).
TWIN = Rival(S.TWIN_SHARE, "no better than its random-weight twin", "the same architecture with random weights",
             "these weights look untrained",
             "check that the file is the trained checkpoint (its epoch, its size), not the initial one",
             "beats its random-weight twin", "{times:.1f}× lower than its random twin's")


def _compare(case: Case, mse: float, other: float, rival: Rival, ev: str, exp: str) -> None:
    """One finding: a problem when the hidden-patch error ``mse`` is not below ``rival.share`` × ``other``."""
    pair = f"({fmt(mse)} vs {fmt(other)})"
    if mse >= rival.share * other:
        case.add("problem", "reconstruction", rival.worse, f"It reconstructs no better than {rival.than} {pair}: "
                 f"{rival.verdict}.", evidence=ev, expected=exp, action=rival.action)
    else:  # other > mse / share >= 0
        gain = rival.gain.format(below=100 * (1 - mse / other), times=other / max(mse, 1e-12))
        case.add("ok", "reconstruction", rival.better, f"Its hidden-patch error is {gain} {pair}.", evidence=ev,
                 expected=exp)


def check(case: Case, m: Measures, twin: Measures, ref: Measures) -> None:
    """Set the checkpoint's hidden-patch error (``m``) against the ring baseline, ``twin`` and ``ref`` (mae-tiny)."""
    if m.mse75 is None:
        return
    exp = (f"mae-tiny: {fmt(ref.mse75)} ({S.MEASURED}); the ring baseline: {fmt(m.ring75)}; random twin: "
           f"{fmt(twin.mse75)} ({S.TWIN})")
    ev = (f"hidden-patch error at 75% (RGB in [0, 1], mean over {len(m.photos)} example photo"
          f"{'s' if len(m.photos) != 1 else ''}: {', '.join(m.photos)}): {fmt(m.mse75)}")
    _compare(case, m.mse75, m.ring75 or 0.0, RING, ev, exp)
    if not case.model or case.model.random_init:
        return
    _compare(case, m.mse75, twin.mse75 or 0.0, TWIN, ev, exp)
    knee = "never rises by that much up to 95%" if m.knee is None else f"turns up at {m.knee:.0%}"
    rknee = "never" if ref.knee is None else f"{ref.knee:.0%}"
    case.add("note", "reconstruction", "where the error turns up",
             f"Its hidden-patch error {knee} (first ratio with {S.KNEE_RISE:g}× the error at "
             f"{min(m.curve):.0%}); mae-tiny's turns up at {rknee}.",
             evidence="error by ratio: " + ", ".join(f"{r:.0%} {v:.4f}" for r, v in m.curve.items()),
             expected="mae-tiny: " + ", ".join(f"{r:.0%} {v:.4f}" for r, v in ref.curve.items()) + f" ({S.MEASURED}); "
                      f"reference ratio 75%: {S.MASK_RATIO_SOURCE}")


def panels(m: Measures, ref: Measures) -> dict[str, np.ndarray]:
    """The report's pictures: uint8 (H, W, 3) by caption; mae-tiny's under the same mask where the grids match."""
    if not m.panels:
        return {}
    out = {"masked": m.panels["masked"], "ring baseline": m.panels["ring"], "this checkpoint": m.panels["reconstruction"]}
    if ref.panels and ref.panels["original"].shape == m.panels["original"].shape and ref.mask is not None \
            and m.mask is not None and np.array_equal(ref.mask, m.mask):
        out["mae-tiny, same mask"] = ref.panels["reconstruction"]
    elif ref.panels:
        out["mae-tiny (its own grid)"] = ref.panels["reconstruction"]
    return out
