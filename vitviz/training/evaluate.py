"""Held-out evaluation of an MAE against the ring-mean baseline.

Usage::

    python -m vitviz.training.evaluate --data .train/data --out assets/models/heldout

For every held-out photo (listed in ``manifest.json`` by :mod:`vitviz.training.data`,
never used in training) and each seed, the photo is masked at 75% (random
pattern), reconstructed by the model and by :func:`vitviz.baseline.ring_mean_fill`,
and the hidden-patch MSE (RGB in [0, 1]) of both is recorded. Prints a Markdown
table and writes one comparison PNG per photo (original, masked, MAE with the
visible patches pasted, baseline).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from ..mae.baseline import ring_mean_fill
from ..core.images import uint8_to_unit, unit_to_uint8
from ..models.loading import load_model
from ..mae.reconstruct import reconstruct
from ..render._draw import label_row


def evaluate(model_name: str, photos: list[Path], seeds: list[int], ratio: float, out: Path | None) -> list[dict]:
    """Per-photo MSE of the model and the baseline, averaged over ``seeds``.

    Returns:
        One dict per photo: ``name``, ``model_mse``, ``baseline_mse``, ``improvement``.
    """
    model = load_model(model_name, device="cpu")
    rows = []
    for path in photos:
        m_err, b_err = [], []
        first = None
        for seed in seeds:
            r = reconstruct(model, path, mask_ratio=ratio, seed=seed, pattern="random")
            base = unit_to_uint8(ring_mean_fill(uint8_to_unit(r.original), torch.from_numpy(r.mask), r.patch_size))
            hidden = np.repeat(np.repeat(r.mask, r.patch_size, 0), r.patch_size, 1)
            d = (base.astype(np.float64) - r.original.astype(np.float64)) / 255.0
            m_err.append(r.masked_mse)
            b_err.append(float((d[hidden] ** 2).mean()))
            if first is None:
                first = (r, base)
        mm, bb = float(np.mean(m_err)), float(np.mean(b_err))
        rows.append({"name": path.stem, "model_mse": mm, "baseline_mse": bb, "improvement": 1 - mm / bb})
        if out is not None and first is not None:
            r, base = first
            out.mkdir(parents=True, exist_ok=True)
            panel = label_row([("original", r.original), (f"masked {ratio:.0%} (seed {seeds[0]})", r.masked),
                               (f"{model_name} + visible", r.pasted), (f"{model_name} raw", r.reconstruction),
                               ("ring-mean baseline", base)])
            Image.fromarray(panel).save(out / f"{path.stem}.png")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Compare an MAE with the ring-mean baseline on held-out photos.")
    ap.add_argument("--data", type=Path, default=Path(".train/data"))
    ap.add_argument("--model", default="mae-tiny")
    ap.add_argument("--ratio", type=float, default=0.75)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--out", type=Path, default=None, help="folder for comparison PNGs")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    manifest = json.loads((args.data / "manifest.json").read_text())
    photos = [Path(h["path"]) for h in manifest["heldout"]]
    rows = evaluate(args.model, photos, args.seeds, args.ratio, args.out)
    print(f"| photo | {args.model} MSE | baseline MSE | {args.model} lower by |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['name']} | {r['model_mse']:.5f} | {r['baseline_mse']:.5f} | {r['improvement']:.1%} |")
    mm = float(np.mean([r["model_mse"] for r in rows]))
    bb = float(np.mean([r["baseline_mse"] for r in rows]))
    print(f"| **mean** | {mm:.5f} | {bb:.5f} | {1 - mm / bb:.1%} |")
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "mean_model": mm, "mean_baseline": bb,
                                         "improvement": 1 - mm / bb, "ratio": args.ratio, "seeds": args.seeds},
                                        indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
