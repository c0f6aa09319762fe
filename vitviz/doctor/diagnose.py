"""``vitviz.diagnose``: read a checkpoint, run the checks in order, and report in sentences.

The checks, in the order they run (each adds :class:`~vitviz.doctor.report.Finding` objects):

1. **format and keys** (:mod:`vitviz.doctor.files`, :mod:`vitviz.models.layouts`): can the file be
   read safely, which layout, ``module.`` prefixes, EMA copies, nesting; is there a decoder; does it
   load strictly, and if not, which groups of tensors are missing or unexpected. Where the fix is
   unambiguous the file is read anyway and the report says so (a prefix removed; an encoder
   read without its decoder; MAE's fixed sin-cos table restored where a resampled one stands).
2. **targets**: pixels or per-patch normalised pixels, from the file and from the decoder's output.
3. **preprocessing**: input size, patch size, the position tables (MAE's sin-cos, resampled, or
   learned), mean/std.
4. **does it reconstruct**: hidden-patch error at 75% on the example photos against the
   visible-ring baseline, the model's random-weight twin and mae-tiny; the ratio where error turns up.
5. **what training left**: attention distance and entropy by depth, near-uniform and sink heads,
   high-norm tokens, each against mae-tiny and the random twin.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch

from .. import settings
from ..errors import ModelUnavailable
from ..models import local
from ..models.infer import found
from ..models.layouts import Checkpoint, read_local
from ..models.loading import LoadedModel, default_device, load_model, open_model
from ..models.mae import MaskedAutoencoderViT
from ..models.registry import local_spec, model_names
from . import sources as S
from .files import (FileFacts, PositionTable, args_summary, describe_keys, grid_of, inspect_file, is_number,
                    position_table)
from .measure import Measures, measure, reference
from .report import Diagnosis, Finding

NORM_PIX_UNSAID = "nothing says whether it was trained with norm_pix_loss"


@dataclasses.dataclass
class _Case:
    """What the checks learn as they go."""

    subject: str
    findings: list[Finding] = dataclasses.field(default_factory=list)
    layout: str = ""
    architecture: str = ""
    facts: FileFacts | None = None
    ck: Checkpoint | None = None
    la: object | None = None  # LocalArch
    model: LoadedModel | None = None
    twin: LoadedModel | None = None
    norm_pix_said: bool | None = None
    norm_pix_from: str = ""
    mae_expected: bool = False
    device: torch.device = torch.device("cpu")

    def add(self, severity: str, topic: str, title: str, sentence: str, evidence: str = "", action: str = "",
            expected: str = "") -> None:
        self.findings.append(Finding(severity, topic, title, sentence, evidence, action, expected))


def _fmt(x: float | None, digits: int = 4) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _row(values: list[float], digits: int = 2) -> str:
    return "[" + ", ".join(f"{v:.{digits}f}" for v in values) + "]"


# ----------------------------------------------------------------------------------------- 1. format and keys


def _format(case: _Case, path: Path) -> bool:
    """Read the file's facts; False when it cannot be read at all."""
    facts = case.facts = inspect_file(path)
    if facts.error is not None:
        titles = {"truncated": "the file is truncated", "missing": "no such file",
                  "pickle": "the file holds pickled objects vitviz will not run",
                  "layout": "no weights vitviz recognises", "unreadable": "the file cannot be read"}
        actions = {"truncated": "download or copy it again and compare its size or sha256 with the source's",
                   "missing": "check the path",
                   "pickle": ("save the weights alone: torch.save({'model': model.state_dict()}, path), or as "
                              "safetensors; vitviz never unpickles arbitrary objects (torch.load weights_only=True)"),
                   "layout": ("save the weights as a dict of tensors, or under 'model' / 'state_dict' as "
                              "facebookresearch/mae and timm do"),
                   "unreadable": "check that it is a .pth/.bin saved by torch.save or a .safetensors file"}
        case.add("problem", "format", titles.get(facts.error_kind, "the file cannot be read"),
                 f"vitviz cannot read {path.name}: {facts.error}.",
                 evidence=f"{facts.size:,} bytes" if facts.size else "", action=actions.get(facts.error_kind, ""))
        return False
    try:
        ck = case.ck = read_local(path)
    except ModelUnavailable as exc:
        case.add("problem", "format", "no layout fits", f"The file was read safely, but {exc}.",
                 action="see docs/doctor.md for the layouts vitviz reads")
        return False
    case.layout = ck.layout
    ev = [f"{facts.container}, {facts.size:,} bytes"]
    if facts.top_keys:
        ev.append(f"top-level keys {', '.join(facts.top_keys[:8])}")
    if facts.args is not None:
        ev.append(f"args: {args_summary(facts.args)} (an argparse.Namespace, read with torch.load(weights_only=True) "
                  "and argparse.Namespace allow-listed for that one call)")
    case.add("ok", "format", "read safely", f"Read as {ck.layout}, {len(ck.state_dict)} tensors, without "
             "unpickling anything but tensors, plain containers and argparse.Namespace.", evidence="; ".join(ev))
    if facts.module_prefix:
        case.add("warning", "keys", "every key starts with module.",
                 f"All {facts.n_tensors} weight keys start with 'module.': they were saved from a "
                 "DistributedDataParallel (or DataParallel) wrapper. Read anyway: removing the prefix is unambiguous.",
                 evidence=f"e.g. module.{next(iter(ck.state_dict))}",
                 action=("nothing for vitviz; other loaders fail on it: save model.module.state_dict() (as "
                         "facebookresearch/mae saves model_without_ddp), or strip it: "
                         "{k.removeprefix('module.'): v for k, v in sd.items()}"))
    for key, n in (facts.ema or {}).items():
        case.add("note", "keys", f"an EMA copy under '{key}'",
                 f"The file also holds an exponential-moving-average copy of the weights under '{key}' ({n} tensors); "
                 f"vitviz read '{facts.weights_key}'.",
                 action=f"to look at the EMA weights, save them alone: torch.save({{'model': ck['{key}']}}, 'ema.pth')")
    for note in ck.dropped:
        if not note.startswith(NORM_PIX_UNSAID):
            case.add("note", "keys", "tensors left out", f"Left out: {note}.")
    if facts.args is not None and isinstance(facts.args.get("model"), str):
        case.mae_expected = facts.args["model"].startswith("mae_")
    if ck.mae_config is not None:
        case.mae_expected = True
    if ck.norm_pix is not None:
        case.norm_pix_said, case.norm_pix_from = ck.norm_pix, ("args.norm_pix_loss" if facts.args else "config.json")
    elif ck.mae_config is not None and "norm_pix_loss" in ck.mae_config:
        case.norm_pix_said, case.norm_pix_from = bool(ck.mae_config["norm_pix_loss"]), "the file's metadata"
    return True


def _decoder_count() -> int:
    """Tensors of the reference decoder (8 blocks of 12, embed 2, mask token, positions, norm 2, pred 2)."""
    return 2 + 1 + 1 + S.DECODER[1] * 12 + 2 + 2


def _architecture(case: _Case, path: Path) -> None:
    """Infer the architecture and name what kind of checkpoint this is."""
    from ..settings import LocalModelEntry

    ck = case.ck
    assert ck is not None
    entry = LocalModelEntry(settings.local_name(path.resolve()), path.resolve())
    try:
        la = case.la = local.describe(entry, dataclasses.replace(ck, dropped=list(ck.dropped)))
    except ModelUnavailable as exc:
        case.add("problem", "keys", "not a ViT or MAE vitviz builds", f"{exc}.",
                 evidence=found({k: tuple(v.shape) for k, v in ck.state_dict.items()}),
                 action="the doctor reads MAE and ViT checkpoints (facebookresearch/mae, timm, DeiT, DINO, Hugging Face)")
        return
    arch = la.arch
    if arch is None:  # BEiT or Swin snapshots
        case.architecture = la.short()
        case.add("problem", "keys", f"a {la.family.upper()} model, not an MAE",
                 f"This is a {la.family.upper()} checkpoint ({la.short()}), not a masked autoencoder: there is no "
                 "pixel decoder to check.", action="open it in the app's tabs for its family instead")
        return
    case.architecture = arch.describe()
    stray = [k for k in ck.state_dict if k.startswith(("decoder", "mask_token"))]
    if arch.kind == "mae":
        return
    named = f"args.model = {case.facts.args['model']!r}" if case.facts and case.facts.args and "model" in case.facts.args else ""
    if arch.num_classes and not case.mae_expected and not stray:
        case.add("problem", "keys", "not an MAE: a ViT classifier",
                 f"This is a ViT classifier ({arch.num_classes} classes, {arch.describe().split(', MLP')[0]}), not a "
                 "masked autoencoder: it has no decoder, so there is nothing to reconstruct.",
                 evidence=found({k: tuple(v.shape) for k, v in ck.state_dict.items()}),
                 action=("for reconstructions use an MAE pretraining checkpoint. vitviz can still show this model: "
                         "its attention and rollout (Attention tab; python -m vitviz attention --model PATH), its "
                         "heads (Heads tab), why it says a class (Explain tab; python -m vitviz explain --model PATH) "
                         "and its features (python -m vitviz features --model PATH); its heads are measured below"))
        return
    what = ("a fine-tuned checkpoint (it has a classifier head)" if arch.num_classes else
            "an encoder-only checkpoint (as mae_pretrain_vit_*.pth)")
    missing = ("the decoder is partly there but incomplete: " + describe_keys(stray) if stray else
               "the file has no decoder_* tensor and no mask_token")
    case.add("problem", "keys", "the decoder is missing",
             f"The decoder is missing: this is {what}; reconstructions need the pretraining checkpoint with its "
             f"decoder. Read anyway: the encoder alone, whose attention is measured below.",
             evidence="; ".join(x for x in (missing, named, f"encoder: {arch.describe()}") if x),
             expected=(f"an MAE decoder as in the paper has {_decoder_count()} tensors (8 blocks, 512 wide): "
                       f"{S.DECODER_SOURCE}"),
             action=("use the checkpoint saved by pretraining (facebookresearch/mae main_pretrain.py's "
                     "checkpoint-N.pth, or mae_visualize_vit_*.pth for the published weights), not the fine-tuned "
                     f"output nor mae_pretrain_vit_*.pth. {S.OFFICIAL_FILES}"))


def _strict_failure(case: _Case, exc: ModelUnavailable) -> None:
    """Group what does not load, and read anyway where one fix is unambiguous."""
    ck, la = case.ck, case.la
    assert ck is not None and la is not None
    arch = la.arch  # type: ignore[attr-defined]
    if arch is None or arch.kind != "mae":
        case.add("problem", "keys", "does not load strictly", f"{exc}.")
        return
    cfg = local._mae_config(arch, la.norm_pix)  # type: ignore[attr-defined]
    with torch.device("meta"):
        expected = {k: tuple(v.shape) for k, v in MaskedAutoencoderViT(cfg).state_dict().items()}
    got = {k: tuple(v.shape) for k, v in ck.state_dict.items()}
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    wrong = sorted(k for k in set(expected) & set(got) if expected[k] != got[k])
    parts = []
    if missing:
        parts.append("missing: " + describe_keys(missing))
    if extra:
        parts.append("unexpected: " + describe_keys(extra))
    if wrong:
        parts.append("wrong shape: " + ", ".join(f"{k} {got[k]} (expected {expected[k]})" for k in wrong[:6]))
    fixed = _restore_tables(case, wrong, missing, extra)
    sentence = f"The tensors do not fit one MAE: {'; '.join(parts)}."
    if fixed:
        sentence += f" Read anyway: {fixed}."
    case.add("problem", "keys", "does not load strictly", sentence, evidence=str(exc),
             action=("make the encoder's and decoder's position tables agree: an MAE is trained and reconstructs at "
                     "one grid" if wrong and all("pos_embed" in k for k in wrong) else
                     "save the whole model from the training run (model_without_ddp.state_dict())"))


def _restore_tables(case: _Case, wrong: list[str], missing: list[str], extra: list[str]) -> str:
    """Where only position tables disagree and the encoder's is MAE's sin-cos table resampled from the
    decoder's grid, put MAE's sin-cos table for that grid back (it is fixed, never trained) and build the
    model: returns what was done ("" when no such fix applies)."""
    ck = case.ck
    assert ck is not None
    if missing or extra or not wrong or any(k not in ("pos_embed", "decoder_pos_embed") for k in wrong):
        return ""
    enc, dec = position_table(ck.state_dict["pos_embed"]), position_table(ck.state_dict["decoder_pos_embed"])
    if enc.kind != "resampled" or dec.kind != "sincos" or enc.source_grid != dec.grid:
        return ""
    from ..core.pos_embed import sincos_pos_embed

    d = ck.state_dict["pos_embed"].shape[-1]
    sd = dict(ck.state_dict)
    sd["pos_embed"] = torch.from_numpy(sincos_pos_embed(d, (dec.grid, dec.grid))).unsqueeze(0)
    fixed = dataclasses.replace(ck, state_dict=sd, dropped=list(ck.dropped))
    if _build_from(case, fixed):
        return (f"the encoder's table was MAE's fixed {dec.grid}×{dec.grid} sin-cos table resampled to "
                f"{enc.grid}×{enc.grid}; vitviz put the {dec.grid}×{dec.grid} table back (it is never trained, so this "
                f"is exact) and measures the model at {dec.grid * case.la.arch.patch_size} px")  # type: ignore[union-attr]
    return ""


def _build_from(case: _Case, ck: Checkpoint) -> bool:
    """Build a model from an adjusted checkpoint (the doctor's own copy; nothing is cached)."""
    la0 = case.la
    assert la0 is not None
    try:
        la = local.describe(la0.entry, ck)  # type: ignore[attr-defined]
        module, dc, norm_pix = local.build_read(la, ck)
    except ModelUnavailable:
        return False
    dev = case.device
    module = module.eval().requires_grad_(False).to(dev)
    case.la = la
    case.model = LoadedModel(la.entry.name, local_spec(la), module, dc, torch.device(dev), norm_pix=norm_pix,
                             origin=f"{la.entry.path} (adjusted by the doctor)")
    return True


def _random_twin(model: LoadedModel) -> LoadedModel:
    """The model's architecture with seeded random weights (the same builder as ``random_init=True``)."""
    from ..models.build import build_random

    if model.spec.local is not None:
        module, dc, norm_pix = local.build_random(model.spec.local)
    else:
        module, dc, norm_pix = build_random(model.spec)
    module = module.eval().requires_grad_(False).to(model.device)
    return LoadedModel(model.name, model.spec, module, dc, model.device, norm_pix=norm_pix, random_init=True)


# ----------------------------------------------------------------------------------------- 2. targets


def _target_space(m: Measures) -> str:
    """``pixels``, ``normalised`` or ``unclear``: which target space the decoder's output fits."""
    lp, ln, zp, zn = m.loss_pixels, m.loss_normed, m.zero_pixels, m.zero_normed
    if None in (lp, ln, zp, zn):
        return "unclear"
    if lp < S.TARGET_MARGIN * ln and lp < S.TARGET_MARGIN * zp:  # type: ignore[operator]
        return "pixels"
    if ln < S.TARGET_MARGIN * lp and ln < S.TARGET_MARGIN * zn:  # type: ignore[operator]
        return "normalised"
    return "unclear"


def _targets(case: _Case, m: Measures) -> None:
    model = case.model
    assert model is not None
    space = _target_space(m)
    ev = (f"hidden-patch loss of the decoder's raw output at 75%: {_fmt(m.loss_pixels, 3)} against the input pixels, "
          f"{_fmt(m.loss_normed, 3)} against per-patch normalised pixels (predicting zeros scores "
          f"{_fmt(m.zero_pixels, 3)} and {_fmt(m.zero_normed, 3)})")
    said, src = case.norm_pix_said, case.norm_pix_from
    if said is None and case.facts is None:  # a registry model: the registry says
        said, src = model.norm_pix, "the registry"
    if said is True or (said is None and model.norm_pix):
        case.add("warning", "targets", "per-patch normalised targets (norm_pix_loss)",
                 f"{src} says it was trained with norm_pix_loss=True: its decoder predicts each patch normalised by its "
                 "own mean and variance, so it cannot draw colour or contrast. To draw it, vitviz de-normalises each "
                 "hidden patch with its true mean and variance, which leaks the answer: filling every hidden patch "
                 f"with its true mean colour alone scores {_fmt(m.leak75)} hidden-patch error here, the model "
                 f"{_fmt(m.mse75)}.", evidence=ev,
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


# ----------------------------------------------------------------------------------------- 3. preprocessing


def _tables(case: _Case) -> dict[str, PositionTable]:
    """The position tables of the built model, or of the file when none was built."""
    sd: dict[str, torch.Tensor] = {}
    if case.model is not None:
        module = case.model.module
        for name in ("pos_embed", "decoder_pos_embed"):
            t = getattr(module, name, None)
            if isinstance(t, torch.Tensor):
                sd[name] = t
    elif case.ck is not None:
        sd = {k: v for k, v in case.ck.state_dict.items() if k in ("pos_embed", "decoder_pos_embed")}
    prefix = 1
    if case.model is not None and not isinstance(case.model.module, MaskedAutoencoderViT):
        prefix = 0 if getattr(case.model.module, "no_embed_class", False) else int(
            getattr(case.model.module, "num_prefix_tokens", 1))
    out = {}
    for name, t in sd.items():
        if t.dim() == 3 and grid_of(tuple(t.shape), prefix if name == "pos_embed" else 1):
            out[name] = position_table(t.cpu(), prefix if name == "pos_embed" else 1)
    return out


def _preprocessing(case: _Case, original_tables: dict[str, PositionTable]) -> None:
    model = case.model
    if model is not None:
        s, p = model.input_size, model.patch_size
        g = s // p
        case.add("ok" if s == S.PRETRAIN_SIZE or not case.mae_expected else "note", "preprocessing", "input size",
                 f"Patch {p}, {g}×{g} grid: {s} px input; vitviz feeds it {s} px (shorter side resized, centre crop).",
                 expected=f"{S.PRETRAIN_SIZE} px: {S.PREPROCESS_SOURCE}")
        args = (case.facts.args or {}) if case.facts else {}
        size = args.get("input_size")
        if is_number(size) and int(size) != s:
            case.add("warning", "preprocessing", "args.input_size differs from the position tables",
                     f"Its args say input_size={size}, but {'the model vitviz measures' if original_tables else 'its position table'} "
                     f"is for {s} px ({g}×{g} patches of {p}).",
                     evidence=args_summary(args),
                     action=f"feed it {s} px images, or build it for {size} px with both tables made for that grid")
    mae = case.mae_expected or (model is not None and isinstance(model.module, MaskedAutoencoderViT))
    for name, t in (original_tables or _tables(case)).items():
        label = "encoder" if name == "pos_embed" else "decoder"
        if t.kind == "sincos":
            if mae:
                case.add("ok", "preprocessing", f"the {label}'s position table",
                         f"The {label}'s position table is MAE's fixed 2-D sin-cos table for its {t.grid}×{t.grid} "
                         "grid.", evidence=f"largest difference {t.difference:.1e}", expected=S.SINCOS_SOURCE)
        elif t.kind == "resampled":
            p = case.la.arch.patch_size if case.la is not None and case.la.arch is not None else (  # type: ignore[attr-defined]
                model.patch_size if model is not None else 16)
            case.add("warning", "preprocessing", f"the {label}'s table was resampled: fed at another resolution",
                     f"The {label}'s position table is MAE's {t.source_grid}×{t.source_grid} sin-cos table resampled "
                     f"bicubically to {t.grid}×{t.grid}: a patch-{p} model trained at {t.source_grid * p} px was set up "
                     f"to be fed {t.grid * p} px images. MAE's decoder never saw that grid.",
                     evidence=f"largest difference from the resampled table {t.difference:.1e}",
                     expected=f"{S.SINCOS_SOURCE}; {S.INTERPOLATE_SOURCE}",
                     action=(f"reconstruct at {t.source_grid * p} px with the original tables; resample only for "
                             "fine-tuning the encoder"))
        elif mae:
            case.add("note", "preprocessing", f"the {label}'s position table is learned or modified",
                     f"The {label}'s position table is not MAE's fixed sin-cos table (nor one resampled from it): "
                     "learned, or changed after training.", evidence=f"differs from sin-cos by up to {t.difference:.2f}",
                     expected=S.SINCOS_SOURCE)
    if model is not None:
        la = model.spec.local
        dc = model.data_config
        said = la.normalisation_from if la is not None else "the registry's"
        if la is not None and not said.startswith("from"):
            case.add("note", "preprocessing", "mean/std not in the file",
                     f"The file does not name its normalisation; vitviz feeds ImageNet's mean {dc.mean} and std "
                     f"{dc.std}, which facebookresearch/mae and timm's ViTs use.", expected=S.PREPROCESS_SOURCE,
                     action="if you trained with other statistics, the colours of every reconstruction are off by them")
        else:
            case.add("ok", "preprocessing", "mean/std", f"Normalisation mean {dc.mean}, std {dc.std} ({said}).")


# ----------------------------------------------------------------------------------------- 4-5. measurements


def _reconstruction(case: _Case, m: Measures, twin: Measures, ref: Measures) -> None:
    if m.mse75 is None:
        return
    exp = (f"mae-tiny: {_fmt(ref.mse75)} ({S.MEASURED}); the ring baseline: {_fmt(m.ring75)}; random twin: "
           f"{_fmt(twin.mse75)} ({S.TWIN})")
    ev = (f"hidden-patch error at 75% (RGB in [0, 1], mean over {len(m.photos)} example photo"
          f"{'s' if len(m.photos) != 1 else ''}: {', '.join(m.photos)}): {_fmt(m.mse75)}")
    ring, tw = m.ring75 or 0.0, twin.mse75 or 0.0
    if m.mse75 >= S.BASELINE_SHARE * ring:
        case.add("problem", "reconstruction", "no better than blurring the visible patches",
                 f"It reconstructs no better than filling each hidden patch with the mean colour of the nearest visible "
                 f"ring ({_fmt(m.mse75)} vs {_fmt(ring)}): untrained, or the wrong targets.", evidence=ev, expected=exp,
                 action="check the findings above (decoder, targets, position tables); else train longer")
    else:
        case.add("ok", "reconstruction", "beats the visible-ring baseline",
                 f"Its hidden-patch error is {100 * (1 - m.mse75 / ring):.0f}% below the visible-ring baseline's "
                 f"({_fmt(m.mse75)} vs {_fmt(ring)}).", evidence=ev, expected=exp)
    if not case.model or case.model.random_init:
        return
    if m.mse75 >= S.TWIN_SHARE * tw:
        case.add("problem", "reconstruction", "no better than its random-weight twin",
                 f"It reconstructs no better than the same architecture with random weights ({_fmt(m.mse75)} vs "
                 f"{_fmt(tw)}): these weights look untrained.", evidence=ev, expected=exp,
                 action="check that the file is the trained checkpoint (its epoch, its size), not the initial one")
    else:
        case.add("ok", "reconstruction", "beats its random-weight twin",
                 f"Its hidden-patch error is {tw / max(m.mse75, 1e-12):.1f}× lower than its random twin's "
                 f"({_fmt(m.mse75)} vs {_fmt(tw)}).", evidence=ev, expected=exp)
    knee = "never rises by that much up to 95%" if m.knee is None else f"turns up at {m.knee:.0%}"
    rknee = "never" if ref.knee is None else f"{ref.knee:.0%}"
    case.add("note", "reconstruction", "where the error turns up",
             f"Its hidden-patch error {knee} (first ratio with {S.KNEE_RISE:g}× the error at "
             f"{min(m.curve):.0%}); mae-tiny's turns up at {rknee}.",
             evidence="error by ratio: " + ", ".join(f"{r:.0%} {v:.4f}" for r, v in m.curve.items()),
             expected=f"mae-tiny: " + ", ".join(f"{r:.0%} {v:.4f}" for r, v in ref.curve.items()) + f" ({S.MEASURED}); "
                      f"reference ratio 75%: {S.MASK_RATIO_SOURCE}")


def _training(case: _Case, m: Measures, twin: Measures, ref: Measures) -> None:
    if not m.distance:
        return
    random_like = (m.entropy_mean is not None and twin.entropy_mean is not None and not m.random_init
                   and m.entropy_mean >= twin.entropy_mean - 0.005 and min(m.distance) >= 0.97)
    ev = (f"attention distance by depth, as a share of uniform attention's: {_row(m.distance)}; entropy by depth: "
          f"{_row(m.entropy)}")
    exp = (f"mae-tiny: distance {_row(ref.distance)}, entropy {_row(ref.entropy)} ({S.MEASURED}); random twin: "
           f"distance {_row(twin.distance)}, entropy {_row(twin.entropy)} ({S.TWIN})")
    if random_like:
        case.add("problem", "training", "attention looks untrained",
                 "Every layer attends almost uniformly, as its random-weight twin does: training left no structure in "
                 "the attention.", evidence=ev, expected=exp,
                 action="check that these are the trained weights")
    else:
        local = sum(d < 0.9 for d in m.distance)
        case.add("ok", "training", "attention has structure",
                 f"Attention is more local than uniform in {local} of {len(m.distance)} layers; its mean entropy is "
                 f"{_fmt(m.entropy_mean, 3)} (random twin {_fmt(twin.entropy_mean, 3)}, mae-tiny "
                 f"{_fmt(ref.entropy_mean, 3)}).", evidence=ev, expected=exp)
    case.add("note", "training", "near-uniform and sink heads",
             f"{100 * (m.dead_share or 0):.0f}% of heads are near-uniform (entropy ≥ {S.DEAD_ENTROPY}) and "
             f"{100 * (m.sink_share or 0):.0f}% park their attention on the class token; mae-tiny: "
             f"{100 * (ref.dead_share or 0):.0f}% and {100 * (ref.sink_share or 0):.0f}%, random twin: "
             f"{100 * (twin.dead_share or 0):.0f}% and {100 * (twin.sink_share or 0):.0f}%.",
             expected=f"{S.MEASURED}; {S.TWIN}")
    case.add("note", "training", "high-norm tokens",
             f"{100 * (m.outlier_share or 0):.1f}% of block-output patch tokens are high-norm outliers; the largest "
             f"patch norm is {_fmt(m.max_norm_ratio, 1)}× its layer's median (mae-tiny: "
             f"{100 * (ref.outlier_share or 0):.1f}%, {_fmt(ref.max_norm_ratio, 1)}×).",
             expected=f"{S.MEASURED}; {S.REGISTERS_SOURCE}")


def _panels(m: Measures, ref: Measures) -> dict[str, np.ndarray]:
    if not m.panels:
        return {}
    out = {"masked": m.panels["masked"], "ring baseline": m.panels["ring"], "this checkpoint": m.panels["reconstruction"]}
    if ref.panels and ref.panels["original"].shape == m.panels["original"].shape and ref.mask is not None \
            and m.mask is not None and np.array_equal(ref.mask, m.mask):
        out["mae-tiny, same mask"] = ref.panels["reconstruction"]
    elif ref.panels:
        out["mae-tiny (its own grid)"] = ref.panels["reconstruction"]
    return out


# ----------------------------------------------------------------------------------------- entry point


def diagnose(subject: str | Path | LoadedModel, device: str | torch.device | None = None,
             photos: list[str] | None = None) -> Diagnosis:
    """Examine a checkpoint (a path), a registry model (a name) or a loaded model, and report.

    ``vitviz.diagnose("checkpoint-399.pth").to_text()``; ``.to_json()`` gives the same findings as data.

    Args:
        subject: a checkpoint file or Hugging Face snapshot folder, a registry name, or a :class:`LoadedModel`.
        device: where the models run (None: CUDA when present, else CPU).
        photos: the images measured on (default: the bundled example photos).

    Returns:
        A :class:`~vitviz.doctor.report.Diagnosis`; a file that cannot be read gives a report saying why,
        never an exception.

    Raises:
        ValueError: a path on a public host (:data:`vitviz.settings.PUBLIC_LOCAL_REFUSAL`).
    """
    dev = default_device() if device is None else torch.device(device)
    if isinstance(subject, LoadedModel):
        case = _Case(subject.name, model=subject, layout=f"loaded model {subject.name} ({subject.origin or 'random weights'})")
        case.mae_expected = subject.family == "mae"
        tables = {}
    elif isinstance(subject, str) and subject in model_names():
        model = load_model(subject, device=dev)
        case = _Case(subject, model=model, layout=f"registry model {subject}, loaded strictly from {model.origin}")
        case.mae_expected = model.family == "mae"
        tables = {}
    else:
        if settings.public():
            raise ValueError(settings.PUBLIC_LOCAL_REFUSAL)
        path = Path(subject).expanduser()
        case = _Case(str(path), device=dev)
        if not _format(case, path):
            return Diagnosis(case.subject, case.layout, case.architecture, Diagnosis.ordered(case.findings))
        _architecture(case, path)
        tables = {}
        if case.la is not None and case.ck is not None:
            tables = _tables(case)  # as the file has them, before any repair
            try:
                case.model = open_model(path, device=dev)
                if case.la.arch is not None and case.la.arch.kind == "mae":  # type: ignore[attr-defined]
                    case.add("ok", "keys", "an MAE with its decoder, loaded strictly",
                             f"An MAE encoder with its decoder; every tensor loaded strictly: "
                             f"{case.la.arch.describe()}.")  # type: ignore[attr-defined]
            except ModelUnavailable as exc:
                _strict_failure(case, exc)
    model = case.model
    if model is not None and case.facts is None:
        case.architecture = model.spec.architecture
        case.add("ok", "format", "loaded strictly", f"The {case.layout}; every tensor loaded strictly.")
    _preprocessing(case, tables)
    measurements: dict = {}
    panels: dict = {}
    if model is not None:
        case.twin = _random_twin(model)
        ref = reference(dev, photos)
        own = model.name == "mae-tiny" and model.spec.local is None and not model.random_init
        m, twin = (ref if own else measure(model, photos)), measure(case.twin, photos)
        if m.mse75 is not None:
            _targets(case, m)
        _reconstruction(case, m, twin, ref)
        _training(case, m, twin, ref)
        measurements = {"checkpoint": m.as_dict(), "random_twin": twin.as_dict(), "mae-tiny": ref.as_dict()}
        panels = _panels(m, ref)
    return Diagnosis(case.subject, case.layout, case.architecture, Diagnosis.ordered(case.findings), measurements,
                     panels)
