"""Train ``vq-kd-tiny`` (BEiT v2's VQ-KD over ``dinov2-small``'s features) on cached teacher features, resumably.

Usage::

    python -m vitviz.training.teacher_cache --data .train/data --out .train/kd --count 3000   # first
    python -m vitviz.training.train_vqkd --kd .train/kd --hours 0.25          # train; rerun to resume
    python -m vitviz.training.train_vqkd --kd .train/kd --eval-only           # validation table
    python -m vitviz.training.train_vqkd --kd .train/kd --crop-tokens         # ids of every cached crop

A sample is a 14x14 window (at a random offset) of a crop's 16x16 grid of teacher features,
mirrored half the time (the grid flipped). Loss: ``1 - cos`` between the decoder's output and the
teacher's feature, plus the commitment term; the codebook follows BEiT v2's normalised EMA,
initialised by spherical k-means of the first encoder outputs; a code no patch chose for ``--dead``
steps restarts at a random vector of the batch (a vitviz addition). The learning rate follows a cosine over a
wall-clock budget; state is checkpointed every ``--save-every`` steps and the weights exported.

The validation check (the 13 validation photos, 224 px, teacher at 196 px): mean cosine between
the decoded codes and the teacher's features; codes used and perplexity; and the same figures for
a baseline: spherical k-means with the same number of codes fitted directly on teacher features of
the training crops (each patch replaced by its nearest centroid).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..models.loading import load_teacher
from ..models.vqkd import (VQKD, VQKDConfig, code_usage, cosine_loss, export_vqkd, load_vqkd_file, lookup_codes,
                           teacher_features, teacher_size)
from ..models.registry import VQ_KD_TINY_CONFIG
from .recipe import wallclock_lr
from .teacher_cache import open_cache
from .testset import split_paths
from .train_beit import file_digest
from .train_vq import split_images


def sample_windows(feats: np.ndarray, batch: int, grid: int, g: torch.Generator) -> torch.Tensor:
    """Random ``grid`` x ``grid`` windows of cached feature grids, mirrored half the time.

    Args:
        feats: ``(N, G, G, Dt)`` float16.

    Returns:
        ``(B, grid, grid, Dt)`` float32.
    """
    n, gg = feats.shape[0], feats.shape[1]
    idx = torch.randint(0, n, (batch,), generator=g).tolist()
    off = torch.randint(0, gg - grid + 1, (batch, 2), generator=g).tolist()
    flip = (torch.rand(batch, generator=g) < 0.5).tolist()
    out = np.empty((batch, grid, grid, feats.shape[-1]), dtype=np.float32)
    for b, (j, (oy, ox), f) in enumerate(zip(idx, off, flip)):
        w = feats[j, oy : oy + grid, ox : ox + grid]
        out[b] = w[:, ::-1] if f else w
    return torch.from_numpy(out)


def spherical_kmeans(x: torch.Tensor, k: int, iters: int, g: torch.Generator) -> torch.Tensor:
    """k-means on the unit sphere (cosine assignment, normalised means).

    Args:
        x: ``(N, C)``; normalised here.

    Returns:
        ``(k, C)`` unit centroids; an empty cluster restarts at a random point.
    """
    x = F.normalize(x, dim=-1)
    cent = x[torch.randperm(x.shape[0], generator=g)[:k]].clone()
    for _ in range(iters):
        ids = lookup_codes(x, cent)
        sums = torch.zeros_like(cent).index_add_(0, ids, x)
        counts = torch.bincount(ids, minlength=k)
        empty = counts == 0
        cent = F.normalize(sums, dim=-1)
        if empty.any():
            cent[empty] = x[torch.randint(0, x.shape[0], (int(empty.sum()),), generator=g)]
    return cent


def validation_features(data: Path, split: str, test_dir: Path, config: VQKDConfig, size: int = 224
                        ) -> dict[str, torch.Tensor]:
    """The teacher's features of each evaluation photo (``size`` px, teacher at ``teacher_size``): ``{name: (g, g, Dt)}``."""
    teacher = load_teacher(config.teacher, teacher_size(size, config))
    images = split_images(split_paths(data, split, test_dir), size)
    with torch.inference_mode():
        return {n: teacher_features(teacher, x[None], config)[0] for n, x in images.items()}


@torch.inference_mode()
def reconstruction_table(model: VQKD, feats: dict[str, torch.Tensor], baseline: torch.Tensor | None) -> dict:
    """Mean cosine between decoded codes and teacher features per photo and pooled; code usage; the baseline's."""
    per, ids_all, cos_all, base_all, base_ids = {}, [], [], [], []
    for name, f in feats.items():
        ids = model.tokenize_features(f[None])
        cos = F.cosine_similarity(model.decode(ids), f[None], dim=-1)
        row = {"cosine": float(cos.mean()), "codes_used": int(ids.unique().numel())}
        ids_all.append(ids.flatten())
        cos_all.append(cos.flatten())
        if baseline is not None:
            b = lookup_codes(f, baseline)
            bc = F.cosine_similarity(baseline[b], F.normalize(f, dim=-1), dim=-1)
            row["kmeans_cosine"] = float(bc.mean())
            base_all.append(bc.flatten())
            base_ids.append(b.flatten())
        per[name] = row
    ids = torch.cat(ids_all)
    out = {"cosine": float(torch.cat(cos_all).mean()), **code_usage(ids, model.config.codebook_size), "per_image": per}
    if baseline is not None:
        u = code_usage(torch.cat(base_ids), baseline.shape[0])
        out.update(kmeans_cosine=float(torch.cat(base_all).mean()), kmeans_codes_used=u["codes_used"],
                   kmeans_perplexity=u["perplexity"])
    return out


def kmeans_baseline(feats: np.ndarray, k: int, n: int, iters: int, seed: int) -> torch.Tensor:
    """Spherical k-means centroids ``(k, Dt)`` of ``n`` random cached teacher feature vectors."""
    g = torch.Generator().manual_seed(seed)
    flat = feats.reshape(-1, feats.shape[-1])
    pick = np.sort(torch.randperm(flat.shape[0], generator=g)[:n].numpy())
    return spherical_kmeans(torch.from_numpy(np.asarray(flat[pick], dtype=np.float32)), k, iters, g)


@torch.inference_mode()
def crop_tokens_kd(model: VQKD, feats: np.ndarray, batch: int = 64) -> np.ndarray:
    """Ids of every cached crop's feature grid and of its mirror: ``(N, 2, G, G)`` int16 (index 1 = mirrored)."""
    n, gg = feats.shape[0], feats.shape[1]
    out = np.empty((n, 2, gg, gg), dtype=np.int16)
    for i in range(0, n, batch):
        f = torch.from_numpy(np.asarray(feats[i : i + batch], dtype=np.float32))
        out[i : i + batch, 0] = model.tokenize_features(f).numpy()
        out[i : i + batch, 1] = model.tokenize_features(f.flip(2)).numpy()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Train vq-kd-tiny on cached dinov2-small features (resumable).")
    ap.add_argument("--kd", type=Path, default=Path(".train/kd"), help="folder of vitviz.training.teacher_cache")
    ap.add_argument("--data", type=Path, default=Path(".train/data"))
    ap.add_argument("--out", type=Path, default=Path("assets/models/vq-kd-tiny.safetensors"))
    ap.add_argument("--ckpt", type=Path, default=Path(".train/kd/ckpt.pt"))
    ap.add_argument("--hours", type=float, default=0.25)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.05)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--dead", type=int, default=20, help="restart a code no patch chose for this many steps (0: never)")
    ap.add_argument("--save-every", type=int, default=100)
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-only", action="store_true", help="write the evaluation table of --out and exit")
    ap.add_argument("--crop-tokens", action="store_true",
                    help="write --out's ids of every cached crop (and mirror) to --kd/crop_tokens.npy and exit")
    ap.add_argument("--split", choices=("validation", "test"), default="validation")
    ap.add_argument("--test-dir", type=Path, default=Path(".train/test"))
    ap.add_argument("--table", type=Path, default=Path("assets/models/vq-kd-tiny.heldout.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = VQ_KD_TINY_CONFIG  # BEiT v2's code width (32); vq-tiny's 512 codes, so the tables compare
    feats, index, cache_meta = open_cache(args.kd)
    feats = np.ascontiguousarray(feats)  # into memory: (N, 16, 16, 384) float16
    print(f"{feats.shape[0]} cached crops", flush=True)

    if args.crop_tokens:
        model, _ = load_vqkd_file(args.out)
        ids = crop_tokens_kd(model, feats)
        np.save(args.kd / "crop_tokens.npy", ids)
        (args.kd / "crop_tokens.json").write_text(json.dumps({"vqkd": file_digest(args.out), "shape": list(ids.shape),
                                                              **code_usage(torch.from_numpy(ids.astype(np.int64)),
                                                                           config.codebook_size)}))
        print(json.loads((args.kd / "crop_tokens.json").read_text()))
        return 0

    base_path = args.kd / "kmeans_baseline.pt"
    if base_path.exists():
        baseline = torch.load(base_path, weights_only=True)
    else:
        baseline = kmeans_baseline(feats, config.codebook_size, 50_000, 20, args.seed)
        torch.save(baseline, base_path)
    if args.eval_only:
        model, meta = load_vqkd_file(args.out)
        val = validation_features(args.data, args.split, args.test_dir, config)
        table = {"model": "vq-kd-tiny", "step": meta.get("step"), "train_hours": meta.get("train_hours"),
                 "split": args.split, **reconstruction_table(model, val, baseline)}
        args.table.write_text(json.dumps(table, indent=1) + "\n")
        print(json.dumps(table, indent=1))
        return 0

    val = validation_features(args.data, "validation", args.test_dir, config)
    model = VQKD(config)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.99), weight_decay=1e-4)
    step, elapsed = 0, 0.0
    args.ckpt.parent.mkdir(parents=True, exist_ok=True)
    log_path = args.ckpt.parent / "vqkd_train_log.jsonl"
    grid = 224 // config.patch_size
    if args.ckpt.exists():
        state = torch.load(args.ckpt, weights_only=True)
        model.load_state_dict(state["model"], strict=True)
        model.cluster_size.copy_(state["cluster_size"])
        model.embed_sum.copy_(state["embed_sum"])
        model.idle.copy_(state["idle"])
        opt.load_state_dict(state["opt"])
        step, elapsed = int(state["step"]), float(state["elapsed"])
        print(f"resumed at step {step}, {elapsed / 3600:.3f} h")
    else:  # BEiT v2's k-means start: codes from the untrained encoder's outputs
        g0 = torch.Generator().manual_seed(args.seed)
        with torch.no_grad():
            z = torch.cat([model.encode(sample_windows(feats, 64, grid, g0)).reshape(-1, config.code_dim)
                           for _ in range(4)])
            model.codebook.copy_(spherical_kmeans(z, config.codebook_size, 10, g0))
            model.cluster_size.fill_(1 - config.decay)
            model.embed_sum.copy_(model.codebook * (1 - config.decay))
    budget = args.hours * 3600.0
    model.train()
    t_last = time.perf_counter()
    while elapsed < budget:
        lr = wallclock_lr(args.lr, step, args.warmup, elapsed / budget, args.min_lr_frac)
        for group in opt.param_groups:
            group["lr"] = lr
        g = torch.Generator().manual_seed(args.seed * 1_000_003 + step)
        f = sample_windows(feats, args.batch, grid, g)
        rec, ids, z, commit = model(f)
        rec_loss = cosine_loss(rec, f)
        loss = rec_loss + commit
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 3.0)
        opt.step()
        restarted = model.ema_update(z.detach(), ids, g, args.dead)
        step += 1
        now = time.perf_counter()
        elapsed += now - t_last
        done = elapsed >= budget
        if step % 10 == 0 or done:
            u = code_usage(ids, config.codebook_size)
            rec_row = {"step": step, "rec_loss": round(rec_loss.item(), 4), "commit": round(commit.item(), 4),
                       "batch_codes_used": u["codes_used"], "batch_perplexity": round(u["perplexity"], 1),
                       "restarted": restarted, "lr": lr, "elapsed_h": round(elapsed / 3600, 4)}
            if step % args.eval_every == 0 or done:
                model.eval()
                t = reconstruction_table(model, val, baseline)
                model.train()
                rec_row.update(val_cosine=round(t["cosine"], 4), val_codes_used=t["codes_used"],
                               val_perplexity=round(t["perplexity"], 1), kmeans_cosine=round(t["kmeans_cosine"], 4))
            if step % args.save_every == 0 or done:
                torch.save({"model": model.state_dict(), "cluster_size": model.cluster_size,
                            "embed_sum": model.embed_sum, "idle": model.idle, "opt": opt.state_dict(), "step": step, "elapsed": elapsed},
                           args.ckpt)
                export_vqkd(model, args.out, {"step": str(step), "train_hours": f"{elapsed / 3600:.3f}",
                                              "teacher": config.teacher, "cached_crops": str(feats.shape[0]),
                                              "samples": str(step * args.batch)})
            with log_path.open("a") as fh:
                fh.write(json.dumps(rec_row) + "\n")
            print(json.dumps(rec_row), flush=True)
        t_last = time.perf_counter()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
