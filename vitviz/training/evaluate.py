"""Evaluation of MAEs against the ring-mean baseline, on the validation photos or the test set.

Usage::

    python -m vitviz.training.evaluate --data .train/data --out assets/models/heldout
    python -m vitviz.training.evaluate --split test --json assets/models/mae-tiny.test.json   # once per release
    python -m vitviz.training.evaluate --data .train/data \\
        --model first=.train/mae-tiny-v1.safetensors --model new=assets/models/mae-tiny.safetensors \\
        --out assets/models/heldout --json assets/models/heldout.json

``--model`` takes a registry name (default ``mae-tiny``) or ``LABEL=FILE`` for an
exported vitviz MAE file (safetensors with its config in the metadata, loaded
strictly); give it several times to compare models side by side.

For every evaluation photo (``--split validation``: the photos listed in ``manifest.json``
by :mod:`vitviz.training.data`, never trained on but used to choose between runs;
``--split test``: :mod:`vitviz.training.testset`, looked at once per release) and each seed, the photo is masked at 75% (random
pattern), reconstructed by each model and by :func:`vitviz.mae.baseline.ring_mean_fill`,
and these are recorded (definitions in :mod:`vitviz.training.measures`):

- the hidden-patch MSE (RGB in [0, 1]) of each model and of the baseline, and their ratio;
- the mosaic factor of each model's raw output with the visible patches pasted back
  (no smoothing added), of the baseline, and of the photo itself under the same masks;
- the attention locality of each model: its most local head of layers 1-2 at 0% masking,
  as mean attention distance ÷ the distance of uniform attention (per photo, and for
  the distances averaged over all photos).

Prints a Markdown table and writes one comparison PNG per photo (original, masked,
each model raw and with the visible patches pasted, baseline).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from ..core.images import DataConfig, uint8_to_unit, unit_to_uint8
from ..explain.attention import capture
from ..explain.rollout import uniform_distance
from ..mae.baseline import ring_mean_fill
from ..mae.reconstruct import reconstruct
from ..models.checkpoint import build_mae_strict, read_mae_file
from ..models.loading import LoadedModel, load_model
from ..models.mae import MAEConfig
from ..models.registry import get_spec
from ..render._draw import label_row
from .measures import mosaic_factor, most_local_head
from .testset import split_paths


@dataclass(frozen=True)
class Candidate:
    """A model under evaluation: a label for the table and the loaded model."""

    label: str
    model: LoadedModel


def load_candidate(arg: str) -> Candidate:
    """``NAME`` (registry) or ``LABEL=FILE`` (an exported vitviz MAE file) -> :class:`Candidate`."""
    if "=" not in arg:
        return Candidate(arg, load_model(arg, device="cpu"))
    label, path = arg.split("=", 1)
    sd, meta = read_mae_file(Path(path))
    if "config" not in meta:
        raise ValueError(f"{path} has no architecture config in its metadata")
    config = MAEConfig(**json.loads(meta["config"]))
    module = build_mae_strict(config, sd, f"weights {path}").eval()
    model = LoadedModel(name="mae-tiny", spec=get_spec("mae-tiny"), module=module,
                        data_config=DataConfig(input_size=config.img_size), device=torch.device("cpu"))
    return Candidate(label, model)


def _hidden_px(mask: np.ndarray, p: int) -> np.ndarray:
    return np.repeat(np.repeat(mask, p, 0), p, 1)


def evaluate(candidates: list[Candidate], photos: list[Path], seeds: list[int], ratio: float,
             out: Path | None) -> tuple[list[dict], dict]:
    """Per-photo measures of every candidate and of the baseline, averaged over ``seeds``.

    Returns:
        ``(rows, summary)``: one dict per photo with ``name``, ``baseline_mse``,
        ``baseline_mosaic``, ``photo_mosaic`` and, per candidate label ``X``: ``X_mse``,
        ``X_ratio`` (MSE ÷ baseline MSE), ``X_mosaic``, ``X_locality``; ``summary``
        holds the means over photos and ``X_locality`` of the mean distances.
    """
    rows: list[dict] = []
    distances: dict[str, list[np.ndarray]] = {c.label: [] for c in candidates}
    uniform = 0.0
    for path in photos:
        row: dict = {"name": path.stem}
        b_err, b_mos, p_mos = [], [], []
        panels: list[tuple[str, np.ndarray]] = []
        for ci, cand in enumerate(candidates):
            m_err, m_mos = [], []
            for seed in seeds:
                r = reconstruct(cand.model, path, mask_ratio=ratio, seed=seed, pattern="random")
                m_err.append(r.masked_mse)
                m_mos.append(mosaic_factor(r.pasted, r.mask, r.patch_size))
                if ci == 0:
                    base = unit_to_uint8(ring_mean_fill(uint8_to_unit(r.original), torch.from_numpy(r.mask),
                                                        r.patch_size))
                    d = (base.astype(np.float64) - r.original.astype(np.float64)) / 255.0
                    b_err.append(float((d[_hidden_px(r.mask, r.patch_size)] ** 2).mean()))
                    b_mos.append(mosaic_factor(base, r.mask, r.patch_size))
                    p_mos.append(mosaic_factor(r.original, r.mask, r.patch_size))
                if seed == seeds[0]:
                    if ci == 0:
                        panels += [("original", r.original), (f"masked {ratio:.0%} (seed {seed})", r.masked)]
                        first_base = base
                    panels += [(f"{cand.label} raw", r.reconstruction), (f"{cand.label} + visible", r.pasted)]
            maps = capture(cand.model, r.original)  # 0% masking
            dist = maps.mean_distance()
            uniform = uniform_distance(maps.layout)
            distances[cand.label].append(dist)
            row[f"{cand.label}_mse"] = float(np.mean(m_err))
            row[f"{cand.label}_mosaic"] = float(np.mean(m_mos))
            row[f"{cand.label}_locality"] = most_local_head(dist, uniform)
        row["baseline_mse"] = float(np.mean(b_err))
        row["baseline_mosaic"] = float(np.mean(b_mos))
        row["photo_mosaic"] = float(np.mean(p_mos))
        for cand in candidates:
            row[f"{cand.label}_ratio"] = row[f"{cand.label}_mse"] / row["baseline_mse"]
        rows.append(row)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            panels.append(("ring-mean baseline", first_base))
            Image.fromarray(label_row(panels)).save(out / f"{path.stem}.png")
    summary: dict = {"baseline_mse": float(np.mean([r["baseline_mse"] for r in rows])),
                     "baseline_mosaic": float(np.mean([r["baseline_mosaic"] for r in rows])),
                     "photo_mosaic": float(np.mean([r["photo_mosaic"] for r in rows])),
                     "uniform_distance_px": uniform}
    for cand in candidates:
        k = cand.label
        summary[f"{k}_mse"] = float(np.mean([r[f"{k}_mse"] for r in rows]))
        summary[f"{k}_ratio"] = summary[f"{k}_mse"] / summary["baseline_mse"]
        summary[f"{k}_mean_photo_ratio"] = float(np.mean([r[f"{k}_ratio"] for r in rows]))
        summary[f"{k}_mosaic"] = float(np.mean([r[f"{k}_mosaic"] for r in rows]))
        summary[f"{k}_locality"] = most_local_head(np.mean(distances[k], axis=0), uniform)
        summary[f"{k}_distance_px"] = np.mean(distances[k], axis=0).round(1).tolist()
    return rows, summary


def markdown(rows: list[dict], summary: dict, labels: list[str]) -> str:
    """The evaluation table: per photo, the MSEs, MSE ÷ baseline, mosaic factors and locality."""
    head = ["photo", "baseline MSE"]
    for k in labels:
        head += [f"{k} MSE", f"{k} ÷ baseline", f"{k} mosaic", f"{k} locality"]
    head += ["baseline mosaic", "photo mosaic"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(head) - 1)) + " |"]

    def cells(r: dict, bold: bool = False) -> list[str]:
        c = [f"{r['baseline_mse']:.5f}"]
        for k in labels:
            c += [f"{r[f'{k}_mse']:.5f}", f"{r[f'{k}_ratio']:.3f}", f"{r[f'{k}_mosaic']:.2f}",
                  f"{r[f'{k}_locality']:.2f}"]
        c += [f"{r['baseline_mosaic']:.2f}", f"{r['photo_mosaic']:.2f}"]
        return [f"**{x}**" for x in c] if bold else c

    for r in rows:
        lines.append("| " + " | ".join([r["name"], *cells(r)]) + " |")
    lines.append("| " + " | ".join([f"**all {len(rows)}**", *cells(summary, bold=True)]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Compare MAEs with the ring-mean baseline on validation or test photos.")
    ap.add_argument("--data", type=Path, default=Path(".train/data"))
    ap.add_argument("--model", action="append", default=None,
                    help="registry name or LABEL=FILE (repeat to compare); default mae-tiny")
    ap.add_argument("--split", choices=("validation", "test"), default="validation",
                    help="evaluation photos: the validation photos of --data, or the test set (looked at once)")
    ap.add_argument("--test-dir", type=Path, default=Path(".train/test"), help="PNGs of vitviz.training.testset")
    ap.add_argument("--ratio", type=float, default=0.75)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--out", type=Path, default=None, help="folder for comparison PNGs")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    photos = split_paths(args.data, args.split, args.test_dir)
    candidates = [load_candidate(a) for a in (args.model or ["mae-tiny"])]
    labels = [c.label for c in candidates]
    if len(set(labels)) != len(labels):
        raise ValueError(f"model labels must differ, got {labels}")
    rows, summary = evaluate(candidates, photos, args.seeds, args.ratio, args.out)
    print(markdown(rows, summary, labels))
    print(f"\nratio = hidden-patch MSE ÷ ring-mean baseline MSE ({args.ratio:.0%} random masking, seeds "
          f"{args.seeds}); bottom row: means over photos, ratio of the mean MSEs, locality of the mean "
          f"distances (uniform attention: {summary['uniform_distance_px']:.1f} px)")
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "summary": summary, "ratio": args.ratio, "split": args.split,
                                         "seeds": args.seeds, "models": args.model or ["mae-tiny"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
