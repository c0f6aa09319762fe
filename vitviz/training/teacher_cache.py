"""Compute the VQ-KD teacher's patch features once per training crop, cached in fp16 on disk (resumable).

Usage::

    python -m vitviz.training.teacher_cache --data .train/data --out .train/kd --count 3000 --threads 2

Each 256 px crop of ``train_crops.npy`` is shown to ``dinov2-small`` at 224 px (14 px teacher
patches over 16 px crop patches: a 16x16 grid aligned with ``beit-tiny``'s patches, so a 224 window
at a 16 px offset has a 14x14 slice of it). With ``--window OFFSET`` the teacher sees only the 224 px
window at that offset, at 196 px: exactly as a 224 photo is tokenized (the teacher attends over the
whole image it is given, so a window's codes differ from the same slice of the whole crop's). The crops are taken in a seeded random order and the
first ``--count`` are kept (this CPU cannot run the teacher on all 8,160 crops and their mirror
images in the time given). Mirror images are not run: their features are taken as the mirrored
grid (``--check-mirror`` measures how close that is).

Outputs in ``--out``: ``teacher_feats.npy`` ``(N, 16, 16, 384)`` float16 (a memory map filled in
order), ``teacher_index.npy`` ``(N,)`` int64 (the crop each row comes from), ``teacher_meta.json``
(how many rows are done, the teacher, the seed).
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
from ..models.vqkd import VQKD, VQKDConfig, load_vqkd_file, teacher_features, teacher_size


def crop_order(n_crops: int, count: int, seed: int) -> np.ndarray:
    """The first ``count`` crops of a seeded permutation of ``range(n_crops)``: ``(count,)`` int64."""
    return np.random.default_rng(seed).permutation(n_crops)[: min(count, n_crops)].astype(np.int64)


def _unit(batch: np.ndarray) -> torch.Tensor:
    """uint8 ``(B, S, S, 3)`` -> ``(B, 3, S, S)`` float in [0, 1]."""
    return torch.from_numpy(np.ascontiguousarray(batch)).permute(0, 3, 1, 2).float().div_(255.0)


def open_cache(out: Path) -> tuple[np.ndarray, np.ndarray, dict]:
    """The cached features (read-only map), their crop indices and metadata; only the finished rows."""
    meta = json.loads((out / "teacher_meta.json").read_text())
    feats = np.load(out / "teacher_feats.npy", mmap_mode="r")
    index = np.load(out / "teacher_index.npy")
    done = int(meta["done"])
    return feats[:done], index[:done], meta


@torch.inference_mode()
def mirror_check(teacher: torch.nn.Module, crops: np.ndarray, config: VQKDConfig, n: int = 16,
                 tokenizer: VQKD | None = None) -> dict:
    """Cosine between the teacher's features of mirrored crops and the mirrored features of the crops;
    with a tokenizer, also the share of patches whose code is the same both ways.

    Returns:
        ``{"crops": n, "mean_cosine", "min_cosine"[, "same_code"]}`` over all patches.
    """
    x = _unit(crops[:n])
    a = teacher_features(teacher, x.flip(-1), config)
    b = teacher_features(teacher, x, config).flip(2)
    cos = F.cosine_similarity(a, b, dim=-1)
    out = {"crops": n, "mean_cosine": float(cos.mean()), "min_cosine": float(cos.min())}
    if tokenizer is not None:
        out["same_code"] = float((tokenizer.tokenize_features(a) == tokenizer.tokenize_features(b)).float().mean())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Cache dinov2-small's patch features of the training crops.")
    ap.add_argument("--data", type=Path, default=Path(".train/data"))
    ap.add_argument("--out", type=Path, default=Path(".train/kd"))
    ap.add_argument("--count", type=int, default=3000, help="crops to run (a seeded random subset)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--window", type=int, default=None,
                    help="run the teacher on the 224 px window of each crop at this offset (px, a multiple of 16; "
                         "the teacher at 196 px, as a 224 photo is tokenized), not on the whole crop")
    ap.add_argument("--check-mirror", action="store_true", help="print the mirror check and exit")
    ap.add_argument("--kd-file", type=Path, default=None, help="with --check-mirror: also compare this tokenizer's codes")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = VQKDConfig()
    crops = np.load(args.data / "train_crops.npy", mmap_mode="r")
    s = crops.shape[1] if args.window is None else config.img_size
    off = 0 if args.window is None else int(args.window)
    if off % config.patch_size or off + s > crops.shape[1]:
        raise SystemExit(f"--window {off}: not a multiple of {config.patch_size} inside a {crops.shape[1]} px crop")
    g = s // config.patch_size
    teacher = load_teacher(config.teacher, teacher_size(s, config))
    if args.check_mirror:
        order = crop_order(crops.shape[0], 16, args.seed + 1)
        kd = None if args.kd_file is None else load_vqkd_file(args.kd_file)[0]
        print(json.dumps(mirror_check(teacher, crops[np.sort(order)], config, tokenizer=kd)))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    meta_path, feats_path = args.out / "teacher_meta.json", args.out / "teacher_feats.npy"
    index = crop_order(crops.shape[0], args.count, args.seed)
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if (meta["count"] != len(index) or meta["seed"] != args.seed or meta["crops"] != int(crops.shape[0])
                or meta.get("window") != args.window):
            raise SystemExit(f"{meta_path} was made with other settings; remove {args.out} to start again")
        feats = np.load(feats_path, mmap_mode="r+")
    else:
        feats = np.lib.format.open_memmap(feats_path, mode="w+", dtype=np.float16,
                                          shape=(len(index), g, g, config.teacher_dim))
        np.save(args.out / "teacher_index.npy", index)
        meta = {"count": len(index), "seed": args.seed, "crops": int(crops.shape[0]), "done": 0, "window": args.window,
                "teacher": config.teacher, "teacher_input": teacher_size(s, config), "grid": g,
                "seconds": 0.0}
    t0 = time.perf_counter()
    done = int(meta["done"])
    for i in range(done, len(index), args.batch):
        rows = index[i : i + args.batch]
        with torch.inference_mode():
            f = teacher_features(teacher, _unit(crops[np.sort(rows)][np.argsort(np.argsort(rows)), off:off + s,
                                                      off:off + s]), config)
        feats[i : i + len(rows)] = f.numpy().astype(np.float16)
        feats.flush()
        meta["done"] = i + len(rows)
        meta["seconds"] = float(meta["seconds"]) + time.perf_counter() - t0
        t0 = time.perf_counter()
        meta_path.write_text(json.dumps(meta))
        if (i // args.batch) % 10 == 0:
            print(f"{meta['done']}/{len(index)} crops, {meta['seconds']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
