"""Checkpoints in the layouts people train (random weights, odd sizes), and an independent forward.

Nothing here uses vitviz's model code: the state dicts are written from the upstream names
and shapes (facebookresearch/mae ``models_mae.py``, timm ``vision_transformer.py`` /
``deit.py``, DINO's ``MultiCropWrapper``), and :func:`vit_forward` / :func:`mae_forward`
compute the published forward passes in plain torch, so a model vitviz builds from the
file can be compared number for number.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

EPS = 1e-6


def _t(g: torch.Generator, *shape: int, scale: float = 0.05) -> torch.Tensor:
    return torch.randn(*shape, generator=g) * scale


def _norm(g: torch.Generator, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    return 1 + _t(g, d, scale=0.1), _t(g, d, scale=0.1)


def blocks(g: torch.Generator, prefix: str, depth: int, d: int, hidden: int,
           layer_scale: bool = False) -> dict[str, torch.Tensor]:
    """timm ``Block`` tensors: ``{prefix}.{i}.norm1 / attn.qkv / attn.proj / norm2 / mlp.fc1 / mlp.fc2``."""
    out: dict[str, torch.Tensor] = {}
    for i in range(depth):
        b = f"{prefix}.{i}."
        out[b + "norm1.weight"], out[b + "norm1.bias"] = _norm(g, d)
        out[b + "attn.qkv.weight"], out[b + "attn.qkv.bias"] = _t(g, 3 * d, d, scale=0.1), _t(g, 3 * d)
        out[b + "attn.proj.weight"], out[b + "attn.proj.bias"] = _t(g, d, d), _t(g, d)
        out[b + "norm2.weight"], out[b + "norm2.bias"] = _norm(g, d)
        out[b + "mlp.fc1.weight"], out[b + "mlp.fc1.bias"] = _t(g, hidden, d), _t(g, hidden)
        out[b + "mlp.fc2.weight"], out[b + "mlp.fc2.bias"] = _t(g, d, hidden), _t(g, d)
        if layer_scale:
            out[b + "ls1.gamma"], out[b + "ls2.gamma"] = 1 + _t(g, d), 1 + _t(g, d)
    return out


def vit_state_dict(seed: int, d: int, depth: int, patch: int, grid: int, classes: int = 0, dist: bool = False,
                   registers: int = 0, layer_scale: bool = False) -> dict[str, torch.Tensor]:
    """A timm ``VisionTransformer`` (``VisionTransformerDistilled`` with ``dist``) state dict.

    With registers the position embedding covers the patches only (timm's ``no_embed_class``, as
    the ``*_reg4`` models).
    """
    g = torch.Generator().manual_seed(seed)
    sd: dict[str, torch.Tensor] = {"cls_token": _t(g, 1, 1, d, scale=0.5)}
    if dist:
        sd["dist_token"] = _t(g, 1, 1, d, scale=0.5)
    if registers:
        sd["reg_token"] = _t(g, 1, registers, d, scale=0.5)
    n_pos = grid * grid + (0 if registers else 1 + int(dist))
    sd["pos_embed"] = _t(g, 1, n_pos, d, scale=0.5)
    sd["patch_embed.proj.weight"], sd["patch_embed.proj.bias"] = _t(g, d, 3, patch, patch, scale=0.1), _t(g, d)
    sd.update(blocks(g, "blocks", depth, d, 4 * d, layer_scale))
    sd["norm.weight"], sd["norm.bias"] = _norm(g, d)
    if classes:
        sd["head.weight"], sd["head.bias"] = _t(g, classes, d), _t(g, classes)
        if dist:
            sd["head_dist.weight"], sd["head_dist.bias"] = _t(g, classes, d), _t(g, classes)
    return sd


def mae_state_dict(seed: int, d: int, depth: int, patch: int, grid: int, dd: int, ddepth: int
                   ) -> dict[str, torch.Tensor]:
    """A facebookresearch/mae ``MaskedAutoencoderViT`` state dict (``models_mae.py`` names)."""
    g = torch.Generator().manual_seed(seed)
    sd = {"cls_token": _t(g, 1, 1, d, scale=0.5), "pos_embed": _t(g, 1, 1 + grid * grid, d, scale=0.5),
          "patch_embed.proj.weight": _t(g, d, 3, patch, patch, scale=0.1), "patch_embed.proj.bias": _t(g, d)}
    sd.update(blocks(g, "blocks", depth, d, 4 * d))
    sd["norm.weight"], sd["norm.bias"] = _norm(g, d)
    if dd:
        sd["decoder_embed.weight"], sd["decoder_embed.bias"] = _t(g, dd, d), _t(g, dd)
        sd["mask_token"] = _t(g, 1, 1, dd, scale=0.5)
        sd["decoder_pos_embed"] = _t(g, 1, 1 + grid * grid, dd, scale=0.5)
        sd.update(blocks(g, "decoder_blocks", ddepth, dd, 4 * dd))
        sd["decoder_norm.weight"], sd["decoder_norm.bias"] = _norm(g, dd)
        sd["decoder_pred.weight"], sd["decoder_pred.bias"] = _t(g, patch * patch * 3, dd), _t(g, patch * patch * 3)
    return sd


def _ln(x: torch.Tensor, sd: dict, name: str) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], sd[name + ".weight"], sd[name + ".bias"], EPS)


def run_blocks(x: torch.Tensor, sd: dict, prefix: str, heads: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Pre-norm transformer blocks written out: ``(1, T, D)`` -> output and each layer's ``(H, T, T)``."""
    attns = []
    i = 0
    while f"{prefix}.{i}.attn.qkv.weight" in sd:
        b = f"{prefix}.{i}."
        t, d = x.shape[1], x.shape[2]
        qkv = F.linear(_ln(x, sd, b + "norm1"), sd[b + "attn.qkv.weight"], sd[b + "attn.qkv.bias"])
        q, k, v = qkv.reshape(1, t, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-2, -1) * (d // heads) ** -0.5, dim=-1)
        attns.append(a[0])
        y = F.linear((a @ v).transpose(1, 2).reshape(1, t, d), sd[b + "attn.proj.weight"], sd[b + "attn.proj.bias"])
        x = x + (y * sd[b + "ls1.gamma"] if b + "ls1.gamma" in sd else y)
        h = F.gelu(F.linear(_ln(x, sd, b + "norm2"), sd[b + "mlp.fc1.weight"], sd[b + "mlp.fc1.bias"]))
        y = F.linear(h, sd[b + "mlp.fc2.weight"], sd[b + "mlp.fc2.bias"])
        x = x + (y * sd[b + "ls2.gamma"] if b + "ls2.gamma" in sd else y)
        i += 1
    return x, attns


def vit_forward(sd: dict, x: torch.Tensor, heads: int) -> tuple[torch.Tensor | None, list[torch.Tensor]]:
    """The timm ViT / DeiT forward: ``(1, 3, S, S)`` -> logits (None without a head), per-layer attention."""
    w = sd["patch_embed.proj.weight"]
    t = F.conv2d(x, w, sd["patch_embed.proj.bias"], stride=w.shape[-1]).flatten(2).transpose(1, 2)
    prefix = [sd["cls_token"]] + [sd[k] for k in ("dist_token", "reg_token") if k in sd]
    if sd["pos_embed"].shape[1] == t.shape[1]:  # registers: positions on the patches only
        t = torch.cat(prefix + [t + sd["pos_embed"]], dim=1)
    else:
        t = torch.cat(prefix + [t], dim=1) + sd["pos_embed"]
    t, attns = run_blocks(t, sd, "blocks", heads)
    t = _ln(t, sd, "norm")
    if "head.weight" not in sd:
        return None, attns
    logits = F.linear(t[:, 0], sd["head.weight"], sd["head.bias"])
    if "head_dist.weight" in sd:
        logits = (logits + F.linear(t[:, 1], sd["head_dist.weight"], sd["head_dist.bias"])) / 2
    return logits[0], attns


def mae_forward(sd: dict, x: torch.Tensor, keep: torch.Tensor, heads: int, dheads: int) -> torch.Tensor:
    """facebookresearch/mae ``forward_encoder`` + ``forward_decoder`` with the visible ids ``keep``:
    ``(1, 3, S, S)`` -> ``(L, P*P*3)`` predictions."""
    w = sd["patch_embed.proj.weight"]
    t = F.conv2d(x, w, sd["patch_embed.proj.bias"], stride=w.shape[-1]).flatten(2).transpose(1, 2)
    t = t + sd["pos_embed"][:, 1:]
    n = t.shape[1]
    t = t[:, keep]
    t = torch.cat([sd["cls_token"] + sd["pos_embed"][:, :1], t], dim=1)
    t = _ln(run_blocks(t, sd, "blocks", heads)[0], sd, "norm")
    y = F.linear(t, sd["decoder_embed.weight"], sd["decoder_embed.bias"])
    full = sd["mask_token"].expand(1, n, -1).clone()
    full[:, keep] = y[:, 1:]
    y = torch.cat([y[:, :1], full], dim=1) + sd["decoder_pos_embed"]
    y = _ln(run_blocks(y, sd, "decoder_blocks", dheads)[0], sd, "decoder_norm")
    return F.linear(y, sd["decoder_pred.weight"], sd["decoder_pred.bias"])[0, 1:]
