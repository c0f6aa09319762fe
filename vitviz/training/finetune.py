"""Fine-tune mae-tiny, train the same ViT from scratch, and train a small CNN, on the labelled set.

The other protocols of the Pretraining tab (the first is the linear probe,
:mod:`vitviz.probing`). Every run uses the same photos (the ``train`` split of
``assets/labelled/manifest.json``), the same augmentations (random resized crop, scale
0.35-1, and horizontal flip), the same resolution, batch, epochs, AdamW, cosine schedule
with warm-up and label smoothing; only the network, its initialisation and the learning
rates differ:

- ``ft-llrd``: mae-tiny's encoder (8 blocks, width 192) + a new head on the average
  patch token, fine-tuned end to end with layer-wise learning-rate decay
  (:func:`vitviz.features.llrd.param_groups`; MAE's fine-tuning recipe, He et al. 2021
  §A.1 and table 9, uses 0.75 for ViT-B);
- ``ft``: the same with decay 1 (every layer at the base rate);
- ``scratch-vit``: the same architecture, randomly initialised (MAE's initialisation);
- ``scratch-cnn``: timm ``resnet10t`` (a ResNet-style CNN of comparable FLOPs at this
  resolution), randomly initialised.

Validation accuracy is logged every epoch (the only thing a person may look at to
choose); the test split is scored once, after the last epoch, and never steers a choice.
Each run writes ``<out>/<run>-s<seed>.jsonl`` (one line per epoch, then a ``final``
line) and checkpoints every epoch so an interrupted run resumes.

Usage::

    python -m vitviz.training.finetune --data .train/labelled --out .train/finetune \
        --runs ft-llrd ft scratch-vit scratch-cnn --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from timm.layers import PatchEmbed
from timm.models.vision_transformer import Block
from torch import nn

from ..core.pos_embed import sincos_pos_embed
from ..features.llrd import param_groups
from ..models.checkpoint import read_mae_file
from ..models.mae import init_like_mae

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


@dataclass(frozen=True)
class Recipe:
    """Everything a run depends on (written into every log)."""

    run: str
    resolution: int = 112
    epochs: int = 10
    batch: int = 32
    lr: float = 1e-3
    llrd: float = 1.0
    weight_decay: float = 0.05
    warmup_epochs: int = 1
    label_smoothing: float = 0.1
    drop_path: float = 0.1
    crop_scale: tuple[float, float] = (0.35, 1.0)


RECIPES: dict[str, Recipe] = {
    "ft-llrd": Recipe("ft-llrd", lr=5e-4, llrd=0.75),
    "ft": Recipe("ft", lr=5e-4, llrd=1.0),
    "scratch-vit": Recipe("scratch-vit", lr=1e-3),
    "scratch-cnn": Recipe("scratch-cnn", lr=1e-3, drop_path=0.0),
}


class ViTClassifier(nn.Module):
    """mae-tiny's encoder at ``img_size`` + LayerNorm + linear head on the average patch token.

    Parameter names follow MAE (``patch_embed``, ``cls_token``, ``pos_embed``,
    ``blocks.{i}``), so :func:`~vitviz.features.llrd.layer_id` finds every layer.
    Shapes: ``(N, 3, S, S)`` normalised -> ``(N, num_classes)`` logits.
    """

    def __init__(self, num_classes: int, img_size: int, embed_dim: int = 192, depth: int = 8, num_heads: int = 3,
                 patch_size: int = 16, drop_path: float = 0.0) -> None:
        super().__init__()
        norm = partial(nn.LayerNorm, eps=1e-6)
        self.patch_embed = PatchEmbed(img_size, patch_size, 3, embed_dim)
        grid = (img_size // patch_size,) * 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        pos = torch.from_numpy(sincos_pos_embed(embed_dim, grid)).float().unsqueeze(0)
        self.pos_embed = nn.Parameter(pos, requires_grad=False)  # fixed 2-D sin-cos, as in MAE
        dpr = np.linspace(0, drop_path, depth)
        self.blocks = nn.ModuleList([Block(embed_dim, num_heads, 4.0, qkv_bias=True, norm_layer=norm,
                                           drop_path=float(dpr[i])) for i in range(depth)])
        self.fc_norm = norm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)
        self._init()

    def _init(self) -> None:
        init_like_mae(self, self.cls_token)
        nn.init.trunc_normal_(self.head.weight, std=2e-5)  # MAE fine-tuning's head init

    def load_mae_encoder(self, path: Path) -> list[str]:
        """Copy an MAE file's encoder weights in (all of them; the position table is recomputed).

        Returns:
            The names loaded. Raises KeyError if the file lacks one of them.
        """
        sd, _ = read_mae_file(path)
        own = self.state_dict()
        names = [k for k in own if k.startswith(("patch_embed.", "blocks.")) or k == "cls_token"]
        missing = [k for k in names if k not in sd]
        if missing:
            raise KeyError(f"{path} lacks encoder weights {missing[:5]}")
        for k in names:
            if tuple(sd[k].shape) != tuple(own[k].shape):
                raise ValueError(f"{k}: file {tuple(sd[k].shape)} vs model {tuple(own[k].shape)}")
            own[k] = sd[k].float()
        self.load_state_dict(own, strict=True)
        return names

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.patch_embed(x) + self.pos_embed[:, 1:]
        cls = (self.cls_token + self.pos_embed[:, :1]).expand(t.shape[0], -1, -1)
        t = torch.cat([cls, t], dim=1)
        for blk in self.blocks:
            t = blk(t)
        return self.head(self.fc_norm(t[:, 1:].mean(dim=1)))


def build_net(recipe: Recipe, num_classes: int, init: Path | None) -> nn.Module:
    """The network of a run (``init``: the MAE file fine-tuning starts from)."""
    if recipe.run == "scratch-cnn":
        import timm

        return timm.create_model("resnet10t", num_classes=num_classes, pretrained=False)
    net = ViTClassifier(num_classes, recipe.resolution, drop_path=recipe.drop_path)
    if recipe.run.startswith("ft"):
        if init is None:
            raise ValueError("fine-tuning needs --init (the mae-tiny safetensors file)")
        net.load_mae_encoder(init)
    return net


def load_split(data: Path) -> tuple[dict[str, tuple[torch.Tensor, torch.Tensor]], list[str]]:
    """``{split: (uint8 (N, S, S, 3), int64 (N,))}`` and the class names, from the built set."""
    doc = json.loads((data / "manifest.json").read_text())
    classes = doc["classes"]
    out: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    for split in ("train", "val", "test"):
        rows = [r for r in doc["photos"] if r["split"] == split]
        imgs = np.stack([np.asarray(Image.open(data / "images" / f"{r['id']}.png").convert("RGB")) for r in rows])
        out[split] = (torch.from_numpy(imgs), torch.tensor([classes.index(r["label"]) for r in rows]))
    return out, classes


def augment(imgs: torch.Tensor, size: int, scale: tuple[float, float], gen: torch.Generator) -> torch.Tensor:
    """Random resized crop + horizontal flip: uint8 ``(N, S, S, 3)`` -> normalised ``(N, 3, size, size)``."""
    n, s = imgs.shape[0], imgs.shape[1]
    out = []
    for i in range(n):
        area = float(torch.empty(1).uniform_(*scale, generator=gen)) * s * s
        logr = float(torch.empty(1).uniform_(math.log(3 / 4), math.log(4 / 3), generator=gen))
        w = int(round(min(s, math.sqrt(area * math.exp(logr)))))
        h = int(round(min(s, math.sqrt(area / math.exp(logr)))))
        y = int(torch.randint(0, s - h + 1, (1,), generator=gen))
        x = int(torch.randint(0, s - w + 1, (1,), generator=gen))
        crop = imgs[i, y:y + h, x:x + w].permute(2, 0, 1)[None].float() / 255.0
        crop = F.interpolate(crop, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
        if bool(torch.rand(1, generator=gen) < 0.5):
            crop = crop.flip(-1)
        out.append(crop)
    return (torch.cat(out) - MEAN) / STD


def eval_view(imgs: torch.Tensor, size: int) -> torch.Tensor:
    """The whole photo resized: uint8 ``(N, S, S, 3)`` -> normalised ``(N, 3, size, size)``."""
    x = imgs.permute(0, 3, 1, 2).float() / 255.0
    return (F.interpolate(x, size=(size, size), mode="bilinear", antialias=True, align_corners=False) - MEAN) / STD


@torch.no_grad()
def evaluate(net: nn.Module, imgs: torch.Tensor, labels: torch.Tensor, size: int) -> tuple[float, float]:
    """``(accuracy, mean cross-entropy)`` on the whole photos."""
    net.eval()
    logits = torch.cat([net(eval_view(imgs[i:i + 64], size)) for i in range(0, len(imgs), 64)])
    return float((logits.argmax(1) == labels).float().mean()), float(F.cross_entropy(logits, labels))


def lr_at(step: int, total: int, warmup: int) -> float:
    """Linear warm-up then half-cosine, as a multiplier of each group's rate."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


def train_run(recipe: Recipe, seed: int, data: Path, out: Path, init: Path | None) -> dict:
    """Train one run (resuming from its checkpoint) and return its ``final`` record.

    timm builds its layers (and drops paths) with torch's global RNG: the run seeds it inside
    ``fork_rng``, so the caller's global state is the same afterwards.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return _train_run(recipe, seed, data, out, init)


def _train_run(recipe: Recipe, seed: int, data: Path, out: Path, init: Path | None) -> dict:
    splits, classes = load_split(data)
    net = build_net(recipe, len(classes), init)
    groups = param_groups(net, recipe.lr, recipe.llrd) if hasattr(net, "blocks") else \
        [{"params": list(net.parameters()), "lr": recipe.lr}]
    for g in groups:
        g["base_lr"] = g["lr"]
        g.pop("names", None)
    opt = torch.optim.AdamW(groups, lr=recipe.lr, weight_decay=recipe.weight_decay)
    gen = torch.Generator().manual_seed(seed)
    tag = f"{recipe.run}-s{seed}"
    log_path, ckpt = out / f"{tag}.jsonl", out / f"{tag}.ckpt.pt"
    out.mkdir(parents=True, exist_ok=True)
    start = 0
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=True)
        net.load_state_dict(state["net"], strict=True)
        opt.load_state_dict(state["opt"])
        gen.set_state(state["gen"])
        start = int(state["epoch"])
    elif log_path.exists():
        log_path.unlink()
    xtr, ytr = splits["train"]
    steps_per_epoch = math.ceil(len(xtr) / recipe.batch)
    total, warm = recipe.epochs * steps_per_epoch, recipe.warmup_epochs * steps_per_epoch
    if start == 0:
        with log_path.open("a") as f:
            f.write(json.dumps({"kind": "recipe", "seed": seed, **asdict(recipe), "classes": classes,
                                "n_train": len(xtr), "n_val": len(splits["val"][0]),
                                "params": sum(p.numel() for p in net.parameters())}) + "\n")
    for epoch in range(start, recipe.epochs):
        t0 = time.time()
        net.train()
        order = torch.randperm(len(xtr), generator=gen)
        losses, correct = [], 0
        for b in range(steps_per_epoch):
            step = epoch * steps_per_epoch + b
            for g in opt.param_groups:
                g["lr"] = g["base_lr"] * lr_at(step, total, warm)
            idx = order[b * recipe.batch:(b + 1) * recipe.batch]
            x = augment(xtr[idx], recipe.resolution, recipe.crop_scale, gen)
            logits = net(x)
            loss = F.cross_entropy(logits, ytr[idx], label_smoothing=recipe.label_smoothing)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            correct += int((logits.argmax(1) == ytr[idx]).sum())
        val_acc, val_loss = evaluate(net, *splits["val"], recipe.resolution)
        rec = {"kind": "epoch", "epoch": epoch + 1, "train_loss": float(np.mean(losses)),
               "train_acc": correct / len(xtr), "val_acc": val_acc, "val_loss": val_loss,
               "seconds": round(time.time() - t0, 2)}
        with log_path.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        torch.save({"net": net.state_dict(), "opt": opt.state_dict(), "gen": gen.get_state(), "epoch": epoch + 1},
                   ckpt)
        print(tag, rec, flush=True)
    test_acc, test_loss = evaluate(net, *splits["test"], recipe.resolution)
    final = {"kind": "final", "run": recipe.run, "seed": seed, "test_acc": test_acc, "test_loss": test_loss,
             "n_test": len(splits["test"][0])}
    lines = [json.loads(s) for s in log_path.read_text().splitlines()]
    if not any(r["kind"] == "final" for r in lines):
        with log_path.open("a") as f:
            f.write(json.dumps(final) + "\n")
    return final


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(".train/labelled"))
    ap.add_argument("--out", type=Path, default=Path(".train/finetune"))
    ap.add_argument("--init", type=Path, default=Path(__file__).resolve().parents[2] / "assets/models/mae-tiny.safetensors")
    ap.add_argument("--runs", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--epochs", type=int, default=None, help="override every recipe's epochs")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    for seed in args.seeds:
        for run in args.runs:
            recipe = RECIPES[run]
            if args.epochs is not None:
                recipe = Recipe(**{**asdict(recipe), "epochs": args.epochs})
            print(train_run(recipe, seed, args.data, args.out, args.init), flush=True)


if __name__ == "__main__":
    main()
