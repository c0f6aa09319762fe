"""Key maps between Hugging Face formats and vitviz's modules: ViTMAE <-> official MAE, and
BeitForMaskedImageModeling <-> BEiT's own names (:class:`~vitviz.models.beit.BEiTForMIM`).

The official format (facebookresearch/mae ``models_mae.py``, and
:class:`vitviz.models.mae.MaskedAutoencoderViT`) and the files on the Hugging Face
hub for ``facebook/vit-mae-{base,large,huge}`` (``ViTMAEForPreTraining``, as
written by transformers' ``convert_vit_mae_to_pytorch.py``) hold the same numbers
under different names:

==============================================  =====================================================
official                                        Hugging Face
==============================================  =====================================================
``cls_token``                                   ``vit.embeddings.cls_token``
``pos_embed``                                   ``vit.embeddings.position_embeddings``
``patch_embed.proj.{weight,bias}``              ``vit.embeddings.patch_embeddings.projection.*``
``blocks.{i}.norm1.*``                          ``vit.encoder.layer.{i}.layernorm_before.*``
``blocks.{i}.attn.qkv.*`` (q, k, v stacked)     ``vit.encoder.layer.{i}.attention.attention.{query,key,value}.*``
``blocks.{i}.attn.proj.*``                      ``vit.encoder.layer.{i}.attention.output.dense.*``
``blocks.{i}.norm2.*``                          ``vit.encoder.layer.{i}.layernorm_after.*``
``blocks.{i}.mlp.fc1.*`` / ``mlp.fc2.*``        ``vit.encoder.layer.{i}.intermediate.dense.*`` / ``output.dense.*``
``norm.*``                                      ``vit.layernorm.*``
``decoder_embed.*``                             ``decoder.decoder_embed.*``
``mask_token``                                  ``decoder.mask_token``
``decoder_pos_embed``                           ``decoder.decoder_pos_embed``
``decoder_blocks.{j}.*``                        ``decoder.decoder_layers.{j}.*`` (sub-names as above)
``decoder_norm.*`` / ``decoder_pred.*``         ``decoder.decoder_norm.*`` / ``decoder.decoder_pred.*``
==============================================  =====================================================

The fused ``qkv`` projection of width ``3D`` is the query, key and value
projections stacked in that order along the output dimension (timm's ``Attention``
reshapes its output as ``(N, T, 3, heads, D/heads)``), so the conversion is
concatenation and slicing only: the numbers are copied exactly.

The Hugging Face configs say ``layer_norm_eps: 1e-12`` where the weights were
trained with 1e-6; vitviz always runs them in its own module (eps 1e-6), so both
sources give identical outputs. transformers 5.x renames these modules in memory
only; the files on the hub keep the names above, and vitviz never imports
transformers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import torch

from ..errors import ModelUnavailable
from .beit import BEiTConfig

#: Whole-key renames outside the transformer blocks: official -> Hugging Face.
TOP_KEYS: dict[str, str] = {
    "cls_token": "vit.embeddings.cls_token",
    "pos_embed": "vit.embeddings.position_embeddings",
    "patch_embed.proj.weight": "vit.embeddings.patch_embeddings.projection.weight",
    "patch_embed.proj.bias": "vit.embeddings.patch_embeddings.projection.bias",
    "norm.weight": "vit.layernorm.weight",
    "norm.bias": "vit.layernorm.bias",
    "decoder_embed.weight": "decoder.decoder_embed.weight",
    "decoder_embed.bias": "decoder.decoder_embed.bias",
    "mask_token": "decoder.mask_token",
    "decoder_pos_embed": "decoder.decoder_pos_embed",
    "decoder_norm.weight": "decoder.decoder_norm.weight",
    "decoder_norm.bias": "decoder.decoder_norm.bias",
    "decoder_pred.weight": "decoder.decoder_pred.weight",
    "decoder_pred.bias": "decoder.decoder_pred.bias",
}

#: Block prefixes: official -> Hugging Face.
BLOCK_PREFIXES: dict[str, str] = {"blocks": "vit.encoder.layer", "decoder_blocks": "decoder.decoder_layers"}

#: Module names inside a block, except the fused qkv: official -> Hugging Face.
BLOCK_MODULES: dict[str, str] = {
    "norm1": "layernorm_before",
    "attn.proj": "attention.output.dense",
    "norm2": "layernorm_after",
    "mlp.fc1": "intermediate.dense",
    "mlp.fc2": "output.dense",
}

#: The three Hugging Face projections that make the official ``attn.qkv``, in stacking order.
QKV_PARTS: tuple[str, str, str] = ("query", "key", "value")

_TOP_FROM_HF = {v: k for k, v in TOP_KEYS.items()}
_PREFIX_FROM_HF = {v: k for k, v in BLOCK_PREFIXES.items()}
_MODULE_FROM_HF = {v: k for k, v in BLOCK_MODULES.items()}
_OFFICIAL_BLOCK = re.compile(r"(blocks|decoder_blocks)\.(\d+)\.(.+)\.(weight|bias)")
_HF_BLOCK = re.compile(r"(vit\.encoder\.layer|decoder\.decoder_layers)\.(\d+)\.(.+)\.(weight|bias)")


def _list(keys: list[str], limit: int = 8) -> str:
    return ", ".join(keys[:limit]) + (", ..." if len(keys) > limit else "")


def official_to_hf(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename an official MAE state dict to the Hugging Face ViTMAE layout.

    Each ``attn.qkv`` weight ``(3D, D)`` / bias ``(3D,)`` is split into query, key
    and value ``(D, D)`` / ``(D,)`` (views, no arithmetic).

    Raises:
        ModelUnavailable: naming any key the official format does not have.
    """

    def block(m: re.Match, value: torch.Tensor) -> dict[str, torch.Tensor] | None:
        prefix, idx, module, kind = m.groups()
        base = f"{BLOCK_PREFIXES[prefix]}.{idx}"
        if module == "attn.qkv":
            if value.shape[0] % 3:
                raise ModelUnavailable(f"{m.group(0)} has shape {tuple(value.shape)}: its first side is not 3 x width")
            return {f"{base}.attention.attention.{part}.{kind}": chunk
                    for part, chunk in zip(QKV_PARTS, value.chunk(3, dim=0))}
        if module in BLOCK_MODULES:
            return {f"{base}.{BLOCK_MODULES[module]}.{kind}": value}
        return None

    return _rename(state_dict, TOP_KEYS, _OFFICIAL_BLOCK, block, "not an official MAE state dict")


def _rename(state_dict: Mapping[str, torch.Tensor], top: Mapping[str, str], pattern: re.Pattern,
            block: Callable[[re.Match, torch.Tensor], dict[str, torch.Tensor] | None], what: str
            ) -> dict[str, torch.Tensor]:
    """Rename whole keys by ``top`` and block keys matching ``pattern`` by ``block(match, value)``
    (the renamed entries, or None for a key the layout does not have).

    Raises:
        ModelUnavailable: ``"{what}: unexpected N keys (...)"`` naming every key not renamed.
    """
    out: dict[str, torch.Tensor] = {}
    unknown: list[str] = []
    for key, value in state_dict.items():
        if key in top:
            renamed: dict[str, torch.Tensor] | None = {top[key]: value}
        else:
            m = pattern.fullmatch(key)
            renamed = block(m, value) if m is not None else None
        if renamed is None:
            unknown.append(key)
        else:
            out.update(renamed)
    if unknown:
        raise ModelUnavailable(f"{what}: unexpected {len(unknown)} keys ({_list(sorted(unknown))})")
    return out


def hf_to_official(state_dict: Mapping[str, torch.Tensor], what: str = "Hugging Face ViTMAE checkpoint"
                   ) -> dict[str, torch.Tensor]:
    """Rename a Hugging Face ViTMAE state dict to the official MAE layout.

    Query, key and value ``(D, D)`` / ``(D,)`` are stacked into ``attn.qkv``
    ``(3D, D)`` / ``(3D,)`` in that order. Every input key must be consumed.

    Args:
        state_dict: keys as in ``facebook/vit-mae-*`` ``model.safetensors``.
        what: names the checkpoint in error messages.

    Raises:
        ModelUnavailable: naming unknown keys, or the missing parts of a split qkv.
    """
    out: dict[str, torch.Tensor] = {}
    qkv: dict[str, dict[str, torch.Tensor]] = {}
    unknown: list[str] = []
    for key, value in state_dict.items():
        if key in _TOP_FROM_HF:
            out[_TOP_FROM_HF[key]] = value
            continue
        m = _HF_BLOCK.fullmatch(key)
        if m is None:
            unknown.append(key)
            continue
        prefix, idx, module, kind = m.groups()
        base = f"{_PREFIX_FROM_HF[prefix]}.{idx}"
        part = module.removeprefix("attention.attention.")
        if module.startswith("attention.attention.") and part in QKV_PARTS:
            qkv.setdefault(f"{base}.attn.qkv.{kind}", {})[part] = value
        elif module in _MODULE_FROM_HF:
            out[f"{base}.{_MODULE_FROM_HF[module]}.{kind}"] = value
        else:
            unknown.append(key)
    if unknown:
        raise ModelUnavailable(f"{what}: unexpected {len(unknown)} keys ({_list(sorted(unknown))})")
    missing: list[str] = []
    for key, parts in qkv.items():
        absent = [p for p in QKV_PARTS if p not in parts]
        if absent:
            prefix, idx = key.split(".")[:2]
            kind = key.rsplit(".", 1)[1]
            missing += [f"{BLOCK_PREFIXES[prefix]}.{idx}.attention.attention.{p}.{kind}" for p in absent]
            continue
        shapes = {tuple(parts[p].shape) for p in QKV_PARTS}
        if len(shapes) != 1:
            raise ModelUnavailable(f"{what}: query, key and value of {key} differ in shape ({sorted(shapes)})")
        out[key] = torch.cat([parts[p] for p in QKV_PARTS], dim=0)
    if missing:
        raise ModelUnavailable(f"{what}: missing {len(missing)} keys ({_list(sorted(missing))})")
    return out


# ----------------------------------------------------------------------------- BEiT

#: Hugging Face ``BeitForMaskedImageModeling`` keys (``microsoft/beit-*-pt22k``, written by transformers'
#: ``convert_beit_unilm_to_pytorch.py``) of vitviz's :class:`~vitviz.models.beit.BEiTForMIM`, whose names
#: are BEiT's own (microsoft/unilm): whole keys outside the blocks.
BEIT_TOP_KEYS: dict[str, str] = {
    "cls_token": "beit.embeddings.cls_token",
    "mask_token": "beit.embeddings.mask_token",
    "pos_embed": "beit.embeddings.position_embeddings",
    "patch_embed.proj.weight": "beit.embeddings.patch_embeddings.projection.weight",
    "patch_embed.proj.bias": "beit.embeddings.patch_embeddings.projection.bias",
    "rel_pos_bias.relative_position_bias_table": "beit.encoder.relative_position_bias.relative_position_bias_table",
    "norm.weight": "layernorm.weight",
    "norm.bias": "layernorm.bias",
    "lm_head.weight": "lm_head.weight",
    "lm_head.bias": "lm_head.bias",
}

#: Names inside block ``i`` (``blocks.{i}.`` -> ``beit.encoder.layer.{i}.``), except the fused qkv weight.
#: LayerScale is ``gamma`` in BEiT and ``lambda`` on the hub (transformers renames ``gamma`` on load).
BEIT_BLOCK_KEYS: dict[str, str] = {
    "norm1.weight": "layernorm_before.weight",
    "norm1.bias": "layernorm_before.bias",
    "attn.q_bias": "attention.attention.query.bias",
    "attn.v_bias": "attention.attention.value.bias",
    "attn.relative_position_bias_table": "attention.attention.relative_position_bias.relative_position_bias_table",
    "attn.proj.weight": "attention.output.dense.weight",
    "attn.proj.bias": "attention.output.dense.bias",
    "norm2.weight": "layernorm_after.weight",
    "norm2.bias": "layernorm_after.bias",
    "mlp.fc1.weight": "intermediate.dense.weight",
    "mlp.fc1.bias": "intermediate.dense.bias",
    "mlp.fc2.weight": "output.dense.weight",
    "mlp.fc2.bias": "output.dense.bias",
    "gamma_1": "lambda_1",
    "gamma_2": "lambda_2",
}

#: The relative position *index* (int64 ``(L+1, L+1)``) that files written by transformers 4.x store
#: beside each bias table (``...relative_position_bias.relative_position_index``); vitviz computes it
#: (timm's non-persistent buffer) and accepts a stored one only when it is equal.
BEIT_TABLE, BEIT_INDEX = "relative_position_bias_table", "relative_position_index"

_BEIT_FROM_HF = {v: k for k, v in BEIT_TOP_KEYS.items()}
_BEIT_BLOCK_FROM_HF = {v: k for k, v in BEIT_BLOCK_KEYS.items()}
_HF_BEIT_BLOCK = re.compile(r"beit\.encoder\.layer\.(\d+)\.(.+)")
_BEIT_BLOCK = re.compile(r"blocks\.(\d+)\.(.+)")


def beit_to_hf(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename a :class:`~vitviz.models.beit.BEiTForMIM` state dict (BEiT blocks) to the Hugging Face layout.

    ``blocks.{i}.attn.qkv.weight`` ``(3D, D)`` is split into ``query``, ``key`` and ``value``
    ``(D, D)`` (there is no key bias). The relative position indices are not included.

    Raises:
        ModelUnavailable: naming any key this layout does not have.
    """

    def block(m: re.Match, value: torch.Tensor) -> dict[str, torch.Tensor] | None:
        base, name = f"beit.encoder.layer.{m.group(1)}", m.group(2)
        if name == "attn.qkv.weight":
            return {f"{base}.attention.attention.{part}.weight": chunk
                    for part, chunk in zip(QKV_PARTS, value.chunk(3, dim=0))}
        return {f"{base}.{BEIT_BLOCK_KEYS[name]}": value} if name in BEIT_BLOCK_KEYS else None

    return _rename(state_dict, BEIT_TOP_KEYS, _BEIT_BLOCK, block, "not a BEiT state dict with BEiT blocks")


def hf_to_beit(state_dict: Mapping[str, torch.Tensor], reference: Mapping[str, torch.Tensor],
               index: torch.Tensor | None, what: str = "Hugging Face BEiT checkpoint") -> dict[str, torch.Tensor]:
    """Rename a Hugging Face ``BeitForMaskedImageModeling`` state dict to vitviz's BEiT names, strictly.

    Args:
        state_dict: keys as in ``microsoft/beit-base-patch16-224-pt22k`` ``model.safetensors``.
        reference: the target module's ``state_dict()`` (names the keys the file must hold).
        index: the relative position index the module computes, int64 ``(L+1, L+1)`` (None without
            relative position bias); a stored ``...relative_position_index`` beside an expected bias
            table must equal it, and is dropped.
        what: names the checkpoint in error messages.

    Returns:
        The state dict with vitviz's names; query, key and value weights stacked into ``attn.qkv.weight``.

    Raises:
        ModelUnavailable: naming missing or unexpected keys (in the Hugging Face names), or a stored
        index that differs from the computed one.
    """
    from .checkpoint import check_keys

    expected = set(beit_to_hf(reference))
    stored_index = {k for k in state_dict if k.endswith(BEIT_INDEX) and k.replace(BEIT_INDEX, BEIT_TABLE) in expected}
    check_keys(expected, set(state_dict) - stored_index, what)
    for key in sorted(stored_index):
        value = state_dict[key]
        assert index is not None  # a bias table is expected, so the module computes its index
        if tuple(value.shape) != tuple(index.shape) or not torch.equal(value.to(torch.long), index):
            raise ModelUnavailable(f"{what}: {key} differs from the relative position index of this patch grid "
                                   f"{tuple(index.shape)}")
    out: dict[str, torch.Tensor] = {}
    qkv: dict[str, dict[str, torch.Tensor]] = {}
    for key, value in state_dict.items():
        if key in stored_index:
            continue
        if key in _BEIT_FROM_HF:
            out[_BEIT_FROM_HF[key]] = value
            continue
        m = _HF_BEIT_BLOCK.fullmatch(key)
        assert m is not None  # check_keys above: every key is an expected one
        i, rest = m.groups()
        part = rest.removeprefix("attention.attention.").removesuffix(".weight")
        if part in QKV_PARTS and rest == f"attention.attention.{part}.weight":
            qkv.setdefault(f"blocks.{i}.attn.qkv.weight", {})[part] = value
        else:
            out[f"blocks.{i}.{_BEIT_BLOCK_FROM_HF[rest]}"] = value
    for key, parts in qkv.items():
        shapes = {tuple(parts[p].shape) for p in QKV_PARTS}
        if len(shapes) != 1:
            raise ModelUnavailable(f"{what}: query, key and value of {key} differ in shape ({sorted(shapes)})")
        out[key] = torch.cat([parts[p] for p in QKV_PARTS], dim=0)
    return out


def hf_beit_config_mismatches(data: Mapping[str, object], config: BEiTConfig) -> list[str]:
    """Fields of a Hugging Face ``BeitConfig`` (``config.json``) that contradict ``config``: ``["name=value (expected x)"]``.

    ``layer_norm_eps`` is not checked (the hub says 1e-12; BEiT was trained with 1e-6, which
    vitviz uses), nor the exact ``layer_scale_init_value`` (an initial value, not a shape).
    """
    expected: dict[str, object] = {
        "hidden_size": config.embed_dim,
        "num_hidden_layers": config.depth,
        "num_attention_heads": config.num_heads,
        "intermediate_size": int(config.embed_dim * config.mlp_ratio),
        "patch_size": config.patch_size,
        "image_size": config.img_size,
        "vocab_size": config.vocab_size,
        "use_absolute_position_embeddings": config.abs_pos_embed,
        "use_shared_relative_position_bias": config.rel_pos_bias == "shared",
        "use_relative_position_bias": config.rel_pos_bias == "layer",
        "use_mask_token": True,
    }
    wrong = [f"{k}={data[k]!r} (expected {v!r})" for k, v in expected.items() if k in data and data[k] != v]
    scale = data.get("layer_scale_init_value")
    if isinstance(scale, (int, float)) and (scale > 0) != (config.layer_scale > 0):
        wrong.append(f"layer_scale_init_value={scale!r} (expected {'> 0' if config.layer_scale > 0 else '0'})")
    return wrong
