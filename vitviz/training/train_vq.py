"""Train the ``vq-tiny`` visual tokenizer on CPU, resumably, and evaluate it on validation or test photos.

Usage::

    python -m vitviz.training.train_vq --data .train/data --hours 0.7     # train; rerun to resume
    python -m vitviz.training.train_vq --data .train/data --eval-only     # validation table vs k-means
    python -m vitviz.training.train_vq --eval-only --split test --no-baseline --table assets/models/vq-tiny.test.json

Training data: random ``--crop`` px windows (128 by default; the model is
convolutional, and small windows give more updates per CPU second) with horizontal
flips, cut from the 256 px crops in ``train_crops.npy``; the validation photos listed in ``manifest.json`` (and the test set) are never used
for training. The learning rate follows a cosine over a wall-clock budget
(``--hours``). Every ``--save-every`` steps the full state goes to ``--ckpt`` and the
weights to ``--out`` (fp16 safetensors, config in the metadata). A jsonl log sits
next to the checkpoint.
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
from PIL import Image

from ..beit.baselines import kmeans_codebook, kmeans_roundtrip, nearest_centroid, patch_rows
from ..models.registry import VQ_TINY_CONFIG
from ..models.vqvae import VQTokenizer, export_vq, load_vq_file
from .testset import split_paths


def split_images(paths: list[Path], size: int) -> dict[str, torch.Tensor]:
    """Evaluation photos (validation or test, :func:`vitviz.training.testset.split_paths`):
    shorter side resized to ``size``, centre crop.

    Returns:
        ``{name: (3, size, size) float in [0, 1]}`` (uint8-rounded first, as the app sees them).
    """
    out = {}
    for path in paths:
        img = Image.open(path).convert("RGB")
        w, hh = img.size
        s = size / min(w, hh)
        nw, nh = max(size, round(w * s)), max(size, round(hh * s))
        img = img.resize((nw, nh), Image.BICUBIC, reducing_gap=None)
        left, top = (nw - size) // 2, (nh - size) // 2
        img = img.crop((left, top, left + size, top + size))
        arr = np.asarray(img, dtype=np.uint8)
        out[Path(path).stem] = torch.from_numpy(arr.copy()).permute(2, 0, 1).float() / 255.0
    return out


def random_crops(crops: np.ndarray, batch: int, size: int, g: torch.Generator) -> torch.Tensor:
    """``batch`` random ``size`` crops with random horizontal flips: ``(B, 3, size, size)`` in [0, 1]."""
    n, s = crops.shape[0], crops.shape[1]
    idx = torch.randint(0, n, (batch,), generator=g).tolist()
    off = torch.randint(0, s - size + 1, (batch, 2), generator=g).tolist()
    flip = (torch.rand(batch, generator=g) < 0.5).tolist()
    out = np.empty((batch, size, size, 3), dtype=np.uint8)
    for i, (j, (y, x), f) in enumerate(zip(idx, off, flip)):
        c = crops[j, y : y + size, x : x + size]
        out[i] = c[:, ::-1] if f else c
    return torch.from_numpy(out).permute(0, 3, 1, 2).float().div_(255.0)


@torch.no_grad()
def init_from_data(model: VQTokenizer, crops: np.ndarray, images: int, iters: int, batch: int,
                   g: torch.Generator) -> None:
    """Principal components of training patches for the projections, k-means of the projected
    patches for the codebook (the starting point; training then moves all of them)."""
    c = model.config
    x = random_crops(crops, images, c.img_size, g)
    rows = torch.cat([patch_rows(im, c.patch_size) for im in x]).double()
    mean = rows.mean(0)
    cov = (rows - mean).t() @ (rows - mean) / rows.shape[0]
    _, vecs = torch.linalg.eigh(cov)  # ascending eigenvalues
    comps = vecs[:, -c.code_dim :].flip(1).t().float()  # (D, P)
    z = (rows.float() - mean.float()) @ comps.t()
    cent = kmeans_codebook(z, c.codebook_size, iters, g)
    assign = nearest_centroid(z, cent)
    per_batch = torch.bincount(assign, minlength=c.codebook_size).float() * (batch * c.grid[0] * c.grid[1]) / z.shape[0]
    model.init_from_data(mean.float(), comps, cent, per_batch)


def psnr(mse: float) -> float:
    """PSNR in dB for an MSE of pixels in [0, 1]."""
    return 10.0 * math.log10(1.0 / max(mse, 1e-12))


@torch.inference_mode()
def heldout_mse(model: VQTokenizer, images: dict[str, torch.Tensor]) -> tuple[dict[str, float], set[int]]:
    """Round-trip MSE (pixels in [0, 1]) per evaluation image and the set of codes used."""
    was = model.training
    model.eval()
    per, used = {}, set()
    for name, x in images.items():
        ids = model.tokenize(x[None])
        rec = model.decode(ids)[0]
        per[name] = float((rec - x).pow(2).mean())
        used.update(ids.flatten().tolist())
    model.train(was)
    return per, used


def evaluate(args: argparse.Namespace) -> dict:
    """Evaluation table (``args.split``): vq-tiny round trip vs a k-means patch codebook with the
    same number of codes (fitted on training crops; left out with ``--no-baseline``)."""
    model, meta = load_vq_file(args.out)
    c = model.config
    images = split_images(split_paths(args.data, args.split, args.test_dir), c.img_size)
    per, used_heldout = heldout_mse(model, images)
    table = {
        "model": "vq-tiny", "step": meta.get("step"), "train_hours": meta.get("train_hours"),
        "codebook_size": c.codebook_size, "split": args.split,
        "per_image": {n: {"vq_mse": per[n], "vq_psnr": psnr(per[n])} for n in images},
        "mean_vq_mse": float(np.mean(list(per.values()))),
        "codes_used_heldout": len(used_heldout),
    }
    table["mean_vq_psnr"] = float(np.mean([v["vq_psnr"] for v in table["per_image"].values()]))
    if args.no_baseline:
        return table
    g = torch.Generator().manual_seed(args.seed)
    crops = np.load(args.data / "train_crops.npy", mmap_mode="r")
    sample = random_crops(crops, args.kmeans_images, c.img_size, g)
    rows = torch.cat([patch_rows(x, c.patch_size) for x in sample])
    cent = kmeans_codebook(rows, c.codebook_size, args.kmeans_iters, g)
    km = {n: float((kmeans_roundtrip(x, cent, c.patch_size) - x).pow(2).mean()) for n, x in images.items()}
    # code usage over training crops (a fixed sample)
    usage = torch.zeros(c.codebook_size, dtype=torch.int64)
    with torch.inference_mode():
        for i in range(0, sample.shape[0], 32):
            usage += torch.bincount(model.tokenize(sample[i : i + 32]).flatten(), minlength=c.codebook_size)
    for n in images:
        table["per_image"][n].update(kmeans_mse=km[n], kmeans_psnr=psnr(km[n]))
    table.update(mean_kmeans_mse=float(np.mean(list(km.values()))),
                 codes_used_train_sample=int((usage > 0).sum()), train_sample_patches=int(usage.sum()),
                 kmeans={"patches": int(rows.shape[0]), "iters": args.kmeans_iters, "seed": args.seed})
    table["mean_kmeans_psnr"] = float(np.mean([v["kmeans_psnr"] for v in table["per_image"].values()]))
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Train the vq-tiny visual tokenizer (resumable).")
    ap.add_argument("--data", type=Path, default=Path(".train/data"))
    ap.add_argument("--out", type=Path, default=Path("assets/models/vq-tiny.safetensors"))
    ap.add_argument("--ckpt", type=Path, default=Path(".train/vq/ckpt.pt"))
    ap.add_argument("--hours", type=float, default=0.7, help="wall-clock budget of the cosine schedule")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--crop", type=int, default=224, help="training crop side (a multiple of 16)")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--init-images", type=int, default=512, help="crops for the PCA and k-means start")
    ap.add_argument("--init-iters", type=int, default=20)
    ap.add_argument("--min-lr-frac", type=float, default=0.05)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--beta", type=float, default=0.25, help="commitment loss weight")
    ap.add_argument("--save-every", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-only", action="store_true", help="print the evaluation table of --out and exit")
    ap.add_argument("--split", choices=("validation", "test"), default="validation",
                    help="evaluation photos: the validation photos of --data, or the test set (looked at once)")
    ap.add_argument("--test-dir", type=Path, default=Path(".train/test"), help="PNGs of vitviz.training.testset")
    ap.add_argument("--no-baseline", action="store_true", help="leave out the k-means baseline (needs training crops)")
    ap.add_argument("--kmeans-images", type=int, default=512)
    ap.add_argument("--kmeans-iters", type=int, default=25)
    ap.add_argument("--table", type=Path, default=Path("assets/models/vq-tiny.heldout.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    if args.eval_only:
        table = evaluate(args)
        args.table.write_text(json.dumps(table, indent=1) + "\n")
        print(json.dumps(table, indent=1))
        return 0

    g = torch.Generator().manual_seed(args.seed)
    crops = np.load(args.data / "train_crops.npy", mmap_mode="r")
    model = VQTokenizer(VQ_TINY_CONFIG)
    c = model.config
    images = split_images(split_paths(args.data, "validation", args.test_dir), c.img_size)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.99))
    step, elapsed, seen = 0, 0.0, 0
    args.ckpt.parent.mkdir(parents=True, exist_ok=True)
    log_path = args.ckpt.parent / "train_log.jsonl"
    if args.ckpt.exists():
        state = torch.load(args.ckpt, weights_only=True)
        model.load_state_dict(state["model"], strict=True)
        opt.load_state_dict(state["opt"])
        step, elapsed, seen = int(state["step"]), float(state["elapsed"]), int(state["images"])
        g.set_state(state["gen"])
        print(f"resumed at step {step}, {elapsed / 3600:.2f} h")
    else:
        init_from_data(model, crops, args.init_images, args.init_iters, args.batch, g)
    budget = args.hours * 3600.0
    model.train()
    used_window = torch.zeros(c.codebook_size, dtype=torch.bool)
    restarts = 0
    t_last = time.perf_counter()
    while elapsed < budget:
        progress = min(1.0, elapsed / budget)
        lr = args.lr * min(1.0, (step + 1) / args.warmup)
        lr *= args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress))
        for group in opt.param_groups:
            group["lr"] = lr
        x = random_crops(crops, args.batch, args.crop, g)
        rec, ids, z = model(x)
        mse = F.mse_loss(rec, x)
        commit = (z - model.codebook[ids]).pow(2).sum(-1).mean() / c.patch_dim  # pixel-MSE units
        loss = mse + args.beta * commit
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        restarts += model.ema_update(z.detach().reshape(-1, c.code_dim), ids.flatten(), g)
        used_window[ids.flatten()] = True
        step += 1
        seen += args.batch
        now = time.perf_counter()
        elapsed += now - t_last
        done = elapsed >= budget
        if step % 20 == 0 or done:
            rec_ = {"step": step, "mse": round(mse.item(), 6), "psnr": round(psnr(mse.item()), 2),
                    "commit": round(commit.item(), 4), "lr": lr, "elapsed_h": round(elapsed / 3600, 4),
                    "codes_used_last20": int(used_window.sum()), "restarts": restarts}
            used_window.zero_()
            restarts = 0
            if step % args.save_every == 0 or done:
                per, used = heldout_mse(model, images)
                rec_.update(heldout_mse=float(np.mean(list(per.values()))), heldout_codes=len(used))
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                            "elapsed": elapsed, "images": seen, "gen": g.get_state()}, args.ckpt)
                export_vq(model, args.out, {"step": str(step), "images": str(seen),
                                            "train_hours": f"{elapsed / 3600:.3f}"})
            with log_path.open("a") as fh:
                fh.write(json.dumps(rec_) + "\n")
            print(json.dumps(rec_), flush=True)
        t_last = time.perf_counter()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
