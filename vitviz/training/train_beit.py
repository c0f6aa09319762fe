"""Train ``beit-tiny`` (BEiT masked image modeling over vq-tiny's visual tokens), resumably.

Usage::

    python -m vitviz.training.train_beit --data .train/data --hours 0.9      # train; rerun to resume
    python -m vitviz.training.train_beit --data .train/data --eval-only      # validation table vs baselines
    python -m vitviz.training.train_beit --eval-only --split test --most-frequent-code 177 \\
        --table assets/models/beit-tiny.test.json                        # the test set, once per release

The targets come from ``vq-tiny`` (``--vq``). Its token ids for every 256 px
training crop and its mirror image are computed once (``--tokens``, a 16x16 grid
per crop); a training sample is a 224 window at an offset that is a multiple of 16
(so its 14x14 targets are a slice of the stored grid), mirrored or not. Masks are
BEiT's blockwise masks at ``--ratio`` (40%); the loss is cross-entropy over the
hidden positions only. The learning rate follows a cosine over a wall-clock budget.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from ..beit.baselines import most_frequent_prediction, nearest_visible_prediction
from ..beit.masking import block_mask, random_patch_mask
from ..models.beit import BEiTForMIM, export_beit, load_beit_file, mim_loss, normalize
from ..models.registry import BEIT_TINY_CONFIG
from ..models.vqvae import load_vq_file
from .codebook_head import CodebookHead
from .testset import split_paths
from .train_vq import split_images


class Tokenizer(Protocol):
    """Anything that turns ``(B, 3, S, S)`` images in [0, 1] into ``(B, S/16, S/16)`` token ids."""

    def tokenize(self, imgs01: torch.Tensor) -> torch.Tensor: ...


def init_encoder_from_mae(model: BEiTForMIM, path: Path) -> list[str]:
    """Copy a vitviz MAE file's encoder (patch embedding, class token, positions, blocks, final norm)
    into ``model``: same names, shapes checked. The mask token and the head stay as initialised.

    Returns:
        The copied parameter names.

    Raises:
        ValueError: a missing key or a shape mismatch (the architectures differ).
    """
    from safetensors.torch import load_file

    mae = load_file(str(path))
    own = model.state_dict()
    keys = [k for k in own if k.startswith(("patch_embed.", "blocks.", "norm.")) or k in ("cls_token", "pos_embed")]
    for k in keys:
        if k not in mae or tuple(mae[k].shape) != tuple(own[k].shape):
            raise ValueError(f"{path.name} cannot initialise {k}: {tuple(mae[k].shape) if k in mae else 'missing'}")
    model.load_state_dict({**own, **{k: mae[k].float() for k in keys}}, strict=True)
    return keys


def file_digest(path: Path) -> str:
    """First 16 hex digits of the SHA-256 of a file."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


@torch.inference_mode()
def crop_tokens(vq_path: Path, crops: np.ndarray, out: Path, batch: int = 32) -> np.ndarray:
    """Token ids of every crop and of its mirror image, cached in ``out`` per tokenizer file.

    Args:
        crops: ``(M, S, S, 3)`` uint8.

    Returns:
        ``(M, 2, S/16, S/16)`` int16 (index 1 = the horizontally mirrored crop).
    """
    digest = file_digest(vq_path)
    meta = out.with_suffix(".json")
    m, s = crops.shape[0], crops.shape[1]
    shape = [m, 2, s // 16, s // 16]
    if out.exists() and meta.exists():
        known = json.loads(meta.read_text())
        if known.get("vq") == digest and known.get("shape") == shape:
            return np.load(out)
    vq, _ = load_vq_file(vq_path)
    vq = vq.to(memory_format=torch.channels_last)
    ids = np.empty((m, 2, s // 16, s // 16), dtype=np.int16)
    for i in range(0, m, batch):
        x = torch.from_numpy(np.ascontiguousarray(crops[i : i + batch])).permute(0, 3, 1, 2).float() / 255.0
        for f in (0, 1):
            xx = (x.flip(-1) if f else x).contiguous(memory_format=torch.channels_last)
            ids[i : i + batch, f] = vq.tokenize(xx).numpy().astype(np.int16)
        if i % (batch * 20) == 0:
            print(f"tokenized {i + x.shape[0]}/{m}", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(out, ids)
    meta.write_text(json.dumps({"vq": digest, "shape": list(ids.shape)}))
    return ids


def sample_batch(crops: np.ndarray, tokens: np.ndarray, batch: int, size: int, g: torch.Generator,
                 mirror: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    """Random 224 windows at 16-pixel offsets, mirrored with probability ``mirror``, with their token grids.

    Returns:
        ``(imgs (B, 3, size, size) in [0, 1], targets (B, L) int64)``.
    """
    s, cell = crops.shape[1], 16
    n_off = (s - size) // cell + 1
    gsz = size // cell
    idx = torch.randint(0, crops.shape[0], (batch,), generator=g).tolist()
    off = torch.randint(0, n_off, (batch, 2), generator=g).tolist()
    flip = (torch.rand(batch, generator=g) < mirror).tolist()
    imgs = np.empty((batch, size, size, 3), dtype=np.uint8)
    tgt = np.empty((batch, gsz, gsz), dtype=np.int64)
    for b, (j, (oy, ox), f) in enumerate(zip(idx, off, flip)):
        c = crops[j][:, ::-1] if f else crops[j]
        imgs[b] = c[oy * cell : oy * cell + size, ox * cell : ox * cell + size]
        tgt[b] = tokens[j, int(f), oy : oy + gsz, ox : ox + gsz]
    x = torch.from_numpy(imgs).permute(0, 3, 1, 2).float().div_(255.0)
    return x, torch.from_numpy(tgt).flatten(1)


@torch.inference_mode()
def heldout_table(model: BEiTForMIM, vq_path: Path | Tokenizer, photos: list[Path], most_frequent: int,
                  seeds: tuple[int, ...], ratio: float, pattern: str = "block") -> dict:
    """Top-1/top-5 token accuracy over hidden patches of the evaluation photos, and both baselines.

    Targets are the tokenizer's ids of each (224, centre-cropped) photo: ``vq_path`` is a vq-tiny
    file, or any tokenizer object with ``tokenize`` (``vq-kd-tiny``'s
    :class:`~vitviz.models.vqkd.VQKD`); masks are drawn with
    ``numpy.random.default_rng(seed)`` for each seed. Accuracies are pooled over all
    hidden patches of all photos and seeds.
    """
    was = model.training
    model.eval()
    vq = load_vq_file(vq_path)[0] if isinstance(vq_path, (str, Path)) else vq_path
    c = model.config
    images = split_images(photos, c.img_size)
    hits = {"top1": 0, "top5": 0, "most_frequent": 0, "nearest_visible": 0, "hidden": 0}
    per = {}
    for name, x in images.items():
        ids = vq.tokenize(x[None])[0]  # (gh, gw)
        h1 = h5 = hv = hn = hm = 0
        for seed in seeds:
            rng = np.random.default_rng(seed)
            m = block_mask(c.grid, ratio, rng) if pattern == "block" else random_patch_mask(c.grid, ratio, rng)
            mask = torch.from_numpy(m)
            logits = model(normalize(x[None], c), mask.flatten()[None])[0]  # (L, V)
            top5 = logits.topk(5, dim=-1).indices.view(*c.grid, 5)
            hid = mask
            h1 += int((top5[..., 0] == ids)[hid].sum())
            h5 += int((top5 == ids[..., None]).any(-1)[hid].sum())
            hm += int((most_frequent_prediction(mask, most_frequent) == ids)[hid].sum())
            hn += int((nearest_visible_prediction(ids, mask) == ids)[hid].sum())
            hv += int(hid.sum())
        per[name] = {"top1": h1 / hv, "top5": h5 / hv, "most_frequent": hm / hv, "nearest_visible": hn / hv,
                     "hidden": hv}
        for k, v in zip(("top1", "top5", "most_frequent", "nearest_visible", "hidden"), (h1, h5, hm, hn, hv)):
            hits[k] += v
    model.train(was)
    total = hits.pop("hidden")
    out = {k: v / total for k, v in hits.items()}
    out.update(hidden_patches=total, per_image=per, seeds=list(seeds), ratio=ratio, pattern=pattern)
    return out


def kd_crop_tokens(kd: Path, cache: Path, crops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The crops that have cached teacher features, with ``kd``'s ids of them and of their mirrors.

    Args:
        kd: a vq-kd-tiny file; ``cache``: its :mod:`~vitviz.training.teacher_cache` folder, where
            ``train_vqkd --crop-tokens`` wrote ``crop_tokens.npy`` for this very file.
        crops: all training crops ``(M, S, S, 3)`` uint8.

    Returns:
        ``(crops (N, S, S, 3) in memory, ids (N, 2, S/16, S/16) int16)``; where the teacher saw one window
        of each crop (the cache's ``window`` offset), those windows ``(N, 16 G, 16 G, 3)`` and their ids.

    Raises:
        SystemExit: the ids were made by another file (run ``train_vqkd --crop-tokens`` again).
    """
    known = json.loads((cache / "crop_tokens.json").read_text())
    if known.get("vqkd") != file_digest(kd):
        raise SystemExit(f"{cache / 'crop_tokens.npy'} was made by another tokenizer than {kd}; "
                         "run python -m vitviz.training.train_vqkd --crop-tokens")
    tokens = np.load(cache / "crop_tokens.npy")
    index = np.load(cache / "teacher_index.npy")[: tokens.shape[0]]
    out = np.ascontiguousarray(crops[np.sort(index)])[np.argsort(np.argsort(index))]
    off = json.loads((cache / "teacher_meta.json").read_text()).get("window")
    if off is not None:  # the teacher saw one window of each crop (teacher_cache --window): train on that window
        side = tokens.shape[-1] * 16
        out = np.ascontiguousarray(out[:, off : off + side, off : off + side])
    return out, tokens


def kd_tokenizer(kd: Path) -> Tokenizer:
    """The image tokenizer of a vq-kd-tiny file (``dinov2-small`` loaded at first use)."""
    from ..models.loading import load_teacher
    from ..models.vqkd import attach_teacher, load_vqkd_file

    return attach_teacher(load_vqkd_file(kd)[0], load_teacher)


def exportable(model: BEiTForMIM) -> BEiTForMIM:
    """``model`` itself, or a copy whose tied head is folded into the usual linear ``lm_head``."""
    if not isinstance(model.lm_head, CodebookHead):
        return model
    out = BEiTForMIM(model.config)
    out.load_state_dict(with_head(model.state_dict(), model.lm_head.folded()), strict=True)
    return out


def with_head(state: dict[str, torch.Tensor], head: torch.nn.Module) -> dict[str, torch.Tensor]:
    """``state`` (a BEiTForMIM state dict) with its ``lm_head.*`` entries replaced by ``head``'s."""
    out = {k: v for k, v in state.items() if not k.startswith("lm_head.")}
    out.update({f"lm_head.{k}": v for k, v in head.state_dict().items()})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Train beit-tiny over vq-tiny tokens (resumable).")
    ap.add_argument("--data", type=Path, default=Path(".train/data"))
    ap.add_argument("--vq", type=Path, default=Path("assets/models/vq-tiny.safetensors"))
    ap.add_argument("--out", type=Path, default=Path("assets/models/beit-tiny.safetensors"))
    ap.add_argument("--ckpt", type=Path, default=Path(".train/beit/ckpt.pt"))
    ap.add_argument("--tokens", type=Path, default=Path(".train/beit/crop_tokens.npy"))
    ap.add_argument("--hours", type=float, default=0.9, help="wall-clock budget of the cosine schedule")
    ap.add_argument("--init-encoder", type=Path, default=None,
                    help="start the encoder from a vitviz MAE file of the same shape (e.g. mae-tiny)")
    ap.add_argument("--init", type=Path, default=None,
                    help="start from an exported beit-tiny file (a new schedule; no optimiser state)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.05)
    ap.add_argument("--warmup", type=int, default=80)
    ap.add_argument("--weight-decay", type=float, default=0.05)
    ap.add_argument("--ratio", type=float, default=0.4)
    ap.add_argument("--visible-steps", type=int, default=0,
                    help="a warm-up stage: for the first N steps of this run the loss scores every position "
                         "(the visible patches' own tokens too: the ViT learns vq-tiny's codes); BEiT's "
                         "hidden-only loss after it")
    ap.add_argument("--visible-weight", type=float, default=0.0,
                    help="after the warm-up stage, add this weight x the cross-entropy on the visible positions' own "
                         "tokens (more signal for learning vq-tiny's codes; BEiT's loss alone is 0)")
    ap.add_argument("--codebook-head", action="store_true",
                    help="train with a head tied to vq-tiny's codebook (logits = negative distance of a predicted "
                         "point in code space to each code); exported folded into the usual linear head")
    ap.add_argument("--latent-weight", type=float, default=0.0,
                    help="with --codebook-head: add this weight x the MSE between the predicted point and vq-tiny's "
                         "own encoder vector at hidden positions (divided by that vector's variance)")
    ap.add_argument("--save-every", type=int, default=50)
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-only", action="store_true", help="print the evaluation table of --out and exit")
    ap.add_argument("--split", choices=("validation", "test"), default="validation",
                    help="evaluation photos: the validation photos of --data, or the test set (looked at once)")
    ap.add_argument("--test-dir", type=Path, default=Path(".train/test"), help="PNGs of vitviz.training.testset")
    ap.add_argument("--most-frequent-code", type=int, default=None,
                    help="with --eval-only: the training crops' most frequent code, if already measured")
    ap.add_argument("--eval-seeds", type=int, default=10)
    ap.add_argument("--table", type=Path, default=Path("assets/models/beit-tiny.heldout.json"))
    ap.add_argument("--kd", type=Path, default=None,
                    help="targets from this vq-kd-tiny file instead of --vq (beit-tiny-v2): the crops are those "
                         "of --kd-cache, their ids made by `train_vqkd --crop-tokens`")
    ap.add_argument("--kd-cache", type=Path, default=Path(".train/kd"),
                    help="with --kd: the folder of vitviz.training.teacher_cache and crop_tokens.npy")
    ap.add_argument("--mirror", type=float, default=0.5,
                    help="probability of a mirrored sample (0 for VQ-KD windows: the teacher never saw their mirrors)")
    ap.add_argument("--new-head", action="store_true",
                    help="with --init: keep the file's encoder but start a new lm_head (its head is over another "
                         "tokenizer's codes)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    if args.eval_only and args.most_frequent_code is not None:
        most_frequent = args.most_frequent_code  # measured on the training crops before (their JSON)
    else:
        crops = np.load(args.data / "train_crops.npy", mmap_mode="r")
        if args.kd is not None:
            crops, tokens = kd_crop_tokens(args.kd, args.kd_cache, crops)
        else:
            tokens = crop_tokens(args.vq, crops, args.tokens)
        counts = np.bincount(tokens.reshape(-1).astype(np.int64), minlength=BEIT_TINY_CONFIG.vocab_size)
        most_frequent = int(counts.argmax())

    tok = args.vq if args.kd is None else kd_tokenizer(args.kd)
    tok_path = args.vq if args.kd is None else args.kd
    if args.eval_only:
        model, meta = load_beit_file(args.out)
        seeds = tuple(range(args.eval_seeds))
        photos = split_paths(args.data, args.split, args.test_dir)
        table = {"model": "beit-tiny" if args.kd is None else "beit-tiny-v2", "step": meta.get("step"),
                 "train_hours": meta.get("train_hours"), "tokenizer": tok_path.stem,
                 "vq": file_digest(tok_path), "most_frequent_code": most_frequent, "split": args.split,
                 "block": heldout_table(model, tok, photos, most_frequent, seeds, args.ratio, "block"),
                 "random": heldout_table(model, tok, photos, most_frequent, seeds, args.ratio, "random")}
        args.table.write_text(json.dumps(table, indent=1) + "\n")
        print(json.dumps(table, indent=1))
        return 0

    model = BEiTForMIM(BEIT_TINY_CONFIG)
    c = model.config
    vq_model, _ = load_vq_file(args.vq)
    if args.codebook_head:  # swapped in before the optimiser and any loading: checkpoints hold its keys
        model.lm_head = CodebookHead(c.embed_dim, vq_model.codebook)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "token" not in n and "pos_embed" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "token" not in n
                                                                and "pos_embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.98))
    step, elapsed, seen = 0, 0.0, 0
    args.ckpt.parent.mkdir(parents=True, exist_ok=True)
    log_path = args.ckpt.parent / "train_log.jsonl"
    if args.ckpt.exists():
        state = torch.load(args.ckpt, weights_only=True)
        model.load_state_dict(state["model"], strict=True)
        opt.load_state_dict(state["opt"])
        step, elapsed, seen = int(state["step"]), float(state["elapsed"]), int(state["images"])
        print(f"resumed at step {step}, {elapsed / 3600:.2f} h")
    elif args.init is not None:
        start, _ = load_beit_file(args.init)  # a tied head starts fresh: the file's linear head is not its kind
        model.load_state_dict(with_head(start.state_dict(), model.lm_head) if args.codebook_head or args.new_head
                              else start.state_dict(), strict=True)
        print(f"weights initialised from {args.init}")
    elif args.init_encoder is not None:
        copied = init_encoder_from_mae(model, args.init_encoder)
        print(f"encoder initialised from {args.init_encoder} ({len(copied)} tensors)")
    budget = args.hours * 3600.0
    vq_digest = file_digest(tok_path)
    model.train()
    t_last = time.perf_counter()
    while elapsed < budget:
        progress = min(1.0, elapsed / budget)
        lr = args.lr * min(1.0, (step + 1) / args.warmup)
        lr *= args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress))
        for group in opt.param_groups:
            group["lr"] = lr
        g = torch.Generator().manual_seed(args.seed * 1_000_003 + step)  # resumable without saved RNG state
        rng = np.random.default_rng([args.seed, step])
        x, tgt = sample_batch(crops, tokens, args.batch, c.img_size, g, args.mirror)
        mask = torch.from_numpy(np.stack([block_mask(c.grid, args.ratio, rng) for _ in range(args.batch)]))
        mask = mask.flatten(1)
        feats = model.features(normalize(x, c), mask)  # (B, L, D)
        logits = model.lm_head(feats)
        if step < args.visible_steps:  # warm-up: every position's token (see --visible-steps)
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt.flatten())
        else:
            loss = mim_loss(logits, tgt, mask)
            if args.visible_weight > 0:
                loss = loss + args.visible_weight * mim_loss(logits, tgt, ~mask)
        if args.codebook_head and args.latent_weight > 0:
            with torch.no_grad():
                z = vq_model.encode(x).flatten(1, 2)  # (B, L, C)
            zt = z[mask]
            loss = loss + args.latent_weight * (model.lm_head.point(feats[mask]) - zt).pow(2).mean() / zt.var()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 3.0)
        opt.step()
        step += 1
        seen += args.batch
        now = time.perf_counter()
        elapsed += now - t_last
        done = elapsed >= budget
        if step % 10 == 0 or done:
            acc = float((logits.detach()[mask].argmax(-1) == tgt[mask]).float().mean())
            rec = {"step": step, "loss": round(loss.item(), 4), "train_top1": round(acc, 4), "lr": lr,
                   "stage": "all positions" if step <= args.visible_steps else "hidden only",
                   "elapsed_h": round(elapsed / 3600, 4)}
            if step % args.eval_every == 0 or done:
                t = heldout_table(model, tok, split_paths(args.data, "validation", args.test_dir), most_frequent,
                                  (0, 1, 2), args.ratio)
                rec.update(heldout_top1=t["top1"], heldout_top5=t["top5"], heldout_most_frequent=t["most_frequent"],
                           heldout_nearest_visible=t["nearest_visible"])
            if step % args.save_every == 0 or done:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                            "elapsed": elapsed, "images": seen}, args.ckpt)
                export_beit(exportable(model), args.out, {"step": str(step), "images": str(seen), "vq": vq_digest,
                                              "most_frequent_code": str(most_frequent),
                                              "init_encoder": args.init_encoder.name if args.init_encoder else "none",
                                              "init": args.init.name if args.init else "none",
                                              "visible_steps": str(args.visible_steps),
                                              "codebook_head": str(args.codebook_head),
                                              "visible_weight": str(args.visible_weight),
                                              "latent_weight": str(args.latent_weight),
                                              "tokenizer": tok_path.stem, "new_head": str(args.new_head),
                                              "train_hours": f"{elapsed / 3600:.3f}"})
            with log_path.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
            print(json.dumps(rec), flush=True)
        t_last = time.perf_counter()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
