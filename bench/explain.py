"""Cost of the four explanation maps (and of the faithfulness curves) against one forward
plus one backward pass of the same model.

Usage::

    python bench/explain.py [--model vit-base] [--repeats 5] [--warmup 1] [--threads N] [--curves]
    python bench/explain.py --precision [int8] [--model dinov2-small-lab8]
    python bench/explain.py --baseline 120 [--model dinov2-small-lab8]

Random weights (no download; weights do not change the cost), batch 1 at the model's
input size, one random image. The variants are timed in the same run, interleaved
(``bench.common.interleaved``), and printed as a median in ms and as a ratio to the
reference: one forward and one backward pass (the model as loaded, input requiring
grad, ``torch.autograd.grad`` of the top logit with respect to the input). Rows:

* plain forward, inference mode (for scale);
* forward + backward (reference);
* gradient capture alone (:func:`vitviz.explain.capture.capture_gradients`: every block's
  attention kept in the graph, the backward to all of them and to the last block's input);
* the four maps end to end (:func:`vitviz.explain.methods.explain_maps`: image to read-only
  maps, rollout and gradient-weighted rollout included; target <= 4x the reference, issue 20).

With ``--curves``, the deletion + insertion curves of the four maps (8 steps, drop and grey)
are timed once each, after the table (each is many forwards; their cost is stated as a
multiple of the reference too).

With ``--precision``, the curves in bf16 against fp32 instead (what the app's ``auto`` picks on a
CPU with native bf16, :func:`vitviz.models.precision.curve_precision`): for each example photo and
its mirror image, the explanation's four maps and three random orders, 8 steps, both removals, each
precision timed once per image (alternated; a fresh row store, so every input runs), and the largest
difference of an area and of a single curve point. The model runs with its real weights when they are
here (default dinov2-small-lab8: probabilities far from 1/C, where bf16's rounding shows). ``--precision int8``
compares the model loaded with int8 kernels (``VITVIZ_PRECISION=int8``: dynamically quantised linear layers)
instead of the bf16 copy.

With ``--baseline N``, the app's random baseline (three orders; a random order's insertion runs along its
reverse, so its two areas are equal) against ``N`` independent random orders for each curve, per example
photo: the two estimate the same chance level when the independent deletion and insertion means agree with
each other and with the app's, within their spread.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import interleaved  # noqa: E402
from vitviz.core.images import model_input  # noqa: E402
from vitviz.explain.capture import capture_gradients  # noqa: E402
from vitviz.explain.faithfulness import faithfulness  # noqa: E402
from vitviz.explain.methods import explain_maps  # noqa: E402
from vitviz.models.loading import load_model  # noqa: E402


def precision_table(choice: str, low: str = "bf16") -> int:
    """``low`` (``bf16``, or ``int8``: the model loaded with dynamically quantised linear layers) curves against
    fp32 on the example photos and their mirror images (module docstring)."""
    from PIL import Image

    from vitviz.assets import example_images
    from vitviz.models.loading import load_choice, load_model, parse_choice

    model = load_choice(choice)
    name, random_init = parse_choice(choice)
    # int8: its own load of the model (quantised kernels), run as it is; bf16: a bf16 copy of the fp32 model
    runs = {"fp32": (model, "fp32"), low: (load_model(name, random_init=random_init, kernels="int8"), "fp32")
            if low == "int8" else (model, "bf16")}
    photos = [(Path(p).stem + flip, im.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if flip else im)
              for p in example_images() for im in [Image.open(p).convert("RGB")] for flip in ("", " (mirror)")]
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"# {choice}{' (random weights)' if model.random_init else ''}, 8 steps, 4 maps + 3 random orders; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads; load {load}")
    print(f"| photo | removal | fp32 s | {low} s | {low} / fp32 | largest area difference | largest point difference |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    worst_auc = worst_point = 0.0
    ratios = []
    for photo, im in photos:
        e = explain_maps(model, im)
        for removal in ("drop", "grey"):
            out, secs = {}, {}
            for key, (m, precision) in runs.items():
                t0 = time.perf_counter()
                out[key] = faithfulness(m, e.image, e.target, removal=removal, steps=8, explanation=e,
                                        known={}, precision=precision)
                secs[key] = time.perf_counter() - t0
            a, b = out["fp32"], out[low]
            areas = [abs(x - y) for m in a.methods for x, y in zip(a.auc()[m], b.auc()[m])]
            areas += [abs(a.random_auc()[k] - b.random_auc()[k]) for k in (0, 2)]
            points = [float(np.abs(getattr(a, c)[m] - getattr(b, c)[m]).max())
                      for m in a.methods for c in ("deletion", "insertion")]
            worst_auc, worst_point = max(worst_auc, *areas), max(worst_point, *points)
            ratios.append(secs[low] / secs["fp32"])
            print(f"| {photo} | {removal} | {secs['fp32']:.2f} | {secs[low]:.2f} | {ratios[-1]:.2f}x | "
                  f"{max(areas):.4f} | {max(points):.4f} |", flush=True)
    print(f"\nlargest area difference {worst_auc:.4f}, largest point difference {worst_point:.4f}; {low} / fp32 "
          f"median {float(np.median(ratios)):.2f}x; load {Path('/proc/loadavg').read_text().split()[0]} at the end")
    return 0


def baseline_table(choice: str, orders: int) -> int:
    """The app's random baseline (:data:`~vitviz.explain.faithfulness.RANDOM_ORDERS` orders, insertion along each
    order's reverse) against ``orders`` independent random orders, each curve along its own order, on the example
    photos: is the chance level the same within the spread?"""
    from vitviz.assets import example_images
    from vitviz.explain.faithfulness import RANDOM_ORDERS, curves_for
    from vitviz.models.loading import load_choice
    from vitviz.models.precision import curve_precision

    model = load_choice(choice)
    precision = curve_precision(model.device)
    print(f"# {choice}{' (random weights)' if model.random_init else ''}, drop, 8 steps, {precision}; "
          f"{RANDOM_ORDERS} reversed-insertion orders (the app's) against {orders} independent orders "
          f"(seed 123, deletion and insertion each along its own order); load "
          f"{Path('/proc/loadavg').read_text().split()[0]}")
    print("| photo | class | app: deletion = insertion area, mean ± std | independent: deletion | "
          "independent: insertion |")
    print("| --- | --- | ---: | ---: | ---: |")
    rng = np.random.default_rng(123)
    for path in example_images():
        e = explain_maps(model, path)
        app = faithfulness(model, e.image, e.target, explanation=e, known={}, precision=precision)
        d_mean, d_std, i_mean, _ = app.random_auc()
        x = model_input(e.image, model.data_config, model.device)
        p = app.num_patches
        deletion = curves_for(model.module, x, {i: rng.permutation(p) for i in range(orders)}, e.target,
                              precision=precision).auc()
        insertion = curves_for(model.module, x, {i: rng.permutation(p) for i in range(orders)}, e.target,
                               precision=precision).auc()
        d = np.array([deletion[i][0] for i in range(orders)])
        i = np.array([insertion[k][1] for k in range(orders)])
        print(f"| {Path(path).stem} | {e.class_name} | {d_mean:.3f} ± {d_std:.3f} (insertion {i_mean:.3f}) | "
              f"{d.mean():.3f} ± {d.std():.3f} (sem {d.std() / np.sqrt(orders):.3f}) | "
              f"{i.mean():.3f} ± {i.std():.3f} (sem {i.std() / np.sqrt(orders):.3f}) |", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="vit-base", help="registry name (random weights)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    ap.add_argument("--curves", action="store_true", help="also time the deletion/insertion curves once")
    ap.add_argument("--precision", nargs="?", const="bf16", choices=("bf16", "int8"), default=None,
                    help="curves in bf16 (default) or int8 against fp32: time and error")
    ap.add_argument("--baseline", type=int, metavar="N", default=0,
                    help="the random baseline against N independent random orders on the example photos")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.baseline:
        return baseline_table("dinov2-small-lab8" if args.model == "vit-base" else args.model, args.baseline)
    if args.precision:
        return precision_table("dinov2-small-lab8" if args.model == "vit-base" else args.model, args.precision)
    model = load_model(args.model, random_init=True, device="cpu")
    module = model.module
    size = model.input_size
    view = np.random.default_rng(0).integers(0, 256, (size, size, 3), dtype=np.uint8)
    x = model_input(view, model.data_config, model.device)

    def forward() -> None:
        with torch.inference_mode():
            module(x)

    def forward_backward() -> None:
        xi = x.clone().requires_grad_(True)
        out = module(xi)
        torch.autograd.grad(out[0, int(out[0].argmax())], xi)

    def capture() -> None:
        capture_gradients(module.blocks, lambda: module(x), lambda out: out[0, int(out[0].argmax())])

    variants = {
        "plain forward (inference mode)": forward,
        "forward + backward (reference)": forward_backward,
        "gradient capture only": capture,
        "four maps, end to end (explain_maps)": lambda: explain_maps(model, view),
    }
    ms = {k: 1000 * v for k, v in interleaved(variants, args.warmup, args.repeats).items()}
    ref = ms["forward + backward (reference)"]
    print(f"# {args.model}, random weights, batch 1, {size}x{size}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; median of {args.repeats} after {args.warmup} warm-up, interleaved")
    print(f"| {'variant':<44} | {'ms':>9} | {'x fwd+bwd':>9} |")
    print(f"|{'-' * 46}|{'-' * 11}|{'-' * 11}|")
    for name, v in ms.items():
        print(f"| {name:<44} | {v:9.1f} | {v / ref:9.2f} |")
    if args.curves:
        e = explain_maps(model, view)
        for removal in ("drop", "grey"):
            t0 = time.perf_counter()
            c = faithfulness(model, view, removal=removal, steps=8, explanation=e)
            v = 1000 * (time.perf_counter() - t0)
            label = f"curves, 4 maps x 2, 8 steps, {removal} (once)"
            print(f"| {label:<44} | {v:9.1f} | {v / ref:9.2f} |  ({len(c.counts)} points per curve)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
