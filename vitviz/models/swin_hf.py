"""Hugging Face Swin snapshots (``SwinModel`` / ``SwinForImageClassification``) as timm Swin modules.

transformers' Swin and timm's ``SwinTransformer`` hold the same numbers under other names, with
two differences of structure: transformers keeps the query, key and value projections apart
(timm stacks them, in that order, into ``qkv``), and it places each stage's patch merging at the
*end* of the stage (``layers.{i}.downsample``) where timm (0.9 and later) places it at the *start*
of the next (``layers.{i+1}.downsample``). Both concatenate the four 2x2 neighbours in the same
order (rows then columns: ``x[0::2, 0::2], x[1::2, 0::2], x[0::2, 1::2], x[1::2, 1::2]``), so the
merging weights carry over as they are.

=============================================================  ======================================
Hugging Face                                                   timm
=============================================================  ======================================
``swin.embeddings.patch_embeddings.projection.*``              ``patch_embed.proj.*``
``swin.embeddings.norm.*``                                     ``patch_embed.norm.*``
``swin.encoder.layers.{i}.blocks.{j}.layernorm_before.*``      ``layers.{i}.blocks.{j}.norm1.*``
``... .attention.self.{query,key,value}.*``                    ``... .attn.qkv.*`` (stacked q, k, v)
``... .attention.self.relative_position_bias_table``           ``... .attn.relative_position_bias_table``
``... .attention.output.dense.*``                              ``... .attn.proj.*``
``... .layernorm_after.*``                                     ``... .norm2.*``
``... .intermediate.dense.*`` / ``... .output.dense.*``        ``... .mlp.fc1.*`` / ``... .mlp.fc2.*``
``swin.encoder.layers.{i}.downsample.{reduction,norm}.*``      ``layers.{i+1}.downsample.*``
``swin.layernorm.*``                                           ``norm.*``
``classifier.*``                                               ``head.fc.*``
=============================================================  ======================================

``relative_position_index`` (a buffer transformers saves; timm recomputes it) and a masked-image
model's ``embeddings.mask_token`` are dropped and said so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import nn

from ..errors import ModelUnavailable

_BLOCK = re.compile(r"^encoder\.layers\.(\d+)\.blocks\.(\d+)\.(.+)$")
_MERGE = re.compile(r"^encoder\.layers\.(\d+)\.downsample\.(reduction|norm)\.(weight|bias)$")
_BLOCK_PARTS = {"layernorm_before.": "norm1.",
                "attention.self.relative_position_bias_table": "attn.relative_position_bias_table",
                "attention.output.dense.": "attn.proj.", "layernorm_after.": "norm2.",
                "intermediate.dense.": "mlp.fc1.", "output.dense.": "mlp.fc2."}
_TOP = {"embeddings.patch_embeddings.projection.": "patch_embed.proj.", "embeddings.norm.": "patch_embed.norm.",
        "layernorm.": "norm."}


@dataclass(frozen=True)
class SwinArch:
    """A Swin architecture as a Hugging Face ``config.json`` names it (a timm ``SwinTransformer``'s arguments).

    Attributes:
        img_size, patch_size, window_size: pixels, pixels per patch side, tokens per window side.
        embed_dim: width of the first stage (each stage doubles it).
        depths, num_heads: blocks and heads per stage.
        mlp_ratio: MLP width over the block's width.
        num_classes: classifier outputs (0: a backbone).
    """

    img_size: int
    patch_size: int
    window_size: int
    embed_dim: int
    depths: tuple[int, ...]
    num_heads: tuple[int, ...]
    mlp_ratio: float
    num_classes: int

    @classmethod
    def from_config(cls, config: Mapping, num_classes: int, what: str) -> "SwinArch":
        """Read a Swin ``config.json``; ``num_classes`` is the classifier the weights hold.

        Raises:
            ModelUnavailable: absolute position embeddings or non-RGB input (vitviz builds neither).
        """
        if config.get("use_absolute_embeddings"):
            raise ModelUnavailable(f"{what}: a Swin with absolute position embeddings; vitviz builds Swin with "
                                   f"relative position bias only")
        if int(config.get("num_channels", 3)) != 3:
            raise ModelUnavailable(f"{what}: num_channels={config.get('num_channels')}; vitviz shows RGB models only")
        try:
            return cls(int(config.get("image_size", 224)), int(config.get("patch_size", 4)),
                       int(config.get("window_size", 7)), int(config["embed_dim"]),
                       tuple(int(d) for d in config["depths"]), tuple(int(h) for h in config["num_heads"]),
                       float(config.get("mlp_ratio", 4.0)), num_classes)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelUnavailable(f"{what}: config.json does not describe a Swin ({exc!r})") from None

    def describe(self) -> str:
        """In words, for the model card."""
        return (f"Swin, patch {self.patch_size}, window {self.window_size}, {self.img_size} px, {self.embed_dim} wide, "
                f"depths {'-'.join(map(str, self.depths))}, heads {'-'.join(map(str, self.num_heads))}"
                + (f", a {self.num_classes}-class classifier" if self.num_classes else ", no classifier"))


def hf_swin_to_timm(sd: Mapping[str, torch.Tensor], what: str) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Hugging Face Swin names -> timm's (see the module's table); returns ``(state dict, dropped notes)``.

    Raises:
        ModelUnavailable: a block without all of its query, key and value, or a name the map does not know.
    """
    out: dict[str, torch.Tensor] = {}
    qkv: dict[tuple[str, str], dict[str, torch.Tensor]] = {}
    dropped: list[str] = []
    unknown: list[str] = []
    for key, value in sd.items():
        body = key.removeprefix("swin.")
        if body.endswith("relative_position_index"):
            continue  # a buffer: timm computes the same index
        if body == "embeddings.mask_token":
            dropped.append("embeddings.mask_token (used only when pre-training with masks)")
            continue
        if key.startswith("classifier."):
            out["head.fc." + key.removeprefix("classifier.")] = value
            continue
        top = next((p for p in _TOP if body.startswith(p)), None)
        if top is not None:
            out[_TOP[top] + body[len(top):]] = value
            continue
        m = _MERGE.match(body)
        if m:
            out[f"layers.{int(m.group(1)) + 1}.downsample.{m.group(2)}.{m.group(3)}"] = value
            continue
        m = _BLOCK.match(body)
        if m:
            stem, rest = f"layers.{m.group(1)}.blocks.{m.group(2)}.", m.group(3)
            qm = re.match(r"^attention\.self\.(query|key|value)\.(weight|bias)$", rest)
            if qm:
                qkv.setdefault((stem, qm.group(2)), {})[qm.group(1)] = value
                continue
            part = next((p for p in _BLOCK_PARTS if rest.startswith(p)), None)
            if part is not None:
                out[stem + _BLOCK_PARTS[part] + rest[len(part):]] = value
                continue
        unknown.append(key)
    for (stem, kind), parts in qkv.items():
        if set(parts) != {"query", "key", "value"}:
            raise ModelUnavailable(f"{what}: {stem}attention has {', '.join(sorted(parts))} {kind} but not all of "
                                   f"query, key and value")
        out[f"{stem}attn.qkv.{kind}"] = torch.cat([parts["query"], parts["key"], parts["value"]], dim=0)
    if unknown:
        shown = ", ".join(unknown[:6]) + (", ..." if len(unknown) > 6 else "")
        raise ModelUnavailable(f"{what}: {len(unknown)} tensors are not Swin's as transformers names them: {shown}")
    return out, dropped


def swin_module(a: SwinArch) -> nn.Module:
    """timm's ``SwinTransformer`` of ``a`` (random weights; load them strictly)."""
    from timm.models.swin_transformer import SwinTransformer

    return SwinTransformer(img_size=a.img_size, patch_size=a.patch_size, window_size=a.window_size,
                           embed_dim=a.embed_dim, depths=a.depths, num_heads=a.num_heads, mlp_ratio=a.mlp_ratio,
                           num_classes=a.num_classes)
