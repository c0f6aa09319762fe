"""Check 2, targets: plain pixels or per-patch normalised pixels (``norm_pix_loss``).

What the file says (its args, its config) is set against which target space the decoder's raw
output fits (:attr:`vitviz.doctor.measure.Measures.loss_pixels` and ``loss_normed``): a flag that does
not fit its weights is named, and so is what de-normalising with the true patch statistics leaks.
"""

from __future__ import annotations

from . import sources as S
from .case import Case, fmt
from .measure import Measures


def target_space(m: Measures) -> str:
    """``pixels``, ``normalised`` or ``unclear``: which target space the decoder's output fits."""
    lp, ln, zp, zn = m.loss_pixels, m.loss_normed, m.zero_pixels, m.zero_normed
    if None in (lp, ln, zp, zn):
        return "unclear"
    if lp < S.TARGET_MARGIN * ln and lp < S.TARGET_MARGIN * zp:  # type: ignore[operator]
        return "pixels"
    if ln < S.TARGET_MARGIN * lp and ln < S.TARGET_MARGIN * zn:  # type: ignore[operator]
        return "normalised"
    return "unclear"


def check(case: Case, m: Measures) -> None:
    """Name the targets the checkpoint was trained on, and where its file and its outputs disagree."""
    model = case.model
    assert model is not None
    space = target_space(m)
    ev = (f"hidden-patch loss of the decoder's raw output at 75%: {fmt(m.loss_pixels, 3)} against the input pixels, "
          f"{fmt(m.loss_normed, 3)} against per-patch normalised pixels (predicting zeros scores "
          f"{fmt(m.zero_pixels, 3)} and {fmt(m.zero_normed, 3)})")
    said, src = case.norm_pix_said, case.norm_pix_from
    if said is None and case.facts is None:  # a registry model: the registry says
        said, src = model.norm_pix, "the registry"
    if said is True or (said is None and model.norm_pix):
        case.add("warning", "targets", "per-patch normalised targets (norm_pix_loss)",
                 f"{src} says it was trained with norm_pix_loss=True: its decoder predicts each patch normalised by its "
                 "own mean and variance, so it cannot draw colour or contrast. To draw it, vitviz de-normalises each "
                 "hidden patch with its true mean and variance, which leaks the answer: filling every hidden patch "
                 f"with its true mean colour alone scores {fmt(m.leak75)} hidden-patch error here, the model "
                 f"{fmt(m.mse75)}.", evidence=ev,
                 expected=f"{S.LEAK_SOURCE}; {S.NORM_PIX_SOURCE}",
                 action=("judge its pictures by structure, not colour; for honest pictures use a pixel-target "
                         "checkpoint (mae_visualize_vit_*.pth)"))
        if space == "pixels":
            case.add("warning", "targets", "the outputs look like plain pixels",
                     f"{src} says norm_pix_loss=True, but the decoder's output fits plain pixels far better than "
                     "per-patch normalised ones: the flag may be wrong for these weights, and then the pictures are "
                     "pixel predictions rescaled by each hidden patch's true statistics.", evidence=ev,
                     action="check which run these weights come from; if it trained on pixels, save norm_pix_loss=False")
        return
    if space == "normalised":
        case.add("warning", "targets", "the outputs look per-patch normalised",
                 ("nothing in the file says norm_pix_loss" if said is None else f"{src} says norm_pix_loss=False") +
                 ", but the decoder's output fits per-patch normalised pixels far better than plain ones: drawn as "
                 "pixels it looks like grey, low-contrast noise (the 'colourful noise' of "
                 "facebookresearch/mae#95).", evidence=ev,
                 action=("if it was trained with --norm_pix_loss, save that in the checkpoint's args "
                         "(args.norm_pix_loss=True) so that vitviz de-normalises it (and says what that leaks)"))
        return
    how = f"{src} says norm_pix_loss=False" if said is False else "nothing in the file says norm_pix_loss"
    if space == "pixels":
        case.add("ok", "targets", "plain pixel targets",
                 f"{how}, and the decoder's output fits plain pixels: the pictures are drawn as predicted.", evidence=ev)
    else:
        case.add("note", "targets", "targets unclear",
                 f"{how}; the decoder's output fits neither plain nor per-patch normalised pixels clearly (as random "
                 "weights do).", evidence=ev)

