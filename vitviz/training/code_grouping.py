"""Measure whether each tokenizer's codes group by class on the labelled photo set (``assets/labelled``).

Usage::

    python -m vitviz.training.labelled --work .train/labelled          # the 268 photos, first
    python -m vitviz.training.code_grouping --photos .train/labelled \\
        --out assets/models/vq-kd-tiny.grouping.json

Every photo (all splits: no model is chosen here) is tokenized at 224 px by ``vq-tiny`` and
``vq-kd-tiny``; :func:`vitviz.beit.grouping.grouping_summary` gives each tokenizer's class purity of
codes, against the purity left when the photos' labels are shuffled.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ..beit.grouping import grouping_summary
from ..probing.features import load_manifest


def main(argv: list[str] | None = None) -> int:
    from ..beit.api import tokenize
    from ..models.loading import load_model

    ap = argparse.ArgumentParser(description="Class purity of tokenizer codes on the labelled photos.")
    ap.add_argument("--photos", type=Path, default=Path(".train/labelled"), help="vitviz.training.labelled's folder")
    ap.add_argument("--tokenizers", nargs="+", default=["vq-tiny", "vq-kd-tiny"])
    ap.add_argument("--out", type=Path, default=Path("assets/models/vq-kd-tiny.grouping.json"))
    args = ap.parse_args(argv)
    manifest = load_manifest()
    classes = manifest["classes"]
    rows = manifest["photos"]
    labels = [classes.index(r["label"]) for r in rows]
    out = {"photos": len(rows), "classes": classes, "tokenizers": {}}
    for name in args.tokenizers:
        tok = load_model(name, device="cpu")
        ids = [tokenize(tok, args.photos / "images" / f"{r['id']}.png").ids for r in rows]
        k = tok.module.codebook_size
        out["tokenizers"][name] = grouping_summary(ids, labels, k, len(classes))
        np.save(args.photos / f"ids-{name}.npy", np.stack(ids))
        print(name, json.dumps(out["tokenizers"][name]), flush=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
