"""Check 3, preprocessing: input size, patch size, the position tables and the mean/std the model is fed.

Each position table is classified (:func:`vitviz.doctor.files.position_table`): MAE's fixed 2-D
sin-cos table, one resampled from another grid (the model was set up for another resolution), or
learned; the normalisation is the file's own where it names one, else ImageNet's.
"""

from __future__ import annotations

import torch

from ..models.mae import MaskedAutoencoderViT
from ..models.runner import on_module
from . import sources as S
from .case import Case
from .files import PositionTable, args_summary, grid_of, is_number, position_table


def _position_tensors(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The module's position tables by name (``pos_embed``, ``decoder_pos_embed``: ``(1, T, D)`` each, on the CPU)."""
    found = {name: getattr(module, name, None) for name in ("pos_embed", "decoder_pos_embed")}
    return {k: t.detach().cpu() for k, t in found.items() if isinstance(t, torch.Tensor)}


def tables(case: Case) -> dict[str, PositionTable]:
    """The position tables of the built model, or of the file when none was built."""
    sd: dict[str, torch.Tensor] = {}
    if case.model is not None:
        sd = on_module(case.model, _position_tensors)  # where its weights are
    elif case.ck is not None:
        sd = {k: v for k, v in case.ck.state_dict.items() if k in ("pos_embed", "decoder_pos_embed")}
    prefix = 1
    arch = case.model.architecture if case.model is not None else None
    if arch is not None and not isinstance(arch, MaskedAutoencoderViT):
        prefix = 0 if getattr(arch, "no_embed_class", False) else int(getattr(arch, "num_prefix_tokens", 1))
    out = {}
    for name, t in sd.items():
        if t.dim() == 3 and grid_of(tuple(t.shape), prefix if name == "pos_embed" else 1):
            out[name] = position_table(t.cpu(), prefix if name == "pos_embed" else 1)
    return out


def check(case: Case, original_tables: dict[str, PositionTable]) -> None:
    """Say what the model is fed; ``original_tables``: the file's tables before any repair (empty: the model's)."""
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
    mae = case.mae_expected or (model is not None and isinstance(model.architecture, MaskedAutoencoderViT))
    for name, t in (original_tables or tables(case)).items():
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
