"""Train the embedded ``mae-tiny`` model on CPU, resumably.

Usage::

    python -m vitviz.training.data --work .train/data           # gather photos (once)
    python -m vitviz.training.train_mae --data .train/data --hours 2      # train; rerun to resume

The learning rate follows a cosine over a *wall-clock* budget (``--hours``), so a
run on a busy machine still ends with a decayed rate. Every ``--save-every`` steps
the full state (model, optimiser, step, elapsed time, generator state) is written
to ``--ckpt`` and the weights are exported to ``--out`` (safetensors, fp16, with the
architecture in the metadata). Rerunning the same command resumes from ``--ckpt``;
``--init FILE`` starts a new schedule (warm-up, then cosine) from exported weights (a
warm restart), so an extended run does not begin with an already decayed rate.

The v2 recipe (:mod:`vitviz.training.recipe`) adds, each behind a flag whose default
is the first recipe: a deeper decoder (``--decoder-depth``; with ``--init`` the new
blocks start as identities), a loss on neighbour differences that flat tiles cannot
satisfy (``--grad-weight``), and stronger augmentation (``--area-min``, ``--jitter``).
v4 added ``--ema``: a moving average of the weights is checked, checkpointed and exported.
The model card (``assets/models/README.md``) gives the exact command of the shipped run.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import time
from pathlib import Path

import numpy as np
import torch

from ..core.images import DataConfig, load_image, normalize, square_resize, to_uint8, uint8_to_unit
from ..core.patches import patchify, unpatchify
from ..mae.baseline import ring_mean_fill
from ..models.checkpoint import export_mae, read_mae_file
from ..models.mae import MaskedAutoencoderViT
from ..models.registry import MAE_TINY_CONFIG
from .measures import mosaic_factor
from .recipe import augment, gradient_loss, grow_decoder, hidden_pixels, positional_head

DATA = DataConfig()


def random_keep(b: int, length: int, keep: int, g: torch.Generator) -> torch.Tensor:
    """Per-sample MAE masking: ``(B, keep)`` ids of the lowest-noise patches, sorted."""
    noise = torch.rand(b, length, generator=g)
    return noise.argsort(dim=1)[:, :keep].sort(dim=1).values


def hidden_loss(model: MaskedAutoencoderViT, imgs: torch.Tensor, ids_keep: torch.Tensor,
                grad_weight: float = 0.0, inside_weight: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """MSE over hidden patches in normalised pixel space (the MAE objective), plus a seam term.

    Args:
        imgs: ``(B, 3, H, W)`` normalised images.
        ids_keep: ``(B, K)`` visible patch ids.
        grad_weight: weight of :func:`vitviz.training.recipe.gradient_loss` (0 = plain MAE).
        inside_weight: its weight of pairs inside a patch (seams weigh 1; 0 = seams only).

    Returns:
        ``(total, mse)`` scalars.
    """
    pred = model(imgs, ids_keep)
    target = patchify(imgs, model.patch_size)
    hidden = torch.ones(pred.shape[:2], dtype=torch.bool)
    hidden.scatter_(1, ids_keep, False)
    err = (pred - target).pow(2).mean(dim=-1)
    mse = err[hidden].mean()
    if grad_weight <= 0:
        return mse, mse
    grid = model.config.grid
    pred_img = unpatchify(pred, model.patch_size, grid)
    g = gradient_loss(pred_img, imgs, hidden_pixels(hidden, model.patch_size, grid), model.patch_size,
                      inside_weight)
    return mse + grad_weight * g, mse


@torch.no_grad()
def update_ema(ema: torch.nn.Module, model: torch.nn.Module, decay: float) -> None:
    """Move every parameter of ``ema`` a fraction ``1 - decay`` of the way to ``model``'s (in place).

    The fixed buffers (sin-cos position tables) are equal in both and left alone.
    """
    for avg, new in zip(ema.parameters(), model.parameters()):
        avg.lerp_(new, 1.0 - decay)


@torch.inference_mode()
def heldout_scores(model: MaskedAutoencoderViT, paths: list[str], seeds: tuple[int, ...] = (0, 1, 2)) -> dict:
    """Hidden-patch MSE (RGB [0,1]) of the model and the ring-mean baseline at 75%, and the mosaic factor.

    Returns:
        ``{"model": float, "baseline": float, "mosaic": float, "per_image": {name: (model, baseline)}}``
        (``mosaic``: mean over images and seeds of :func:`~vitviz.training.measures.mosaic_factor`
        of the raw reconstruction with the visible patches pasted back).
    """
    from ..core.masking import mask_to_ids, random_mask

    model.eval()
    p = model.patch_size
    size = model.config.img_size
    per_image = {}
    mosaics = []
    for path in paths:
        x01 = uint8_to_unit(to_uint8(square_resize(load_image(path), size)))
        m_err, b_err = [], []
        for seed in seeds:
            mask = random_mask(model.config.grid, 0.75, seed)
            ids = mask_to_ids(mask).unsqueeze(0)
            pred = model(normalize(x01, DATA).unsqueeze(0), ids)
            rec = unpatchify(pred, p, model.config.grid)[0]
            rec01 = (rec * torch.tensor(DATA.std).view(3, 1, 1) + torch.tensor(DATA.mean).view(3, 1, 1)).clamp(0, 1)
            hid = mask.repeat_interleave(p, 0).repeat_interleave(p, 1)
            pasted = torch.where(hid, rec01, x01)
            mosaics.append(mosaic_factor(pasted.permute(1, 2, 0).numpy(), mask.numpy(), p))
            m_err.append(float((rec01 - x01).pow(2)[:, hid].mean()))
            base = ring_mean_fill(x01, mask, p)
            b_err.append(float((base - x01).pow(2)[:, hid].mean()))
        per_image[Path(path).stem] = (float(np.mean(m_err)), float(np.mean(b_err)))
    model.train()
    mm = float(np.mean([v[0] for v in per_image.values()]))
    bb = float(np.mean([v[1] for v in per_image.values()]))
    return {"model": mm, "baseline": bb, "mosaic": float(np.mean(mosaics)), "per_image": per_image}


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
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--decoder-depth", type=int, default=MAE_TINY_CONFIG.decoder_depth,
                    help="decoder blocks; with --init, blocks beyond the file's start as identities")
    ap.add_argument("--grad-weight", type=float, default=0.0, help="weight of the neighbour-difference loss")
    ap.add_argument("--grad-inside", type=float, default=1.0,
                    help="weight of within-patch pairs in that loss (seam pairs weigh 1; 0 = seams only)")
    ap.add_argument("--area-min", type=float, default=0.35, help="smallest random-resized-crop area")
    ap.add_argument("--jitter", type=float, default=0.0, help="brightness/contrast/saturation jitter")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0 = budget only)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ema", type=float, default=0.0,
                    help="keep an exponential moving average of the weights with this decay (0 = off); "
                         "the average is what is checked on the held-out photos and exported")
    ap.add_argument("--positional-head", action="append", default=[], metavar="LAYER:HEAD:SCALE",
                    help="with --init: give this encoder head a positional query/key start "
                         "(recipe.positional_head; repeatable)")
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(args.seed)
    crops = np.load(args.data / "train_crops.npy", mmap_mode="r")
    manifest = json.loads((args.data / "manifest.json").read_text())
    heldout = [h["path"] for h in manifest["heldout"]]
    config = dataclasses.replace(MAE_TINY_CONFIG, decoder_depth=args.decoder_depth)
    model = MaskedAutoencoderViT(config)
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
    state: dict | None = None
    if args.ckpt.exists():
        state = torch.load(args.ckpt, weights_only=True)
        model.load_state_dict(state["model"], strict=True)
        opt.load_state_dict(state["opt"])
        step, elapsed, images_seen = int(state["step"]), float(state["elapsed"]), int(state["images"])
        g.set_state(state["gen"])
        print(f"resumed at step {step}, {elapsed / 3600:.2f} h, {images_seen} images")
    elif args.init is not None:
        sd, _ = read_mae_file(args.init)
        added = grow_decoder(model, sd)
        print(f"initialised from {args.init} ({added} decoder blocks added as identities)")
        for spec in args.positional_head:
            layer, head, scale = spec.split(":")
            positional_head(model, int(layer), int(head), float(scale))
            print(f"positional start for layer {layer} head {head} (scale {scale})")
    ema = None
    if args.ema > 0:
        ema = copy.deepcopy(model).requires_grad_(False)
        if state is not None and "ema" in state:
            ema.load_state_dict(state["ema"], strict=True)
    exported = ema if ema is not None else model
    budget = args.hours * 3600.0
    length = config.num_patches
    lo, hi = args.ratio_range
    model.train()
    t_last = time.perf_counter()
    while elapsed < budget:
        progress = min(1.0, elapsed / budget)
        lr = args.lr * min(1.0, (step + 1) / args.warmup)
        lr *= args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress))
        for group in opt.param_groups:
            group["lr"] = lr
        idx = torch.randint(0, crops.shape[0], (args.batch,), generator=g).sort().values.numpy()
        batch = torch.from_numpy(np.ascontiguousarray(crops[idx]))
        imgs = normalize(augment(batch, config.img_size, g, args.area_min, args.jitter), DATA)
        ratio = lo + (hi - lo) * float(torch.rand((), generator=g))
        keep = max(1, int(round((1 - ratio) * length)))
        ids_keep = random_keep(args.batch, length, keep, g)
        loss, mse = hidden_loss(model, imgs, ids_keep, args.grad_weight, args.grad_inside)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if ema is not None:
            update_ema(ema, model, args.ema)
        step += 1
        images_seen += args.batch
        now = time.perf_counter()
        elapsed += now - t_last
        t_last = now
        record = {"step": step, "loss": round(loss.item(), 5), "mse": round(mse.item(), 5), "lr": lr,
                  "elapsed_h": round(elapsed / 3600, 4)}
        done = elapsed >= budget or (args.max_steps > 0 and step >= args.max_steps)
        if step % args.eval_every == 0 or done:
            s = heldout_scores(exported, heldout)
            record.update(heldout_model=s["model"], heldout_baseline=s["baseline"],
                          improvement=1 - s["model"] / s["baseline"], mosaic=s["mosaic"])
            if ema is not None:  # the raw weights too, to see what the average buys
                raw = heldout_scores(model, heldout)
                record.update(raw_improvement=1 - raw["model"] / raw["baseline"], raw_mosaic=raw["mosaic"])
        if step % args.save_every == 0 or done:
            state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                     "elapsed": elapsed, "images": images_seen, "gen": g.get_state()}
            if ema is not None:
                state["ema"] = ema.state_dict()
            torch.save(state, args.ckpt)
            export_mae(exported, args.out, {"step": str(step), "images": str(images_seen),
                                          "train_hours": f"{elapsed / 3600:.2f}", "loss": f"{loss.item():.4f}",
                                          "recipe": json.dumps({k: str(v) for k, v in vars(args).items()})})
        if step % 20 == 0 or "improvement" in record:
            with log_path.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            print(json.dumps(record), flush=True)
        t_last = time.perf_counter()  # do not bill evaluation and saving to the schedule
        if done:
            break
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
