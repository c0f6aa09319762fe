"""Check 1, format and keys: can the file be read safely, what kind of checkpoint it is, does it load strictly.

Which layout (:mod:`vitviz.models.layouts`), ``module.`` prefixes, EMA copies, nesting; is there a
decoder; and if the tensors do not fit one MAE, which groups are missing, unexpected or of the wrong
shape. Where the fix is unambiguous the file is read anyway and the finding says so (a prefix removed;
an encoder read without its decoder; MAE's fixed sin-cos table restored where a resampled one stands).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from ..model_entries import LocalModelEntry, local_name
from ..errors import ModelUnavailable
from ..models import local
from ..models.infer import found
from ..models.layouts import Checkpoint, read_local
from ..models.loading import LoadedModel, open_model
from ..models.mae import MaskedAutoencoderViT
from ..models.registry import local_spec
from . import sources as S
from .case import Case
from .files import args_summary, describe_keys, inspect_file, position_table

NORM_PIX_UNSAID = "nothing says whether it was trained with norm_pix_loss"


def read(case: Case, path: Path) -> bool:
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


def architecture(case: Case, path: Path) -> None:
    """Infer the architecture and name what kind of checkpoint this is."""
    ck = case.ck
    assert ck is not None
    entry = LocalModelEntry(local_name(path.resolve()), path.resolve())
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


def load(case: Case, path: Path) -> None:
    """Build the model from the file, strictly; where it does not load, say which tensors do not fit one MAE
    (and read it anyway where one fix is unambiguous)."""
    la = case.la
    assert la is not None
    try:
        case.model = open_model(path, device=case.device)
        if la.arch is not None and la.arch.kind == "mae":
            case.add("ok", "keys", "an MAE with its decoder, loaded strictly",
                     f"An MAE encoder with its decoder; every tensor loaded strictly: "
                     f"{la.arch.describe()}.")
    except ModelUnavailable as exc:
        _strict_failure(case, exc)


def _strict_failure(case: Case, exc: ModelUnavailable) -> None:
    """Group what does not load, and read anyway where one fix is unambiguous."""
    ck, la = case.ck, case.la
    assert ck is not None and la is not None
    arch = la.arch
    if arch is None or arch.kind != "mae":
        case.add("problem", "keys", "does not load strictly", f"{exc}.")
        return
    cfg = local._mae_config(arch, la.norm_pix)
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


def _restore_tables(case: Case, wrong: list[str], missing: list[str], extra: list[str]) -> str:
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


def _build_from(case: Case, ck: Checkpoint) -> bool:
    """Build a model from an adjusted checkpoint (the doctor's own copy; nothing is cached)."""
    la0 = case.la
    assert la0 is not None
    try:
        la = local.describe(la0.entry, ck)
        module, dc, norm_pix = local.build_read(la, ck)
    except ModelUnavailable:
        return False
    dev = case.device
    module = module.eval().requires_grad_(False).to(dev)
    case.la = la
    case.model = LoadedModel(la.entry.name, local_spec(la), module, dc, torch.device(dev), norm_pix=norm_pix,
                             origin=f"{la.entry.path} (adjusted by the doctor)")
    return True
