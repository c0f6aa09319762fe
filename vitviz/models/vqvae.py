"""``vq-tiny``: a small VQ-VAE that turns an image into a grid of discrete visual tokens.

BEiT (Bao et al., 2021) needs a *visual tokenizer*: every 16x16 patch of an image
becomes one id from a learned codebook, and a decoder turns a grid of ids back into
pixels. BEiT used DALL-E's dVAE (8192 codes); vitviz trains its own, much smaller one.

Architecture (``img_size`` 224, patch 16 -> a 14x14 grid of ids):

* encoder: a linear map of each patch's pixels (``3*16*16``) to ``code_dim``
  numbers (initialised as the patches' principal components) plus a residual
  3x3-convolution block over the grid, zero-initialised (so it starts as the
  plain projection and learns to use neighbouring patches): three 3x3 convolutions, so a code sees
  7x7 patches, weighted mostly towards its 3x3 neighbourhood;
* quantiser: nearest code (Euclidean) in a codebook of ``codebook_size`` vectors,
  updated by exponential moving averages (van den Oord et al., 2017, appendix),
  unused codes restarted from encoder outputs of the batch; initialised by
  k-means of the encoder outputs;
* decoder: a linear map of each code back to a patch's pixels (initialised as the
  inverse projection) plus a correction computed by 3x3 convolutions over the grid
  of code vectors (zero-initialised output layer; five 3x3 convolutions: 11x11 codes), so each patch is
  decoded with its neighbours' codes in view: this is what a per-patch codebook cannot do.

Pixels go in and come out in [0, 1].
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..core.patches import SquarePatchGrid
from .own_file import export_fp16, load_own_file

VQ_FORMAT = "vitviz-vqvae"


@dataclass(frozen=True)
class VQConfig(SquarePatchGrid):
    """Architecture of the tokenizer."""

    img_size: int = 224
    patch_size: int = 16
    codebook_size: int = 512
    code_dim: int = 64
    hidden: int = 128
    decoder_blocks: int = 2
    ema_decay: float = 0.99

    @property
    def patch_dim(self) -> int:
        """Numbers per patch: ``3 * p * p``."""
        return 3 * self.patch_size**2

    def to_dict(self) -> dict:
        """Plain dict for safetensors metadata and model cards."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "VQConfig":
        """Inverse of :meth:`to_dict` (unknown keys raise ``TypeError``)."""
        return cls(**d)


def patch_grid(imgs: torch.Tensor, p: int) -> torch.Tensor:
    """``(N, 3, H, W)`` -> ``(N, H/p, W/p, 3*p*p)``, each patch flattened channel-major."""
    n, c, h, w = imgs.shape
    return imgs.reshape(n, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).reshape(n, h // p, w // p, c * p * p)


def grid_image(patches: torch.Tensor, p: int) -> torch.Tensor:
    """Inverse of :func:`patch_grid`: ``(N, gh, gw, 3*p*p)`` -> ``(N, 3, gh*p, gw*p)``."""
    n, gh, gw, _ = patches.shape
    return patches.reshape(n, gh, gw, 3, p, p).permute(0, 3, 1, 4, 2, 5).reshape(n, 3, gh * p, gw * p)


class ResBlock(nn.Module):
    """``x + conv3x3(gelu(conv3x3(gelu(x))))``; ``(N, C, h, w)`` -> same."""

    def __init__(self, ch: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv2(F.gelu(self.conv1(F.gelu(x))))


class GridContext(nn.Module):
    """Residual context over a grid of vectors: ``(N, gh, gw, Din)`` -> ``(N, gh, gw, Dout)``.

    ``conv_in`` (3x3) to ``hidden`` channels, ``blocks`` residual blocks, ``conv_out``
    (1x1, zero-initialised, so the module starts as the zero function).
    """

    def __init__(self, d_in: int, hidden: int, d_out: int, blocks: int) -> None:
        super().__init__()
        self.conv_in = nn.Conv2d(d_in, hidden, 3, padding=1)
        self.blocks = nn.Sequential(*[ResBlock(hidden) for _ in range(blocks)])
        self.conv_out = nn.Conv2d(hidden, d_out, 1)
        nn.init.zeros_(self.conv_out.weight)
        nn.init.zeros_(self.conv_out.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.blocks(self.conv_in(x.permute(0, 3, 1, 2)))
        return self.conv_out(F.gelu(h)).permute(0, 2, 3, 1)


class VQTokenizer(nn.Module):
    """Encoder, EMA codebook and decoder.

    Shapes: images ``(N, 3, H, W)`` in [0, 1] with ``H, W`` multiples of the patch
    size -> ids ``(N, H/p, W/p)`` int64 -> decoded ``(N, 3, H, W)`` in [0, 1].
    """

    def __init__(self, config: VQConfig = VQConfig()) -> None:
        super().__init__()
        c = config
        self.config = c
        self.encoder = nn.Module()
        self.encoder.proj = nn.Linear(c.patch_dim, c.code_dim)
        self.encoder.context = GridContext(c.code_dim, c.hidden // 2, c.code_dim, 1)
        self.decoder = nn.Module()
        self.decoder.proj = nn.Linear(c.code_dim, c.patch_dim)
        self.decoder.context = GridContext(c.code_dim, c.hidden, c.patch_dim, c.decoder_blocks)
        g = torch.Generator().manual_seed(0)
        book = torch.randn(c.codebook_size, c.code_dim, generator=g) * 0.1
        self.register_buffer("codebook", book)  # (K, D)
        self.register_buffer("ema_count", torch.ones(c.codebook_size))
        self.register_buffer("ema_sum", book.clone())

    @property
    def patch_size(self) -> int:
        """Pixels per token side."""
        return self.config.patch_size

    @property
    def codebook_size(self) -> int:
        """Number of codes ``K``."""
        return self.config.codebook_size

    @torch.no_grad()
    def init_from_data(self, mean: torch.Tensor, components: torch.Tensor, centroids: torch.Tensor,
                       counts: torch.Tensor) -> None:
        """Start from principal components and k-means (computed by the trainer).

        Args:
            mean: ``(P,)`` mean patch.
            components: ``(D, P)`` orthonormal rows (top principal directions).
            centroids: ``(K, D)`` k-means centroids of the projected patches.
            counts: ``(K,)`` expected uses of each code per batch (EMA start values).
        """
        self.encoder.proj.weight.copy_(components)
        self.encoder.proj.bias.copy_(-components @ mean)
        self.decoder.proj.weight.copy_(components.t())
        self.decoder.proj.bias.copy_(mean)
        self.codebook.copy_(centroids)
        self.ema_count.copy_(counts)
        self.ema_sum.copy_(centroids * counts[:, None])

    def encode(self, imgs: torch.Tensor) -> torch.Tensor:
        """``(N, 3, H, W)`` in [0, 1] -> ``(N, gh, gw, D)`` encoder vectors."""
        z = self.encoder.proj(patch_grid(imgs, self.patch_size))
        return z + self.encoder.context(z)

    def lookup(self, z: torch.Tensor) -> torch.Tensor:
        """Nearest code (Euclidean): ``(..., D)`` -> ids ``(...)`` int64."""
        flat = z.reshape(-1, z.shape[-1])
        d = self.codebook.pow(2).sum(1)[None, :] - 2.0 * flat @ self.codebook.t()
        return d.argmin(dim=-1).reshape(z.shape[:-1])

    def tokenize(self, imgs: torch.Tensor) -> torch.Tensor:
        """``(N, 3, H, W)`` in [0, 1] -> ids ``(N, gh, gw)`` int64."""
        return self.lookup(self.encode(imgs))

    def decode_vectors(self, zq: torch.Tensor) -> torch.Tensor:
        """``(N, gh, gw, D)`` code vectors -> ``(N, 3, p*gh, p*gw)`` pixels (not clamped)."""
        return grid_image(self.decoder.proj(zq) + self.decoder.context(zq), self.patch_size)

    def decode(self, ids: torch.Tensor) -> torch.Tensor:
        """ids ``(N, gh, gw)`` -> ``(N, 3, p*gh, p*gw)`` pixels clamped to [0, 1]."""
        return self.decode_vectors(self.codebook[ids]).clamp(0.0, 1.0)

    def forward(self, imgs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Training pass with a straight-through estimator.

        Args:
            imgs: ``(N, 3, H, W)`` in [0, 1].

        Returns:
            ``(recon (N, 3, H, W), ids (N, gh, gw), z (N, gh, gw, D))``: the decoded
            quantised image, the codes, and the encoder outputs (for the commitment
            loss ``|z - codebook[ids]|^2`` and the EMA update).
        """
        z = self.encode(imgs)
        ids = self.lookup(z.detach())
        zq = self.codebook[ids]
        z_st = z + (zq - z).detach()
        return self.decode_vectors(z_st), ids, z

    @torch.no_grad()
    def ema_update(self, z: torch.Tensor, ids: torch.Tensor, g: torch.Generator,
                   dead_below: float = 0.05, eps: float = 1e-5) -> int:
        """EMA codebook step and dead-code restarts.

        Args:
            z: ``(M, D)`` encoder outputs of the batch.
            ids: ``(M,)`` their assigned codes.
            g: generator choosing the restart vectors.
            dead_below: codes whose EMA count falls below this are restarted.
            eps: Laplace smoothing of the counts.

        Returns:
            The number of codes restarted.
        """
        k, decay = self.codebook_size, self.config.ema_decay
        count = torch.bincount(ids, minlength=k).to(z.dtype)
        sums = torch.zeros_like(self.ema_sum).index_add_(0, ids, z)
        self.ema_count.mul_(decay).add_(count, alpha=1 - decay)
        self.ema_sum.mul_(decay).add_(sums, alpha=1 - decay)
        n = self.ema_count.sum()
        smoothed = (self.ema_count + eps) / (n + k * eps) * n
        self.codebook.copy_(self.ema_sum / smoothed[:, None])
        dead = (self.ema_count < dead_below).nonzero().flatten()
        if dead.numel():
            pick = torch.randint(0, z.shape[0], (dead.numel(),), generator=g)
            fresh = z[pick]
            self.codebook[dead] = fresh
            self.ema_sum[dead] = fresh
            self.ema_count[dead] = 1.0
        return int(dead.numel())


def export_vq(model: VQTokenizer, path: Path, extra: dict[str, str] | None = None) -> None:
    """Write the model as fp16 safetensors with its config in the metadata (atomic; :func:`export_fp16`)."""
    export_fp16(model, path, VQ_FORMAT, extra)


def load_vq_file(path: Path) -> tuple[VQTokenizer, dict[str, str]]:
    """Build a model from a vitviz-vqvae safetensors file, strictly (fp32, eval mode).

    Raises:
        ValueError: not a vitviz-vqvae file.
        RuntimeError: keys or shapes do not match the config in its metadata.
    """
    return load_own_file(path, VQ_FORMAT, lambda d: VQTokenizer(VQConfig.from_dict(d)))
