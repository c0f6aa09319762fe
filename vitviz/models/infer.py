"""Architectures read from a checkpoint's tensors: names and shapes in, a config out.

A state dict already renamed to timm / facebookresearch/mae names (see
:mod:`vitviz.models.local` for the layouts) says almost everything about its model:

=====================================  ==================================================
what                                   read from
=====================================  ==================================================
patch size ``P``, width ``D``          ``patch_embed.proj.weight`` ``(D, 3, P, P)``
depth                                  the ``blocks.{i}`` indices
MLP ratio                              ``blocks.0.mlp.fc1.weight`` ``(ratio * D, D)``
prefix tokens                          ``cls_token``, ``dist_token`` (DeiT), ``reg_token`` ``(1, R, D)``
patch grid                             ``pos_embed`` ``(1, prefix + g*g, D)``, or ``(1, g*g, D)``
                                       when the prefix tokens have no position (registers)
classifier                             ``head.weight`` ``(classes, D)`` (``head_dist`` for DeiT)
decoder (MAE)                          ``decoder_embed.weight`` ``(Dd, D)``, ``decoder_blocks.{j}``
=====================================  ==================================================

The one thing the shapes cannot say is the number of attention heads (``qkv`` is
``(3D, D)`` for any split). It comes from the checkpoint's config or training arguments
when they name it, else from the family's convention: ``D / 64`` for encoders (ViT, DeiT,
DINO, MAE), ``Dd / 32`` for an MAE decoder (facebookresearch/mae: 512 wide, 16 heads);
:attr:`Arch.heads_from` says which, and the page shows it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import ModelUnavailable

Shapes = Mapping[str, tuple[int, ...]]

#: Head-count conventions when nothing in the file names it: width per head.
ENCODER_HEAD_WIDTH = 64
DECODER_HEAD_WIDTH = 32

_BLOCK = re.compile(r"(blocks|decoder_blocks)\.(\d+)\.")


@dataclass(frozen=True)
class Arch:
    """A ViT-family architecture inferred from a checkpoint.

    Attributes:
        kind: ``mae`` (encoder + decoder, :class:`~vitviz.models.mae.MaskedAutoencoderViT`)
            or ``vit`` (a timm ``VisionTransformer``; ``VisionTransformerDistilled`` with
            a distillation token).
        patch_size: ``P``; ``grid``: patches per side; ``embed_dim``: ``D``; ``depth``: blocks.
        num_heads: encoder heads; ``heads_from`` says where that number came from.
        mlp_ratio: MLP hidden width over ``D``.
        qkv_bias: the qkv projection has a bias.
        class_token, dist_token: the class / distillation tokens exist.
        reg_tokens: register tokens ``R``.
        no_embed_class: the prefix tokens carry no position embedding.
        num_classes: classifier outputs (0 = no head).
        global_pool: ``token`` (class token read out) or ``avg`` (``fc_norm`` over patches).
        layer_scale: blocks have LayerScale (``ls1.gamma``).
        pre_norm: a LayerNorm before the blocks (``norm_pre``).
        decoder: ``(width, depth, heads)`` of an MAE decoder, else None;
            ``decoder_heads_from`` as ``heads_from``.
    """

    kind: str
    patch_size: int
    grid: int
    embed_dim: int
    depth: int
    num_heads: int
    heads_from: str
    mlp_ratio: float = 4.0
    qkv_bias: bool = True
    class_token: bool = True
    dist_token: bool = False
    reg_tokens: int = 0
    no_embed_class: bool = False
    num_classes: int = 0
    global_pool: str = "token"
    layer_scale: bool = False
    pre_norm: bool = False
    decoder: tuple[int, int, int] | None = None
    decoder_heads_from: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def img_size(self) -> int:
        """Input side in pixels: ``grid * P``."""
        return self.grid * self.patch_size

    @property
    def prefix(self) -> tuple[str, ...]:
        """Names of the prefix tokens, in sequence order."""
        return (("cls",) if self.class_token else ()) + (("dist",) if self.dist_token else ()) + tuple(
            f"reg{i}" for i in range(self.reg_tokens))

    def describe(self) -> str:
        """One sentence: what was inferred, for the model's card."""
        prefix = {"cls": "class", "dist": "distillation"}
        names = [prefix.get(p, "") for p in self.prefix if p in prefix]
        if self.reg_tokens:
            names.append(f"{self.reg_tokens} register")
        tokens = (" and ".join(names) + " token" + ("s" if len(self.prefix) > 1 else "")) if names else "no prefix token"
        head = (f"a {self.num_classes}-class classifier" + (" (and a distillation head)" if self.dist_token else "")
                if self.num_classes else "no classifier head")
        text = (f"patch {self.patch_size}, {self.grid}×{self.grid} grid ({self.img_size} px), {self.embed_dim} wide, "
                f"{self.depth} blocks, {self.num_heads} heads ({self.heads_from}), MLP ×{self.mlp_ratio:g}, {tokens}, "
                f"{head}")
        if self.layer_scale:
            text += ", LayerScale"
        if self.global_pool == "avg":
            text += ", average-pooled read-out"
        if self.decoder is not None:
            w, d, h = self.decoder
            text += f"; decoder {w} wide, {d} blocks, {h} heads ({self.decoder_heads_from})"
        return text


def _listed(keys: list[str], limit: int = 8) -> str:
    return ", ".join(keys[:limit]) + (f", ... ({len(keys)} in all)" if len(keys) > limit else "")


def found(shapes: Shapes, limit: int = 8) -> str:
    """What a file holds, for a sentence: ``N tensors: a (1, 1, 768), b ...`` (top-level groups)."""
    groups: dict[str, int] = {}
    for k in shapes:
        top = _BLOCK.sub(r"\1.*.", k).split(".")[0]
        groups[top] = groups.get(top, 0) + 1
    parts = [f"{g} ({n})" if n > 1 else g for g, n in list(groups.items())[:limit]]
    more = f", ... {len(groups) - limit} more groups" if len(groups) > limit else ""
    return f"{len(shapes)} tensors: {', '.join(parts)}{more}"


def _depth(shapes: Shapes, prefix: str) -> int:
    idx = {int(m.group(2)) for k in shapes if (m := _BLOCK.match(k)) and m.group(1) == prefix}
    if idx and idx != set(range(max(idx) + 1)):
        missing = sorted(set(range(max(idx) + 1)) - idx)
        raise ModelUnavailable(f"the checkpoint's {prefix} skip indices {missing[:8]}: it is incomplete")
    return len(idx)


def _heads(width: int, given: int | None, source: str, per_head: int, what: str) -> tuple[int, str]:
    """``(heads, where from)``: the given number (checked), else ``width // per_head``."""
    if given is not None:
        if given < 1 or width % given:
            raise ModelUnavailable(f"{what}: {given} heads do not divide the width {width}")
        return int(given), source
    if width % per_head:
        raise ModelUnavailable(f"{what}: width {width} is not a multiple of {per_head}, so the head count cannot be "
                               f"guessed; give it (heads=N)")
    return width // per_head, f"not in the file: width / {per_head}, the family's convention"


def _grid(positions: int, prefix: int, what: str) -> tuple[int, bool]:
    """``(grid side, no_embed_class)`` from a position table of ``positions`` rows."""
    for n, no_embed in ((positions - prefix, False), (positions, True)):
        g = math.isqrt(max(n, 0))
        if n > 0 and g * g == n:
            return g, no_embed and prefix > 0
    raise ModelUnavailable(f"{what}: pos_embed has {positions} positions, which is no square grid with or without "
                           f"{prefix} prefix token(s)")


def infer(shapes: Shapes, heads: int | None = None, heads_from: str = "", decoder_heads: int | None = None,
          decoder_heads_from: str = "", what: str = "the checkpoint") -> Arch:
    """The architecture of a timm / facebookresearch/mae state dict, from its names and shapes.

    Args:
        shapes: ``{name: shape}`` in timm / official MAE names.
        heads, decoder_heads: head counts named by the file's config or arguments, or by the
            person (None: the convention); ``*_from`` say where they came from.
        what: names the file in errors.

    Raises:
        ModelUnavailable: a sentence naming what the file holds when it is no ViT / MAE.
    """
    w = shapes.get("patch_embed.proj.weight")
    if w is None or len(w) != 4 or w[2] != w[3] or "pos_embed" not in shapes or not _depth(shapes, "blocks") or \
            "blocks.0.attn.qkv.weight" not in shapes:
        raise ModelUnavailable(f"{what} fits no layout vitviz knows (a ViT, DeiT, DINO or MAE needs "
                               f"patch_embed.proj.weight, pos_embed and blocks.N.attn.qkv); it holds {found(shapes)}")
    if w[1] != 3:
        raise ModelUnavailable(f"{what}: the patch embedding takes {w[1]} channels; vitviz shows RGB models only")
    if any(k.endswith(("mlp.fc1_g.weight", "mlp.fc1_x.weight", "mlp.w12.weight")) for k in shapes):
        raise ModelUnavailable(f"{what} has SwiGLU MLPs, which vitviz does not build")
    d, patch = int(w[0]), int(w[2])
    depth = _depth(shapes, "blocks")
    hidden = shapes.get("blocks.0.mlp.fc1.weight", (0,))[0]
    mlp_ratio = hidden / d
    cls, dist = "cls_token" in shapes, "dist_token" in shapes
    regs = int(shapes["reg_token"][1]) if "reg_token" in shapes else 0
    grid, no_embed = _grid(int(shapes["pos_embed"][1]), int(cls) + int(dist) + regs, what)
    num_heads, hfrom = _heads(d, heads, heads_from, ENCODER_HEAD_WIDTH, what)
    decoder = None
    dfrom = ""
    if "decoder_embed.weight" in shapes:
        dd = int(shapes["decoder_embed.weight"][0])
        ddepth = _depth(shapes, "decoder_blocks")
        dh, dfrom = _heads(dd, decoder_heads, decoder_heads_from, DECODER_HEAD_WIDTH, f"{what} (decoder)")
        dhidden = shapes.get("decoder_blocks.0.mlp.fc1.weight", (0,))[0]
        if ddepth and dhidden / dd != mlp_ratio:
            raise ModelUnavailable(f"{what}: the decoder's MLP ratio ({dhidden / dd:g}) differs from the encoder's "
                                   f"({mlp_ratio:g}); vitviz's MAE has one ratio for both")
        decoder = (dd, ddepth, dh)
    num_classes = int(shapes["head.weight"][0]) if "head.weight" in shapes else 0
    avg = "fc_norm.weight" in shapes
    arch = Arch(
        kind="mae" if decoder is not None else "vit", patch_size=patch, grid=grid, embed_dim=d, depth=depth,
        num_heads=num_heads, heads_from=hfrom, mlp_ratio=mlp_ratio, qkv_bias="blocks.0.attn.qkv.bias" in shapes,
        class_token=cls, dist_token=dist, reg_tokens=regs, no_embed_class=no_embed, num_classes=num_classes,
        global_pool="avg" if avg or not cls else "token", layer_scale="blocks.0.ls1.gamma" in shapes,
        pre_norm="norm_pre.weight" in shapes, decoder=decoder, decoder_heads_from=dfrom)
    if dist and not cls:
        raise ModelUnavailable(f"{what} has a distillation token but no class token")
    return arch
