"""``vq-tiny``: a small VQ-VAE that turns an image into a grid of discrete visual tokens.

BEiT (Bao et al., 2021) needs a *visual tokenizer*: every 16x16 patch of an image
becomes one id from a learned codebook, and a decoder turns a grid of ids back into
pixels. BEiT used DALL-E's dVAE (8192 codes); vitviz trains its own, much smaller one.

Architecture (``img_size`` 224, stride 16 -> a 14x14 grid):

* encoder: four stride-2 4x4 convolutions (``widths``), a residual block at the
  1/16 scale, a 1x1 projection to ``code_dim`` and a batch norm without affine
  parameters (it removes the direction all vectors share at initialisation, which
  otherwise collapses the cosine lookup onto a few codes) -> ``(N, D, gh, gw)``;
* quantiser: cosine lookup (code vectors and encoder outputs are l2-normalised),
  codebook updated by exponential moving averages (van den Oord et al., 2017,
  appendix), unused codes restarted from encoder outputs of the current batch;
* decoder: a 3x3 convolution and two residual blocks at the 1/16 scale (so each
  patch is decoded with its neighbours' codes in view), four stride-2 transposed
  convolutions back to full resolution.

Pixels go in and come out in [0, 1] (the model maps them to [-1, 1] inside).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

VQ_FORMAT = "vitviz-vqvae"


@dataclass(frozen=True)
class VQConfig:
    """Architecture of the tokenizer. ``widths`` are the channels at 1/2, 1/4, 1/8, 1/16 scale."""

    img_size: int = 224
    patch_size: int = 16
    codebook_size: int = 512
    code_dim: int = 32
    widths: tuple[int, int, int, int] = (32, 64, 96, 128)
    out_width: int = 16
    ema_decay: float = 0.99

    @property
    def grid(self) -> tuple[int, int]:
        """``(gh, gw)`` token grid at ``img_size``."""
        g = self.img_size // self.patch_size
        return g, g

    def to_dict(self) -> dict:
        """Plain dict for safetensors metadata and model cards."""
        d = asdict(self)
        d["widths"] = list(self.widths)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "VQConfig":
        """Inverse of :meth:`to_dict` (unknown keys raise ``TypeError``)."""
        d = dict(d)
        d["widths"] = tuple(d["widths"])
        return cls(**d)


class ResBlock(nn.Module):
    """``x + conv3x3(gelu(conv3x3(gelu(x))))``; ``(N, C, h, w)`` -> same."""

    def __init__(self, ch: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv2(F.gelu(self.conv1(F.gelu(x))))


class VQTokenizer(nn.Module):
    """Encoder, cosine EMA codebook and decoder.

    Shapes: images ``(N, 3, H, W)`` in [0, 1], ``H = W = img_size`` (any multiple of
    16 works) -> ids ``(N, H/16, W/16)`` int64 -> decoded ``(N, 3, H, W)`` in [0, 1].
    """

    def __init__(self, config: VQConfig = VQConfig()) -> None:
        super().__init__()
        c = config
        self.config = c
        w0, w1, w2, w3 = c.widths
        self.encoder = nn.Sequential(
            nn.Conv2d(3, w0, 4, 2, 1), nn.GELU(),
            nn.Conv2d(w0, w1, 4, 2, 1), nn.GELU(),
            nn.Conv2d(w1, w2, 4, 2, 1), nn.GELU(),
            nn.Conv2d(w2, w3, 4, 2, 1),
            ResBlock(w3),
            nn.Conv2d(w3, c.code_dim, 1),
            nn.BatchNorm2d(c.code_dim, affine=False),  # centres the vectors, so they spread over the sphere
        )
        self.decoder = nn.Sequential(
            nn.Conv2d(c.code_dim, w3, 3, padding=1),
            ResBlock(w3), ResBlock(w3), nn.GELU(),
            nn.ConvTranspose2d(w3, w2, 4, 2, 1), nn.GELU(),
            nn.ConvTranspose2d(w2, w1, 4, 2, 1), nn.GELU(),
            nn.ConvTranspose2d(w1, w0, 4, 2, 1), nn.GELU(),
            nn.ConvTranspose2d(w0, c.out_width, 4, 2, 1), nn.GELU(),
            nn.Conv2d(c.out_width, 3, 3, padding=1),
        )
        g = torch.Generator().manual_seed(0)
        book = F.normalize(torch.randn(c.codebook_size, c.code_dim, generator=g), dim=1)
        self.register_buffer("codebook", book)  # (K, D), unit rows
        self.register_buffer("ema_count", torch.full((c.codebook_size,), 0.25))
        self.register_buffer("ema_sum", book.clone())

    @property
    def patch_size(self) -> int:
        """Pixels per token side (the encoder's stride)."""
        return self.config.patch_size

    @property
    def codebook_size(self) -> int:
        """Number of codes ``K``."""
        return self.config.codebook_size

    def encode(self, imgs: torch.Tensor) -> torch.Tensor:
        """``(N, 3, H, W)`` in [0, 1] -> unit vectors ``(N, gh, gw, D)``."""
        z = self.encoder(imgs * 2.0 - 1.0)
        return F.normalize(z.permute(0, 2, 3, 1), dim=-1)

    def lookup(self, z: torch.Tensor) -> torch.Tensor:
        """Nearest code by cosine similarity: ``(..., D)`` -> ids ``(...)`` int64."""
        return (z @ self.codebook.t()).argmax(dim=-1)

    def tokenize(self, imgs: torch.Tensor) -> torch.Tensor:
        """``(N, 3, H, W)`` in [0, 1] -> ids ``(N, gh, gw)`` int64."""
        return self.lookup(self.encode(imgs))

    def decode_vectors(self, zq: torch.Tensor) -> torch.Tensor:
        """``(N, gh, gw, D)`` code vectors -> ``(N, 3, 16 gh, 16 gw)`` pixels (not clamped)."""
        out = self.decoder(zq.permute(0, 3, 1, 2))
        return (out + 1.0) * 0.5

    def decode(self, ids: torch.Tensor) -> torch.Tensor:
        """ids ``(N, gh, gw)`` -> ``(N, 3, 16 gh, 16 gw)`` pixels clamped to [0, 1]."""
        return self.decode_vectors(self.codebook[ids]).clamp(0.0, 1.0)

    def forward(self, imgs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Training pass with a straight-through estimator.

        Args:
            imgs: ``(N, 3, H, W)`` in [0, 1].

        Returns:
            ``(recon (N, 3, H, W), ids (N, gh, gw), z (N, gh, gw, D))``: the decoded
            quantised image, the codes, and the unit encoder outputs (for the
            commitment loss ``|z - codebook[ids]|^2`` and the EMA update).
        """
        z = self.encode(imgs)
        ids = self.lookup(z.detach())
        zq = self.codebook[ids]
        z_st = z + (zq - z).detach()
        return self.decode_vectors(z_st), ids, z

    @torch.no_grad()
    def ema_update(self, z: torch.Tensor, ids: torch.Tensor, g: torch.Generator,
                   dead_below: float = 0.2) -> int:
        """EMA codebook step and dead-code restarts.

        Args:
            z: ``(M, D)`` unit encoder outputs of the batch.
            ids: ``(M,)`` their assigned codes.
            g: generator choosing the restart vectors.
            dead_below: codes whose EMA count falls below this are restarted.

        Returns:
            The number of codes restarted.
        """
        k, decay = self.codebook_size, self.config.ema_decay
        onehot_count = torch.bincount(ids, minlength=k).float()
        sums = torch.zeros_like(self.ema_sum).index_add_(0, ids, z)
        self.ema_count.mul_(decay).add_(onehot_count, alpha=1 - decay)
        self.ema_sum.mul_(decay).add_(sums, alpha=1 - decay)
        self.codebook.copy_(F.normalize(self.ema_sum, dim=1))
        dead = (self.ema_count < dead_below).nonzero().flatten()
        if dead.numel():
            pick = torch.randint(0, z.shape[0], (dead.numel(),), generator=g)
            fresh = F.normalize(z[pick] + 0.01 * torch.randn(dead.numel(), z.shape[1], generator=g), dim=1)
            self.codebook[dead] = fresh
            self.ema_sum[dead] = fresh
            self.ema_count[dead] = 0.25
        return int(dead.numel())


def export_vq(model: VQTokenizer, path: Path, extra: dict[str, str] | None = None) -> None:
    """Write the tokenizer as fp16 safetensors with its config in the metadata (atomic)."""
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sd = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()}
    meta = {"format": VQ_FORMAT, "config": json.dumps(model.config.to_dict())}
    meta.update(extra or {})
    tmp = path.with_suffix(".tmp")
    save_file(sd, str(tmp), metadata=meta)
    os.replace(tmp, path)


def load_vq_file(path: Path) -> tuple[VQTokenizer, dict[str, str]]:
    """Build a tokenizer from a vitviz-vqvae safetensors file, strictly (fp32, eval mode).

    Raises:
        ValueError: the file is not a vitviz-vqvae file.
        RuntimeError: keys or shapes do not match the config in its metadata.
    """
    from safetensors import safe_open
    from safetensors.torch import load_file

    with safe_open(str(path), framework="pt") as fh:
        meta = fh.metadata() or {}
    if meta.get("format") != VQ_FORMAT:
        raise ValueError(f"{Path(path).name} is not a {VQ_FORMAT} file (format={meta.get('format')!r})")
    model = VQTokenizer(VQConfig.from_dict(json.loads(meta["config"])))
    sd = {k: v.float() for k, v in load_file(str(path)).items()}
    model.load_state_dict(sd, strict=True)
    model.codebook.copy_(F.normalize(model.codebook, dim=1))  # fp16 rounding
    return model.eval(), meta
