"""Train the embedded ``mae-tiny`` model on CPU, resumably.

Usage::

    python -m vitviz.training.data --work .train/data           # gather photos (once)
    python -m vitviz.training.train_mae --data .train/data --hours 2      # train; rerun to resume

The learning rate follows a cosine over a *wall-clock* budget (``--hours``), so a
run on a busy machine still ends with a decayed rate. Every ``--save-every`` steps
the full state (model, optimiser, step, elapsed time, generator state) is written
to ``--ckpt`` and the weights are exported to ``--out`` (safetensors, fp16, with the
architecture in the metadata). Rerunning the same command resumes from ``--ckpt``;
``--init FILE`` starts a new schedule from exported weights (a warm restart).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..mae.baseline import ring_mean_fill
from ..core.images import DataConfig, load_image, normalize, square_resize, to_uint8, uint8_to_unit
from ..models.mae import MaskedAutoencoderViT
from ..models.registry import MAE_TINY_CONFIG
from ..models.checkpoint import export_mae, read_mae_file
from ..core.patches import patchify

DATA = DataConfig()


def augment(batch: torch.Tensor, size: int, g: torch.Generator) -> torch.Tensor:
    """Random resized crop (area 35-100%, aspect 3/4-4/3) and horizontal flip.

    Args:
        batch: ``(B, S, S, 3)`` uint8 crops.
        size: output side.
        g: generator.

    Returns:
        ``(B, 3, size, size)`` float in [0, 1].
    """
    b, s = batch.shape[0], batch.shape[1]
    out = torch.empty(b, 3, size, size)
    x = batch.permute(0, 3, 1, 2).float().div_(255.0)
    r = torch.rand(b, 5, generator=g)
    for i in range(b):
        area = (0.35 + 0.65 * float(r[i, 0])) * s * s
        aspect = math.exp(math.log(3 / 4) + float(r[i, 1]) * (math.log(4 / 3) - math.log(3 / 4)))
        h = min(s, int(round(math.sqrt(area / aspect))))
        w = min(s, int(round(math.sqrt(area * aspect))))
        top = int(float(r[i, 2]) * (s - h + 1))
        left = int(float(r[i, 3]) * (s - w + 1))
        crop = x[i : i + 1, :, top : top + h, left : left + w]
        crop = F.interpolate(crop, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
        if float(r[i, 4]) < 0.5:
            crop = crop.flip(-1)
        out[i] = crop[0]
    return out.clamp_(0, 1)


def random_keep(b: int, length: int, keep: int, g: torch.Generator) -> torch.Tensor:
    """Per-sample MAE masking: ``(B, keep)`` ids of the lowest-noise patches, sorted."""
    noise = torch.rand(b, length, generator=g)
    return noise.argsort(dim=1)[:, :keep].sort(dim=1).values


def hidden_loss(model: MaskedAutoencoderViT, imgs: torch.Tensor, ids_keep: torch.Tensor) -> torch.Tensor:
    """MSE over hidden patches in normalised pixel space (the MAE objective).

    Args:
        imgs: ``(B, 3, H, W)`` normalised images.
        ids_keep: ``(B, K)`` visible patch ids.
    """
    pred = model(imgs, ids_keep)
    target = patchify(imgs, model.patch_size)
    hidden = torch.ones(pred.shape[:2], dtype=torch.bool)
    hidden.scatter_(1, ids_keep, False)
    err = (pred - target).pow(2).mean(dim=-1)
    return err[hidden].mean()


@torch.inference_mode()
def heldout_scores(model: MaskedAutoencoderViT, paths: list[str], seeds: tuple[int, ...] = (0, 1, 2)) -> dict:
    """Hidden-patch MSE (RGB [0,1]) of the model and the ring-mean baseline at 75%.

    Returns:
        ``{"model": float, "baseline": float, "per_image": {name: (model, baseline)}}``.
    """
    from ..core.masking import mask_to_ids, random_mask

    model.eval()
    p = model.patch_size
    size = model.config.img_size
    per_image = {}
    for path in paths:
        x01 = uint8_to_unit(to_uint8(square_resize(load_image(path), size)))
        m_err, b_err = [], []
        for seed in seeds:
            mask = random_mask(model.config.grid, 0.75, seed)
            ids = mask_to_ids(mask).unsqueeze(0)
            pred = model(normalize(x01, DATA).unsqueeze(0), ids)
            from ..core.patches import unpatchify
            rec = unpatchify(pred, p, model.config.grid)[0]
            rec01 = (rec * torch.tensor(DATA.std).view(3, 1, 1) + torch.tensor(DATA.mean).view(3, 1, 1)).clamp(0, 1)
            hid = mask.repeat_interleave(p, 0).repeat_interleave(p, 1)
            m_err.append(float((rec01 - x01).pow(2)[:, hid].mean()))
            base = ring_mean_fill(x01, mask, p)
            b_err.append(float((base - x01).pow(2)[:, hid].mean()))
        per_image[Path(path).stem] = (float(np.mean(m_err)), float(np.mean(b_err)))
    model.train()
    mm = float(np.mean([v[0] for v in per_image.values()]))
    bb = float(np.mean([v[1] for v in per_image.values()]))
    return {"model": mm, "baseline": bb, "per_image": per_image}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Train the embedded mae-tiny model (resumable).")
    ap.add_argument("--data", type=Path, default=Path(".train/data"))
    ap.add_argument("--out", type=Path, default=Path("assets/models/mae-tiny.safetensors"))
    ap.add_argument("--ckpt", type=Path, default=Path(".train/ckpt.pt"))
    ap.add_argument("--init", type=Path, default=None, help="start from exported weights (new schedule)")
    ap.add_argument("--hours", type=float, default=2.0, help="wall-clock budget of the cosine schedule")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.02)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--weight-decay", type=float, default=0.05)
    ap.add_argument("--ratio-range", type=float, nargs=2, default=(0.55, 0.9))
    ap.add_argument("--save-every", type=int, default=100)
    ap.add_argument("--eval-every", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(args.seed)
    crops = torch.from_numpy(np.load(args.data / "train_crops.npy"))
    manifest = json.loads((args.data / "manifest.json").read_text())
    heldout = [h["path"] for h in manifest["heldout"]]
    model = MaskedAutoencoderViT(MAE_TINY_CONFIG)
    decay = [p for n, p in model.named_parameters() if p.requires_grad and p.ndim >= 2 and "token" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and (p.ndim < 2 or "token" in n)]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
    )
    step, elapsed, images_seen = 0, 0.0, 0
    log_path = args.ckpt.parent / "train_log.jsonl"
    args.ckpt.parent.mkdir(parents=True, exist_ok=True)
    if args.ckpt.exists():
        state = torch.load(args.ckpt, weights_only=True)
        model.load_state_dict(state["model"], strict=True)
        opt.load_state_dict(state["opt"])
        step, elapsed, images_seen = int(state["step"]), float(state["elapsed"]), int(state["images"])
        g.set_state(state["gen"])
        print(f"resumed at step {step}, {elapsed / 3600:.2f} h, {images_seen} images")
    elif args.init is not None:
        sd, _ = read_mae_file(args.init)
        model.load_state_dict({k: v.float() for k, v in sd.items()}, strict=True)
        print(f"initialised from {args.init}")
    budget = args.hours * 3600.0
    length = MAE_TINY_CONFIG.num_patches
    lo, hi = args.ratio_range
    model.train()
    t_last = time.perf_counter()
    while elapsed < budget:
        progress = min(1.0, elapsed / budget)
        lr = args.lr * min(1.0, (step + 1) / args.warmup)
        lr *= args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress))
        for group in opt.param_groups:
            group["lr"] = lr
        idx = torch.randint(0, crops.shape[0], (args.batch,), generator=g)
        imgs = normalize(augment(crops[idx], MAE_TINY_CONFIG.img_size, g), DATA)
        ratio = lo + (hi - lo) * float(torch.rand((), generator=g))
        keep = max(1, int(round((1 - ratio) * length)))
        ids_keep = random_keep(args.batch, length, keep, g)
        loss = hidden_loss(model, imgs, ids_keep)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        images_seen += args.batch
        now = time.perf_counter()
        elapsed += now - t_last
        t_last = now
        record = {"step": step, "loss": round(loss.item(), 5), "lr": lr, "elapsed_h": round(elapsed / 3600, 4)}
        done = elapsed >= budget
        if step % args.eval_every == 0 or done:
            s = heldout_scores(model, heldout)
            record.update(heldout_model=s["model"], heldout_baseline=s["baseline"],
                          improvement=1 - s["model"] / s["baseline"])
        if step % args.save_every == 0 or done:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                        "elapsed": elapsed, "images": images_seen, "gen": g.get_state()}, args.ckpt)
            export_mae(model, args.out, {"step": str(step), "images": str(images_seen),
                                          "train_hours": f"{elapsed / 3600:.2f}", "loss": f"{loss.item():.4f}"})
        if step % 20 == 0 or "improvement" in record:
            with log_path.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            print(json.dumps(record), flush=True)
        t_last = time.perf_counter()  # do not bill evaluation and saving to the schedule
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
