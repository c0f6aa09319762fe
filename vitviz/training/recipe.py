"""Pieces of the mae-tiny training recipe: augmentation, a seam-aware loss, decoder growth, positional heads.

- :func:`augment`: random resized crops (area ``area_min``-100%, aspect 3/4-4/3),
  horizontal flips and, when ``jitter`` > 0, brightness / contrast / saturation jitter.
- :func:`gradient_loss`: squared error between the finite differences of the
  reconstruction (visible pixels pasted back) and of the target, over neighbouring
  pixel pairs that touch a hidden patch, optionally on the pairs across patch borders
  only (``inside_weight=0``). A flat tile whose edges jump against its neighbours pays
  for every jump; plain MSE does not tell that apart from a smooth guess.
- :func:`grow_decoder`: warm-start a deeper decoder from exported weights: the
  existing blocks keep their weights and the appended blocks start as identities
  (zero output projections), so the grown model computes what the old one did.
- :func:`positional_head`: a mimetic (position-similarity) query/key start for one
  encoder head, so that an early layer has a local head when training begins.
"""

from __future__ import annotations

import math
import re

import torch
import torch.nn.functional as F

from ..models.mae import MaskedAutoencoderViT


def augment(batch: torch.Tensor, size: int, g: torch.Generator, area_min: float = 0.35,
            jitter: float = 0.0) -> torch.Tensor:
    """Random resized crop, horizontal flip and colour jitter.

    Args:
        batch: ``(B, S, S, 3)`` uint8 crops.
        size: output side.
        g: generator.
        area_min: smallest crop area as a fraction of ``S * S``.
        jitter: strength of the brightness, contrast and saturation jitter (0 = none):
            each factor is drawn uniformly in ``[1 - jitter, 1 + jitter]``.

    Returns:
        ``(B, 3, size, size)`` float in [0, 1].
    """
    b, s = batch.shape[0], batch.shape[1]
    out = torch.empty(b, 3, size, size)
    x = batch.permute(0, 3, 1, 2).float().div_(255.0)
    r = torch.rand(b, 8, generator=g)
    for i in range(b):
        area = (area_min + (1 - area_min) * float(r[i, 0])) * s * s
        aspect = math.exp(math.log(3 / 4) + float(r[i, 1]) * (math.log(4 / 3) - math.log(3 / 4)))
        h = min(s, int(round(math.sqrt(area / aspect))))
        w = min(s, int(round(math.sqrt(area * aspect))))
        top = int(float(r[i, 2]) * (s - h + 1))
        left = int(float(r[i, 3]) * (s - w + 1))
        crop = x[i : i + 1, :, top : top + h, left : left + w]
        crop = F.interpolate(crop, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
        if float(r[i, 4]) < 0.5:
            crop = crop.flip(-1)
        if jitter > 0:
            bright, contrast, sat = (1 + jitter * (2 * r[i, 5:8] - 1)).tolist()
            crop = crop * bright
            crop = (crop - crop.mean()) * contrast + crop.mean()
            grey = crop.mean(dim=1, keepdim=True)
            crop = (crop - grey) * sat + grey
        out[i] = crop[0]
    return out.clamp_(0, 1)


def hidden_pixels(hidden: torch.Tensor, patch: int, grid: tuple[int, int]) -> torch.Tensor:
    """``(B, L)`` bool hidden patches -> ``(B, 1, gh*p, gw*p)`` bool hidden pixels."""
    gh, gw = grid
    m = hidden.view(-1, 1, gh, 1, gw, 1).expand(-1, 1, gh, patch, gw, patch)
    return m.reshape(-1, 1, gh * patch, gw * patch)


def gradient_loss(pred_img: torch.Tensor, target: torch.Tensor, hidden_px: torch.Tensor, patch: int = 16,
                  inside_weight: float = 1.0) -> torch.Tensor:
    """Squared error of neighbour differences of the pasted reconstruction vs the target.

    Args:
        pred_img: ``(B, C, H, W)`` prediction (any space, the same as ``target``).
        target: ``(B, C, H, W)``.
        hidden_px: ``(B, 1, H, W)`` bool, True on hidden pixels.
        patch: patch side (pairs straddling a multiple of it are *seam* pairs).
        inside_weight: weight of the pairs inside one patch (seam pairs weigh 1);
            0 penalises seams only, so the term never pushes a patch's inside towards flat.

    Returns:
        Scalar: weighted mean over channels and over the pairs (horizontal and vertical)
        with at least one hidden pixel.
    """
    comp = torch.where(hidden_px, pred_img, target)
    total = pred_img.new_zeros(())
    count = pred_img.new_zeros(())
    for dim in (-1, -2):
        n = comp.shape[dim]
        dc = comp.narrow(dim, 1, n - 1) - comp.narrow(dim, 0, n - 1)
        dt = target.narrow(dim, 1, n - 1) - target.narrow(dim, 0, n - 1)
        w = (hidden_px.narrow(dim, 1, n - 1) | hidden_px.narrow(dim, 0, n - 1)).to(pred_img.dtype)
        seam = (torch.arange(1, n, device=w.device) % patch == 0).to(w.dtype)
        shape = [1] * w.ndim
        shape[dim] = n - 1
        w = w * (inside_weight + (1.0 - inside_weight) * seam.view(shape))
        total = total + ((dc - dt).pow(2) * w).sum()
        count = count + w.sum() * pred_img.shape[1]
    return total / count.clamp(min=1.0)


_DECODER_BLOCK = re.compile(r"^decoder_blocks\.(\d+)\.")
_RESIDUAL_OUT = ("attn.proj.weight", "attn.proj.bias", "mlp.fc2.weight", "mlp.fc2.bias")


def grow_decoder(model: MaskedAutoencoderViT, state: dict[str, torch.Tensor]) -> int:
    """Load ``state`` (a shallower decoder's weights) into ``model``, new blocks as identities.

    Every key of ``state`` must exist in ``model`` with the same shape; the only keys
    ``model`` may have in addition are those of decoder blocks beyond the last one in
    ``state``. Those blocks keep their fresh initialisation except their output
    projections (``attn.proj``, ``mlp.fc2``), set to zero, so each is an identity
    map at the start. The result is loaded strictly.

    Returns:
        The number of appended blocks.

    Raises:
        ValueError: ``state`` does not fit ``model`` in any other way.
    """
    own = model.state_dict()
    old_depth = 1 + max((int(m.group(1)) for k in state if (m := _DECODER_BLOCK.match(k))), default=-1)
    unknown = sorted(set(state) - set(own))
    missing = [k for k in own if k not in state
               and not ((m := _DECODER_BLOCK.match(k)) and int(m.group(1)) >= old_depth)]
    wrong = [k for k in state if k in own and own[k].shape != state[k].shape]
    if unknown or missing or wrong:
        raise ValueError(f"weights do not fit this model: unexpected {unknown[:5]}, missing {missing[:5]}, "
                         f"shape mismatch {wrong[:5]}")
    full = {k: state[k].float() if k in state else v.clone() for k, v in own.items()}
    for k in full:
        m = _DECODER_BLOCK.match(k)
        if m and int(m.group(1)) >= old_depth and k.endswith(_RESIDUAL_OUT):
            full[k].zero_()
    model.load_state_dict(full, strict=True)
    return len(model.decoder_blocks) - old_depth


def positional_head(model: MaskedAutoencoderViT, layer: int, head: int, scale: float,
                    frequencies: int = 8) -> None:
    """Give one encoder head a positional ("mimetic") query/key initialisation, in place.

    Trockman & Kolter (ICML 2023, "Mimetic initialization of self-attention layers")
    start ``W_q W_k^T`` near a multiple of the identity, so that a head's attention
    follows the similarity of the tokens' position embeddings and is local at the
    start of training. Here it is done for one head of a trained model: the head's
    query and key rows read the same ``4 * frequencies`` coordinates of the normalised
    input: the sin and cos of both axes at the ``frequencies`` highest sin-cos
    frequencies, ``omega_i = 10000**(-i / (D/4))`` for ``i < frequencies``, whose
    similarity ``sum_i cos(omega_i * delta)`` peaks at ``delta = 0`` and falls off within
    a few patches, scaled by ``scale``; the head's other query/key rows are
    zeroed. Its value and output projections are left as trained; training then
    decides what the head keeps.

    Args:
        model: an MAE whose encoder input carries MAE's 2-D sin-cos position embedding.
        layer, head: 0-based indices.
        scale: the factor of the query and key rows (larger = more local at the start).
        frequencies: sin-cos frequencies per axis and per sin/cos half (``4 * frequencies``
            rows must fit in the head dimension).
    """
    blk = model.blocks[layer]
    dim = blk.attn.qkv.in_features
    heads = blk.attn.num_heads
    hd = dim // heads
    quarter = dim // 4
    coords = [b * quarter + i for b in range(4) for i in range(frequencies)]
    if len(coords) > hd:
        raise ValueError(f"{len(coords)} positional rows do not fit a head of {hd} dimensions")
    read = torch.zeros(len(coords), dim)
    read[torch.arange(len(coords)), torch.tensor(coords)] = 1.0
    gamma, beta = blk.norm1.weight.detach(), blk.norm1.bias.detach()
    read = read / gamma.clamp(min=1e-3)  # undo the norm's scale: rows read the normalised input
    with torch.no_grad():
        w, b = blk.attn.qkv.weight, blk.attn.qkv.bias
        for part in (0, 1):  # queries, keys
            start = part * dim + head * hd
            w[start : start + len(coords)] = scale * read
            b[start : start + len(coords)] = -scale * (read @ beta)
            w[start + len(coords) : start + hd] = 0.0
            b[start + len(coords) : start + hd] = 0.0


def wallclock_lr(peak: float, step: int, warmup: int, progress: float, min_frac: float) -> float:
    """The trainers' learning rate: linear warm-up over ``warmup`` steps, then a cosine from ``peak`` to
    ``min_frac * peak`` over the wall-clock budget (``progress`` = elapsed / budget, in [0, 1])."""
    lr = peak * min(1.0, (step + 1) / warmup)
    return lr * (min_frac + (1 - min_frac) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))
