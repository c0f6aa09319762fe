"""Key maps between the Hugging Face ViTMAE format and the official MAE format.

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
from collections.abc import Mapping

import torch

from ..errors import ModelUnavailable

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
    out: dict[str, torch.Tensor] = {}
    unknown: list[str] = []
    for key, value in state_dict.items():
        if key in TOP_KEYS:
            out[TOP_KEYS[key]] = value
            continue
        m = _OFFICIAL_BLOCK.fullmatch(key)
        if m is None:
            unknown.append(key)
            continue
        prefix, idx, module, kind = m.groups()
        base = f"{BLOCK_PREFIXES[prefix]}.{idx}"
        if module == "attn.qkv":
            if value.shape[0] % 3:
                raise ModelUnavailable(f"{key} has shape {tuple(value.shape)}: its first side is not 3 x width")
            for part, chunk in zip(QKV_PARTS, value.chunk(3, dim=0)):
                out[f"{base}.attention.attention.{part}.{kind}"] = chunk
        elif module in BLOCK_MODULES:
            out[f"{base}.{BLOCK_MODULES[module]}.{kind}"] = value
        else:
            unknown.append(key)
    if unknown:
        raise ModelUnavailable(f"not an official MAE state dict: unexpected {len(unknown)} keys ({_list(sorted(unknown))})")
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
