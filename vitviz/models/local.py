"""Your own checkpoints as models: named by the starter, inferred from the file, loaded strictly.

Paths come only from whoever started vitviz: ``VITVIZ_MODELS`` (which ``app.py --model
NAME=PATH`` sets), or a path given to :func:`vitviz.load_model` / the CLI's ``--model``.
Picker values name these models by their NAME, never by a path, and a public host refuses
them all (:func:`vitviz.settings.local_models`).

A local model is a :class:`~vitviz.models.registry.ModelSpec` like any other
(:func:`vitviz.models.registry.local_spec`), with ``ModelSpec.local`` holding what was read
(:class:`LocalArch`), so every tab that takes
its family (``mae``, ``vit``, ``deit``, ``dino``, ``beit`` or ``swin``) lists and runs it. The
architecture comes from the tensors (:mod:`vitviz.models.infer`); the layouts from
:mod:`vitviz.models.layouts`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch
from torch import nn

from .. import settings
from ..cache import LRU
from ..core.images import DataConfig
from ..errors import ModelUnavailable
from ..model_entries import MODELS_SEPARATOR, LocalModelEntry, local_name, parse_model_entry
from .beit import BEiTConfig
from .infer import Arch, infer
from .layouts import HF_FILES, Checkpoint, read_local
from .mae import MAEConfig
from .spec import LocalArch
from .swin_hf import swin_module


def _stamp(path: Path) -> tuple[int, int]:
    """``(size, mtime_ns)`` of a file, or of a snapshot folder's weight file."""
    if path.is_dir():
        path = next((path / f for f in HF_FILES if (path / f).is_file()), path / "config.json")
    try:
        st = path.stat()
    except OSError as exc:
        raise ModelUnavailable(f"cannot read {path}: {exc.strerror or exc}") from None
    return st.st_size, st.st_mtime_ns


def _beit_config(ck: Checkpoint, heads: int | None) -> BEiTConfig:
    c = ck.beit_config or {}
    arch = c.get("architectures") or []
    if arch and "BeitForMaskedImageModeling" not in arch:
        raise ModelUnavailable(f"{ck.layout}: vitviz builds BEiT snapshots of BeitForMaskedImageModeling only")
    d = int(c["hidden_size"])
    scale = c.get("layer_scale_init_value", 0.0)
    qv = any(k.endswith("attention.attention.query.bias") for k in ck.state_dict)
    return BEiTConfig(
        img_size=int(c.get("image_size", 224)), patch_size=int(c.get("patch_size", 16)), embed_dim=d,
        depth=int(c["num_hidden_layers"]), num_heads=int(heads or c["num_attention_heads"]),
        mlp_ratio=int(c.get("intermediate_size", 4 * d)) / d, vocab_size=int(c.get("vocab_size", 8192)),
        mean=ck.mean or (0.5, 0.5, 0.5), std=ck.std or (0.5, 0.5, 0.5),
        abs_pos_embed=bool(c.get("use_absolute_position_embeddings", False)),
        rel_pos_bias=("shared" if c.get("use_shared_relative_position_bias") else
                      "layer" if c.get("use_relative_position_bias") else "none"),
        layer_scale=float(scale) if isinstance(scale, (int, float)) and scale > 0 else 0.0, qv_bias=qv)


def describe(entry: LocalModelEntry, ck: Checkpoint) -> LocalArch:
    """Infer the architecture of a read checkpoint (no module built).

    Raises:
        ModelUnavailable: a sentence naming what the file holds when no layout fits.
    """
    what = str(entry.path)
    stamp = _stamp(entry.path)
    if ck.beit_config is not None:
        beit = _beit_config(ck, entry.heads)
        dc = DataConfig(input_size=beit.img_size, mean=beit.mean, std=beit.std)
        return LocalArch(entry, stamp, "beit", None, beit, ck.layout, dc, False, tuple(ck.dropped),
                         "from preprocessor_config.json" if ck.mean else "0.5 / 0.5 (BEiT's; the folder does not say)")
    if ck.swin is not None:
        mean_std = (ck.mean, ck.std) if ck.mean is not None else ()
        dc = DataConfig(ck.swin.img_size, *mean_std)  # type: ignore[arg-type]
        return LocalArch(entry, stamp, "swin", None, None, ck.layout, dc, False, tuple(ck.dropped),
                         "from preprocessor_config.json" if ck.mean else "ImageNet's (the folder does not say)",
                         swin=ck.swin)
    heads, hfrom = (entry.heads, "given with heads=") if entry.heads else (ck.heads, ck.heads_from)
    dheads, dfrom = ((entry.decoder_heads, "given with decoder_heads=") if entry.decoder_heads
                     else (ck.decoder_heads, ck.heads_from))
    if ck.mae_config is not None:
        heads, dheads = heads or ck.mae_config.get("num_heads"), dheads or ck.mae_config.get("decoder_num_heads")
        hfrom = dfrom = hfrom if entry.heads else "the file's metadata"
    shapes = {k: tuple(v.shape) for k, v in ck.state_dict.items()}
    arch = infer(shapes, heads, hfrom, dheads, dfrom, what)
    norm_pix = bool(ck.norm_pix) or (ck.mae_config or {}).get("norm_pix_loss") is True
    if ck.norm_pix is None and arch.kind == "mae" and not ck.mae_config:
        ck.dropped.append("nothing says whether it was trained with norm_pix_loss: shown as plain pixels")
    if ck.mean is not None:
        dc, nfrom = DataConfig(arch.img_size, ck.mean, ck.std), "from preprocessor_config.json"  # type: ignore[arg-type]
    else:
        dc, nfrom = DataConfig(arch.img_size), "ImageNet's (the file does not say)"
    return LocalArch(entry, stamp, arch.kind, arch, None, ck.layout, dc, norm_pix, tuple(ck.dropped), nfrom)


#: Inferred architectures, keyed by (path, stamp, head overrides, name): listing models reads each file once.
DESCRIBED: LRU[tuple, LocalArch] = LRU(32)


def describe_entry(entry: LocalModelEntry) -> LocalArch:
    """An entry's file read and its architecture inferred (cached by the file's size and time).

    Raises:
        ModelUnavailable: the file cannot be read or fits no layout (a sentence saying what it holds).
    """
    key = (str(entry.path), _stamp(entry.path), entry.heads, entry.decoder_heads, entry.name)
    return DESCRIBED.get_or_compute(key, lambda: describe(entry, read_local(entry.path)))


def entries(registered: Iterable[str]) -> dict[str, LocalModelEntry]:
    """The starter's checkpoints by name (``VITVIZ_MODELS``).

    Raises:
        ValueError: a malformed entry, a name one of the ``registered`` models has, or any entry
            on a public host.
    """
    out = {e.name: e for e in settings.local_models()}
    taken = sorted(set(out) & set(registered))
    if taken:
        raise ValueError(f"VITVIZ_MODELS: {', '.join(taken)} is the name of a registered model; give your "
                         f"checkpoint another name (NAME=PATH)")
    return out


def add_local_models(values: Sequence[str], registered: Iterable[str]) -> list[str]:
    """Add ``NAME=PATH`` values (``python app.py --model``) to ``VITVIZ_MODELS`` (after any already there),
    reading each file now (``registered``: the registry's names, which a local name may not take); on
    failure ``VITVIZ_MODELS`` is left as it was.

    Returns:
        One line per local model: its name, path and what was inferred.

    Raises:
        ValueError: a malformed value, a name given twice or taken by a registered model, or any
            model on a public host.
        ModelUnavailable: a file that cannot be read or fits no layout.
    """
    for value in values:
        parse_model_entry(value)  # a sentence for a malformed one, before anything is set
    if values and settings.public():
        raise ValueError(settings.PUBLIC_LOCAL_REFUSAL)
    joined = MODELS_SEPARATOR.join([os.environ.get("VITVIZ_MODELS", "").strip(), *values]).strip(
        MODELS_SEPARATOR)
    previous = os.environ.get("VITVIZ_MODELS")
    os.environ["VITVIZ_MODELS"] = joined
    try:
        lines = []
        for entry in entries(registered).values():
            la = describe_entry(entry)
            lines.append(f"{entry.name}: {entry.path} -> {la.family}, {la.short()}")
        return lines
    except (ValueError, ModelUnavailable):
        if previous is None:
            os.environ.pop("VITVIZ_MODELS", None)
        else:
            os.environ["VITVIZ_MODELS"] = previous
        raise


def for_path(path: str | Path, heads: int | None = None, decoder_heads: int | None = None) -> LocalArch:
    """A checkpoint named by its path (``vitviz.load_model(PATH)``, the CLI's ``--model PATH``).

    Raises:
        ValueError: on a public host (:data:`vitviz.settings.PUBLIC_LOCAL_REFUSAL`).
        ModelUnavailable: unreadable, or no layout fits.
    """
    if settings.public():
        raise ValueError(settings.PUBLIC_LOCAL_REFUSAL)
    p = Path(path).expanduser().resolve()
    return describe_entry(LocalModelEntry(local_name(p), p, heads, decoder_heads))


def looks_like_path(name: str) -> bool:
    """True when ``name`` is meant as a path (it has a separator, a weight-file suffix, or exists).

    A URL or a hub reference (``https://...``, ``hf-hub:...``) is never a path: vitviz downloads
    only the registry's own files.
    """
    if isinstance(name, str) and re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:", name) and not Path(name).exists():
        return False  # a scheme ("https:", "hf-hub:"), not a Windows drive ("C:\\")
    return isinstance(name, str) and ("/" in name or "\\" in name or name.endswith(
        (".pth", ".pt", ".bin", ".safetensors")) or Path(name).expanduser().exists())


def availability(la: LocalArch) -> tuple[bool, str]:
    """``(True, "your checkpoint: PATH")`` while the file is readable."""
    try:
        if _stamp(la.entry.path) != la.stamp:
            return True, f"your checkpoint, changed on disk since it was read: {la.entry.path}"
    except ModelUnavailable as exc:
        return False, str(exc)
    return True, f"your checkpoint: {la.entry.path}"


def build(la: LocalArch) -> tuple[nn.Module, DataConfig, bool]:
    """The module of a local model, loaded strictly from its file (read again: nothing kept from listing).

    Raises:
        ModelUnavailable: the file changed into something else, or does not load strictly.
    """
    ck = read_local(la.entry.path)
    now = describe(la.entry, ck)
    if (now.kind, now.arch, now.beit, now.swin) != (la.kind, la.arch, la.beit, la.swin):
        raise ModelUnavailable(f"{la.entry.path} changed since it was listed; restart vitviz to read it again")
    return build_read(la, ck)


def build_read(la: LocalArch, ck: Checkpoint) -> tuple[nn.Module, DataConfig, bool]:
    """The module of ``la`` loaded strictly from a checkpoint already read (``ck``, as :func:`describe` saw it).

    Raises:
        ModelUnavailable: the tensors do not load strictly.
    """
    from .build import RANDOM_INIT_SEED, isolated_seed
    from .checkpoint import build_mae_strict, build_strict

    what = f"{la.entry.name} ({la.entry.path})"
    if la.kind == "beit":
        return _build_beit(la, ck, what), la.data_config, False
    if la.swin is not None:
        with isolated_seed(RANDOM_INIT_SEED):
            return build_strict(lambda: swin_module(la.swin), ck.state_dict, what), la.data_config, False
    a = la.arch
    assert a is not None
    if a.kind == "mae":
        return build_mae_strict(_mae_config(a, la.norm_pix), ck.state_dict, what), la.data_config, la.norm_pix
    with isolated_seed(RANDOM_INIT_SEED):
        return build_strict(lambda: vit_module(a), ck.state_dict, what), la.data_config, False


def _mae_config(a: Arch, norm_pix: bool) -> MAEConfig:
    assert a.decoder is not None
    w, d, h = a.decoder
    return MAEConfig(img_size=a.img_size, patch_size=a.patch_size, embed_dim=a.embed_dim, depth=a.depth,
                     num_heads=a.num_heads, decoder_embed_dim=w, decoder_depth=d, decoder_num_heads=h,
                     mlp_ratio=a.mlp_ratio, norm_pix_loss=norm_pix)


def build_random(la: LocalArch) -> tuple[nn.Module, DataConfig, bool]:
    """The architecture of a local model with seeded random weights (the file is not read again)."""
    from .beit import BEiTForMIM
    from .build import RANDOM_INIT_SEED, isolated_seed
    from .mae import MaskedAutoencoderViT

    with isolated_seed(RANDOM_INIT_SEED):
        if la.beit is not None:
            return BEiTForMIM(la.beit), la.data_config, False
        if la.swin is not None:
            return swin_module(la.swin), la.data_config, False
        assert la.arch is not None
        if la.arch.kind == "mae":
            return MaskedAutoencoderViT(_mae_config(la.arch, la.norm_pix)), la.data_config, la.norm_pix
        return vit_module(la.arch), la.data_config, False


def vit_module(a: Arch) -> nn.Module:
    """A timm ``VisionTransformer`` (``VisionTransformerDistilled`` with a distillation token) of ``a``."""
    from timm.models.deit import VisionTransformerDistilled
    from timm.models.vision_transformer import VisionTransformer

    cls = VisionTransformerDistilled if a.dist_token else VisionTransformer
    kwargs = dict(img_size=a.img_size, patch_size=a.patch_size, embed_dim=a.embed_dim, depth=a.depth,
                  num_heads=a.num_heads, mlp_ratio=a.mlp_ratio, qkv_bias=a.qkv_bias, num_classes=a.num_classes,
                  global_pool=a.global_pool, init_values=1e-5 if a.layer_scale else None, pre_norm=a.pre_norm,
                  no_embed_class=a.no_embed_class)
    if not a.dist_token:
        kwargs.update(class_token=a.class_token, reg_tokens=a.reg_tokens)
    return cls(**kwargs)


def _build_beit(la: LocalArch, ck: Checkpoint, what: str) -> nn.Module:
    from .build import RANDOM_INIT_SEED, isolated_seed
    from .beit import BEiTForMIM
    from .checkpoint import load_strict
    from .convert import hf_to_beit

    assert la.beit is not None
    with isolated_seed(RANDOM_INIT_SEED):
        module = BEiTForMIM(la.beit)
    index = next((b for n, b in module.named_buffers() if n.endswith("relative_position_index")), None)
    with torch.no_grad():
        return load_strict(module, hf_to_beit(ck.state_dict, module.state_dict(), index, what), what)
