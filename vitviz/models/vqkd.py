"""``vq-kd-tiny``: a VQ-KD visual tokenizer (BEiT v2, Peng et al., 2022, §2.2) distilled from ``dinov2-small``.

BEiT v2's tokenizer is trained so that its discrete codes *reconstruct a teacher's features*, not
pixels: an encoder maps each patch to a vector, the vector is l2-normalised and replaced by the
nearest code of an l2-normalised codebook (nearest = highest cosine similarity), and a decoder
predicts the teacher's feature of that patch from the codes; the loss is one minus the cosine
between prediction and teacher feature, plus a commitment term; gradients pass the lookup
straight through and the codebook follows an exponential moving average of the vectors assigned
to each code (microsoft/unilm ``beit2/norm_ema_quantizer.py``, ``NormEMAVectorQuantizer``;
``beit2/modeling_vqkd.py``, ``VQKD``).

What this module changes for a 2-core CPU, stated once (the card repeats it): BEiT v2's encoder
is a ViT-B trained on pixels. Here the encoder reads the **frozen teacher's own patch features**
(``dinov2-small``'s last layer, after its final LayerNorm) through one trainable transformer block,
so training never runs the teacher (its features are computed once per training crop and cached).
The decoder is one transformer block (BEiT v2: three). Neither has position embeddings, so the
tokenizer is equivariant to flips and works on any grid. Tokenizing an image therefore runs
``dinov2-small`` first (:meth:`VQKD.tokenize`).

Grid alignment: ``beit-tiny`` cuts a 224 image into 14x14 patches of 16 px. The teacher (patch 14)
sees the same image resized to 196 px, so its 14x14 patches cover the same 16 px squares
(:func:`teacher_size`).

Shapes: teacher features ``(B, H, W, Dt)`` (``Dt`` = 384), codes ``(B, H, W)`` int64, code
vectors ``(B, H, W, C)`` (``C`` = :attr:`VQKDConfig.code_dim`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from timm.models.vision_transformer import Block
from torch import nn

from .own_file import export_fp16, load_own_file

VQKD_FORMAT = "vitviz-vqkd"
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class VQKDConfig:
    """Architecture of a VQ-KD tokenizer over a frozen teacher's patch features.

    Attributes:
        teacher: registry name of the teacher backbone.
        img_size: the image side the tokenizer is used at (224: a 14x14 grid of ids).
        teacher_dim: the teacher's feature width ``Dt``.
        teacher_patch: the teacher's patch side in pixels.
        patch_size: the side of the image patch one token covers (``beit-tiny``'s 16).
        dim: width of the trainable encoder and decoder blocks.
        heads: attention heads of those blocks.
        encoder_blocks, decoder_blocks: their depths.
        codebook_size: ``K`` codes.
        code_dim: ``C``, the width of a code (BEiT v2: 32).
        decay: the codebook's EMA decay (BEiT v2: 0.99).
        beta: the commitment weight (BEiT v2: 1.0).
    """

    teacher: str = "dinov2-small"
    img_size: int = 224
    teacher_dim: int = 384
    teacher_patch: int = 14
    patch_size: int = 16
    dim: int = 192
    heads: int = 3
    encoder_blocks: int = 1
    decoder_blocks: int = 1
    codebook_size: int = 512
    code_dim: int = 32
    decay: float = 0.99
    beta: float = 1.0

    def to_dict(self) -> dict:
        """Every field, for the file's metadata."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "VQKDConfig":
        """Inverse of :meth:`to_dict`."""
        return cls(**d)


def teacher_size(image_size: int, config: VQKDConfig) -> int:
    """The side the teacher sees an ``image_size`` image at, so that its patches cover ``patch_size`` px each.

    224 -> 196 (14x14 teacher patches = beit-tiny's 14x14 patches of 16 px); 256 -> 224.

    Raises:
        ValueError: ``image_size`` is not a multiple of ``patch_size``.
    """
    if image_size % config.patch_size:
        raise ValueError(f"image side {image_size} is not a multiple of the token patch {config.patch_size}")
    return image_size // config.patch_size * config.teacher_patch


class VQKD(nn.Module):
    """Encoder over teacher features -> l2-normalised code lookup by cosine -> decoder to teacher features.

    :meth:`tokenize` takes images, as :class:`~vitviz.models.vqvae.VQTokenizer`'s does: it runs the teacher
    through ``teacher_fn`` (images ``(B, 3, S, S)`` in [0, 1] -> features ``(B, S/16, S/16, Dt)``), which
    :func:`attach_teacher` sets (:func:`vitviz.models.loading.load_model` attaches ``dinov2-small``).
    """

    def __init__(self, config: VQKDConfig = VQKDConfig()) -> None:
        super().__init__()
        c = self.config = config
        self.in_proj = nn.Linear(c.teacher_dim, c.dim)
        self.encoder = nn.ModuleList([Block(c.dim, c.heads, qkv_bias=True) for _ in range(c.encoder_blocks)])
        # BEiT v2's encode_task_layer: Linear, Tanh, Linear to the code width.
        self.encode_task = nn.Sequential(nn.Linear(c.dim, c.dim), nn.Tanh(), nn.Linear(c.dim, c.code_dim))
        self.register_buffer("codebook", F.normalize(torch.randn(c.codebook_size, c.code_dim), dim=-1))
        # EMA statistics: training state, not part of the file (the training checkpoint saves them).
        self.register_buffer("cluster_size", torch.zeros(c.codebook_size), persistent=False)
        self.register_buffer("embed_sum", torch.zeros(c.codebook_size, c.code_dim), persistent=False)
        self.register_buffer("idle", torch.zeros(c.codebook_size, dtype=torch.long), persistent=False)
        self.teacher_fn: Callable[[torch.Tensor], torch.Tensor] | None = None
        self.dec_proj = nn.Linear(c.code_dim, c.dim)
        self.decoder = nn.ModuleList([Block(c.dim, c.heads, qkv_bias=True) for _ in range(c.decoder_blocks)])
        self.decode_task = nn.Sequential(nn.Linear(c.dim, c.dim), nn.Tanh(), nn.Linear(c.dim, c.teacher_dim))

    def encode(self, feats: torch.Tensor) -> torch.Tensor:
        """Teacher features ``(B, H, W, Dt)`` -> l2-normalised vectors ``(B, H, W, C)``."""
        b, h, w, _ = feats.shape
        x = self.in_proj(feats.flatten(1, 2))
        for blk in self.encoder:
            x = blk(x)
        return F.normalize(self.encode_task(x), dim=-1).view(b, h, w, -1)

    def lookup(self, z: torch.Tensor) -> torch.Tensor:
        """Nearest code by cosine similarity: ``(..., C)`` unit vectors -> ``(...)`` int64 ids."""
        return lookup_codes(z, self.codebook)

    def tokenize_features(self, feats: torch.Tensor) -> torch.Tensor:
        """Teacher features ``(B, H, W, Dt)`` -> code ids ``(B, H, W)``."""
        return self.lookup(self.encode(feats))

    def decode_vectors(self, zq: torch.Tensor) -> torch.Tensor:
        """Code vectors ``(B, H, W, C)`` -> predicted teacher features ``(B, H, W, Dt)``."""
        b, h, w, _ = zq.shape
        x = self.dec_proj(zq.flatten(1, 2))
        for blk in self.decoder:
            x = blk(x)
        return self.decode_task(x).view(b, h, w, -1)

    def decode(self, ids: torch.Tensor) -> torch.Tensor:
        """Code ids ``(B, H, W)`` -> predicted teacher features ``(B, H, W, Dt)``."""
        return self.decode_vectors(self.codebook[ids])

    @property
    def patch_size(self) -> int:
        """Image pixels per token side (16)."""
        return self.config.patch_size

    @property
    def codebook_size(self) -> int:
        """``K``."""
        return self.config.codebook_size

    @torch.no_grad()
    def features(self, imgs01: torch.Tensor) -> torch.Tensor:
        """``(B, 3, S, S)`` in [0, 1] -> the teacher's features ``(B, S/16, S/16, Dt)``, on the images' device."""
        if self.teacher_fn is None:
            raise RuntimeError("this VQ-KD tokenizer has no teacher attached (vitviz.models.vqkd.attach_teacher)")
        return self.teacher_fn(imgs01)

    @torch.no_grad()
    def tokenize(self, imgs01: torch.Tensor) -> torch.Tensor:
        """``(B, 3, S, S)`` in [0, 1] -> ids ``(B, S/16, S/16)`` int64."""
        return self.tokenize_features(self.features(imgs01))

    def forward(self, feats: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One training pass.

        Returns:
            ``(reconstruction (B, H, W, Dt), ids (B, H, W), z (B, H, W, C) before quantisation,
            commitment loss (scalar))``; the reconstruction's gradient reaches the encoder straight
            through the lookup.
        """
        z = self.encode(feats)
        ids = self.lookup(z)
        zq = self.codebook[ids]
        commit = self.config.beta * F.mse_loss(z, zq.detach())
        return self.decode_vectors(straight_through(z, zq)), ids, z, commit

    @torch.no_grad()
    def ema_update(self, z: torch.Tensor, ids: torch.Tensor, g: torch.Generator | None = None,
                   dead_after: int = 0) -> int:
        """BEiT v2's normalised EMA codebook step; a code no vector has chosen for ``dead_after`` steps restarts
        at a random vector of this batch (a vitviz addition; 0 turns it off).

        Args:
            z: ``(..., C)`` unit vectors; ids: ``(...)`` their codes.

        Returns:
            how many codes were restarted.
        """
        c = self.config
        zf = z.reshape(-1, c.code_dim)
        onehot = F.one_hot(ids.reshape(-1), c.codebook_size).to(zf.dtype)  # (N, K)
        counts = onehot.sum(0)
        self.cluster_size.mul_(c.decay).add_(counts, alpha=1 - c.decay)
        self.embed_sum.mul_(c.decay).add_(onehot.t() @ zf, alpha=1 - c.decay)
        used = self.cluster_size > 1e-6
        new = F.normalize(self.embed_sum / self.cluster_size.clamp_min(1e-6)[:, None], dim=-1)
        self.codebook.copy_(torch.where(used[:, None], new, self.codebook))
        self.idle.add_(1).masked_fill_(counts > 0, 0)
        if dead_after <= 0:
            return 0
        dead = (self.idle >= dead_after).nonzero().flatten()
        if dead.numel():
            pick = torch.randint(0, zf.shape[0], (dead.numel(),), generator=g)
            self.codebook[dead] = zf[pick]
            self.embed_sum[dead] = zf[pick] * (1 - c.decay)
            self.cluster_size[dead] = 1 - c.decay
            self.idle[dead] = 0
        return int(dead.numel())


def lookup_codes(z: torch.Tensor, codebook: torch.Tensor) -> torch.Tensor:
    """Index of the code with the highest cosine similarity to each vector.

    Args:
        z: ``(..., C)``; codebook: ``(K, C)``. Both are l2-normalised here, so the
            result does not depend on their lengths.

    Returns:
        ``(...)`` int64.
    """
    return (F.normalize(z, dim=-1) @ F.normalize(codebook, dim=-1).t()).argmax(-1)


def straight_through(z: torch.Tensor, zq: torch.Tensor) -> torch.Tensor:
    """``zq``'s values with ``z``'s gradient (the straight-through estimator): ``z + (zq - z).detach()``."""
    return z + (zq - z).detach()


def cosine_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """BEiT v2's reconstruction loss: mean over positions of ``1 - cos(pred, target)`` (last axis)."""
    return (1 - F.cosine_similarity(pred, target, dim=-1)).mean()


def code_usage(ids: torch.Tensor, codebook_size: int) -> dict[str, float]:
    """How a set of token ids uses the codebook.

    Returns:
        ``{"codes_used": distinct ids, "perplexity": exp(entropy) of their frequencies (nats),
        "tokens": how many ids}``.
    """
    counts = torch.bincount(ids.reshape(-1).long(), minlength=codebook_size).double()
    p = counts / counts.sum().clamp_min(1)
    nz = p[p > 0]
    return {"codes_used": int((counts > 0).sum()), "perplexity": float(torch.exp(-(nz * nz.log()).sum())),
            "tokens": int(counts.sum())}


def teacher_features(teacher: nn.Module, imgs01: torch.Tensor, config: VQKDConfig) -> torch.Tensor:
    """The teacher's last-layer patch features (after its final norm), grid-aligned with 16 px patches.

    Args:
        teacher: a timm ViT (``dinov2-small``) built for input side ``teacher_size(S)``.
        imgs01: ``(B, 3, S, S)`` RGB in [0, 1], ``S`` a multiple of ``patch_size``.

    Returns:
        ``(B, S/16, S/16, Dt)`` float32.
    """
    s = imgs01.shape[-1]
    t = teacher_size(s, config)
    x = F.interpolate(imgs01, size=(t, t), mode="bicubic", antialias=True, align_corners=False).clamp_(0, 1)
    mean = torch.tensor(IMAGENET_MEAN, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    out = teacher.forward_features((x - mean) / std)  # (B, 1 + g*g, Dt)
    g = s // config.patch_size
    return out[:, -g * g:].reshape(out.shape[0], g, g, -1).float()


def attach_teacher(model: VQKD, load: Callable[[str, int], nn.Module]) -> VQKD:
    """Give a VQ-KD tokenizer its teacher: ``teacher_fn`` = images ``(B, 3, S, S)`` -> the features of
    ``load(config.teacher, teacher_size(S))`` (called at each use; the loader caches), on the images' device.

    Returns:
        ``model``.
    """
    config = model.config

    def run(imgs01: torch.Tensor) -> torch.Tensor:
        teacher = load(config.teacher, teacher_size(imgs01.shape[-1], config))
        if next(teacher.parameters()).device != imgs01.device:
            teacher.to(imgs01.device)
        return teacher_features(teacher, imgs01, config)

    model.teacher_fn = run
    return model


def export_vqkd(model: VQKD, path: Path, extra: dict[str, str] | None = None) -> None:
    """Write ``model`` as fp16 safetensors (format ``vitviz-vqkd``, config in the metadata; no EMA statistics)."""
    export_fp16(model, path, VQKD_FORMAT, extra)


def load_vqkd_file(path: Path) -> tuple[VQKD, dict[str, str]]:
    """A ``vitviz-vqkd`` file as an fp32 :class:`VQKD` (strict)."""
    return load_own_file(path, VQKD_FORMAT, lambda cfg: VQKD(VQKDConfig.from_dict(cfg)))
