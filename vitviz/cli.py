"""Command line: ``python -m vitviz <command>``.

Commands:
    models        list every model, whether it is available here and why not
    reconstruct   mask an image, reconstruct it, write the four panels as one PNG
    sweep         an animated GIF of the reconstruction as the masking ratio rises
    attention     attention rollout of the class token as a PNG overlay
    explain       why a classifier said a class: the four maps as a PNG, deletion/insertion areas
    tokens        BEiT visual tokens of an image: PNG of image, token map and decoded image; JSON of ids
    features      PCA feature map of one layer's patch tokens as a PNG (--probes: R^2 by layer)
    flops         the compute tables (global vs windowed attention, models, MAE) as CSV
    settings      every VITVIZ_* setting: its value here, default and meaning
    doctor        is this MAE checkpoint healthy? findings with evidence and what to do (--json: as data)
    ablate        switch heads or tokens off: the prediction (or MAE error) before and after, heads ranked
    logit-lens    every layer read through the final norm and head (an MAE: its decoder's picture by layer)

Global options (before or after the command):
    --weights-dir DIR   a local folder of weights searched first, holding files under
                        their upstream names (sets VITVIZ_WEIGHTS_DIR for this run)
    --heads N, --decoder-heads N
                        head counts of your own checkpoint (``--model PATH``) when its file
                        does not name them

``--model`` takes a registry name or the path of your own checkpoint (a facebookresearch/mae,
timm, DeiT or DINO file, or a Hugging Face snapshot folder): see :mod:`vitviz.models.local`.

Exit codes: 0 success, 1 a user error (bad image, unknown model, bad parameter,
model unavailable), 2 bad command-line usage. Errors go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .assets import image_or_example
from .errors import ImageError, ModelUnavailable
from .core.mask_names import PATTERNS


#: Help of every IMAGE argument (a name is a bundled example: vitviz.assets.image_or_example).
IMAGE_HELP = "input image file, or a bundled example photo's name (astronaut, chelsea, coffee, rocket)"


def _load(args: argparse.Namespace, random_init: bool = False):  # noqa: ANN202 - a LoadedModel (lazy import)
    """``--model``: a name, or your own checkpoint's path (``--heads`` / ``--decoder-heads`` for its head counts)."""
    from .models.loading import open_model

    return open_model(args.model, device=args.device, random_init=random_init, heads=args.heads,
                      decoder_heads=args.decoder_heads)


def _models(args: argparse.Namespace) -> int:
    from .models.loading import available_models

    rows = available_models()
    width = max(len(r.name) for r in rows)
    for r in rows:
        if r.available:
            status = f"available ({r.reason})" if r.reason else "available"
        else:
            status = f"unavailable: {r.reason}"
        print(f"{r.name:<{width}}  {r.family:<5}  {status}")
        print(f"{'':<{width}}  {r.architecture}. {r.description} Licence: {r.licence}")
    return 0


def _reconstruct(args: argparse.Namespace) -> int:
    import numpy as np
    from PIL import Image

    from .mae.reconstruct import reconstruct
    from .render._draw import label_row

    model = _load(args)
    r = reconstruct(model, args.image, mask_ratio=args.ratio, seed=args.seed, pattern=args.pattern)
    row = label_row([
        ("original", r.original),
        (f"masked {r.mask_ratio:.0%}", r.masked),
        ("reconstruction", r.reconstruction),
        ("reconstruction + visible", r.pasted),
    ])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.asarray(row)).save(args.out)
    metrics = {"model": args.model, "image": str(args.image), "seed": args.seed, "pattern": args.pattern,
               **r.metrics()}
    if args.json is not None:
        args.json.write_text(json.dumps(metrics, indent=2))
    print(f"hidden-patch MSE {r.masked_mse:.5f} (PSNR {r.psnr:.2f} dB), "
          f"{r.tokens_encoded} of {r.num_patches} tokens encoded -> {args.out}")
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from PIL import Image

    from .mae.sweep import STOPS, sweep
    from .render._draw import label_row

    model = _load(args)
    s = sweep(model, args.image, seed=args.seed, pattern=args.pattern, ratios=STOPS, cache=None)
    frames = [Image.fromarray(label_row([(f"masked {r.mask_ratio:.0%}", r.masked),
                                         (f"MSE {r.masked_mse:.4f}", r.pasted)])) for r in s.results]
    frames += frames[-2:0:-1]  # play back down again
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frames[0].save(args.out, save_all=True, append_images=frames[1:], duration=args.frame_ms, loop=0)
    print(f"{len(s.results)} stops from 0% to 95% -> {args.out}")
    for r, mse in zip(s.ratios, s.mse):
        print(f"  ratio {r:.2f}: hidden-patch MSE {mse:.5f}")
    return 0


def _attention(args: argparse.Namespace) -> int:
    from PIL import Image

    from .explain.attention import attention
    from .render.attention import heat_overlay

    if not 64 <= args.size <= 2048:
        raise ValueError(f"--size must be between 64 and 2048 pixels, got {args.size}")
    model = _load(args, random_init=args.random_weights)
    maps = attention(model, args.image)
    roll = maps.rollout(head_fusion=args.head_fusion, discard_ratio=args.discard_ratio)
    label = f"{args.model}{' (random weights)' if args.random_weights else ''}: rollout, {args.head_fusion} fusion"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(heat_overlay(maps.image, roll, size=args.size, label=label)).save(args.out)
    i, j = divmod(int(roll.argmax()), roll.shape[1])
    print(f"rollout over {roll.shape[0]}x{roll.shape[1]} patches (sums to {roll.sum():.3f}); "
          f"strongest patch row {i}, column {j} -> {args.out}")
    return 0


def _explain(args: argparse.Namespace) -> int:
    from PIL import Image

    from .explain.faithfulness import faithfulness
    from .explain.methods import METHOD_NAMES, check_methods, explain_maps
    from .render.explain import explanation_row

    model = _load(args, random_init=args.random_weights)
    methods = check_methods(None if args.method == "all" else args.method)
    target = None if args.target in (None, "", "predicted") else args.target
    e = explain_maps(model, args.image, target=target)
    c = faithfulness(model, e.image, methods=methods, removal=args.removal, steps=args.steps, explanation=e)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(explanation_row(e.image, [(METHOD_NAMES[m], e.maps[m]) for m in methods])).save(args.out)
    tag = " (random weights)" if e.random_init else ""
    print(f"{model.name}{tag} explains {e.class_name!r} (class {e.target} of {e.logits.shape[0]}), probability "
          f"{e.probability:.2%} -> {args.out}")
    print("top-5: " + ", ".join(f"{name} {p:.1%}" for _, name, p in e.top_k(5)))
    print(f"areas under the curves ({c.removal}, {len(c.counts) - 1} steps): method, deletion (lower is more "
          "faithful), insertion (higher is)")
    for m, (d, i) in c.auc().items():
        print(f"  {METHOD_NAMES[m]:<28} {d:.3f}  {i:.3f}")
    r = c.random_auc()
    if r is not None:
        print(f"  {f'random order (mean of {c.random_count})':<28} {r[0]:.3f}  {r[2]:.3f}")
    return 0


def _features(args: argparse.Namespace) -> int:
    from PIL import Image

    from .assets import example_images
    from .features.pca import foreground_pca_maps, joint_pca_maps
    from .features.layer_tokens import layer_tokens
    from .render.features import pca_grid

    if not 64 <= args.size <= 1024:
        raise ValueError(f"--size must be between 64 and 1024 pixels, got {args.size}")
    model = _load(args, random_init=args.random_weights)
    lt = layer_tokens(model, args.image)
    layer = lt.check_layer(args.layer)
    sets = [(Path(args.image).stem, lt)]
    if args.joint:
        sets += [(Path(p).stem, layer_tokens(model, p)) for p in example_images()
                 if Path(p).resolve() != Path(args.image).resolve()][:3]
    grids = [t.patch_grid(layer) for _, t in sets]
    maps = foreground_pca_maps(grids)[0] if args.foreground else joint_pca_maps(grids)
    panel = pca_grid([(name, t.image, rgb) for (name, t), rgb in zip(sets, maps.rgb)], size=args.size)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(panel).save(args.out)
    ev = maps.basis.explained
    tag = " (random weights)" if lt.random_init else ""
    print(f"{args.model}{tag}, {lt.names[layer]} (layer {layer} of {lt.num_layers - 1}): PCA over {len(sets)} "
          f"image(s), components hold {100 * ev[0]:.1f}%, {100 * ev[1]:.1f}%, {100 * ev[2]:.1f}% of the variance "
          f"-> {args.out}")
    if args.probes:
        from .views.features import probe_headers, probe_tables

        table, control = probe_tables(model, args.image)
        print(table.describe())
        heads = probe_headers() + ["shuffled control, largest |R^2|"]
        print("| " + " | ".join(heads) + " |")
        print("| " + " | ".join(["---"] * 2 + ["---:"] * (len(heads) - 2)) + " |")
        for i, name in enumerate(table.layers):
            cells = [f"{x:.3f}" for x in table.r2[i]] + [f"{abs(control.r2[i]).max():.3f}"]
            print(f"| {i} | {name} | " + " | ".join(cells) + " |")
    return 0


def _tokens(args: argparse.Namespace) -> int:
    import numpy as np
    from PIL import Image

    from .beit.api import tokenize
    from .render._draw import label_row
    from .render.beit import token_map

    t = tokenize(_load(args), args.image)
    row = label_row([("image", t.original), ("token map", token_map(t.ids, t.original.shape[0], t.codebook_size,
                                                                     show_ids=False)),
                     (f"decoded ({t.psnr:.1f} dB)", t.decoded)])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.asarray(row)).save(args.out)
    payload = {"model": args.model, "image": str(args.image), "ids": t.ids.tolist(), **t.metrics()}
    json_path = args.json if args.json is not None else args.out.with_suffix(".json")
    json_path.write_text(json.dumps(payload))
    print(f"{t.ids.shape[0]}x{t.ids.shape[1]} tokens from a {t.codebook_size}-code book, "
          f"{int((t.counts > 0).sum())} distinct; round trip {t.psnr:.2f} dB -> {args.out}, {json_path}")
    return 0


#: --model's help: a name or your own checkpoint.
OWN = ("or the path of your own checkpoint: a facebookresearch/mae, timm, DeiT or DINO .pth / .safetensors, or a "
       "Hugging Face snapshot folder; its architecture is read from the tensors")
MODEL_HELP = "model name (see `models`), " + OWN

FLOPS_TABLES = ("classic", "attention", "models", "patch-size", "mae")


def _flops(args: argparse.Namespace) -> int:
    import csv

    from .compute import tables
    from .compute.formulas import mae_configs

    if args.table == "classic":
        rows = tables.classic_table()
    elif args.table == "attention":
        rows = tables.attention_scaling_rows()
    elif args.table == "models":
        rows = tables.model_scaling_rows()
    elif args.table == "patch-size":
        rows = tables.patch_size_rows()
    else:
        configs = mae_configs()
        if args.mae not in configs:
            raise ValueError(f"unknown MAE architecture {args.mae!r}; choose one of {', '.join(configs)}")
        rows = tables.mae_ratio_rows(configs[args.mae])
    out = open(args.out, "w", newline="") if args.out is not None else sys.stdout
    try:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (float(v) if hasattr(v, "numerator") and not isinstance(v, int) else v)
                             for k, v in row.items()})
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def _settings(args: argparse.Namespace) -> int:
    from . import settings

    for name, setting in settings.SETTINGS.items():
        try:
            value = repr(settings.get(name))
        except ValueError as exc:
            value = f"INVALID ({exc})"
        print(f"{name} = {value}  (default {setting.default or '(unset)'!r})")
        print(f"    {setting.doc}")
    return 0


def _probe(args: argparse.Namespace) -> int:
    import json

    from .probing.api import linear_probe

    ks = [k if k == "all" else int(k) for k in args.labels.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    curve = linear_probe(args.model, args.layer, args.pooling, ks, seeds, random_init=args.random_weights)
    if args.json:
        print(json.dumps(curve.to_dict(), indent=1))
        return 0
    print(f"{curve.key}, layer {curve.layer}, {curve.pooling} pooling: test accuracy on {curve.n_test} photos "
          f"(chance {curve.chance:.1%}), {len(seeds)} seeds")
    for k, m, sd in zip(curve.labels_per_class, curve.mean(), curve.spread()):
        print(f"  {str(k):>3} labels/class  {m:6.1%} ± {sd:.1%}")
    return 0


def _probe_features(args: argparse.Namespace) -> int:
    from .probing.features import build_features

    out = args.out or Path.home() / ".cache" / "vitviz" / "features"
    path = build_features(args.model, args.photos, out, random_init=args.random_weights,
                          progress=lambda d, t: print(f"\r{d}/{t} photos", end="", file=sys.stderr))
    print(f"\nwrote {path}; point VITVIZ_FEATURES_DIR at {out} to probe it", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one sub-parser per command."""
    parser = argparse.ArgumentParser(prog="python -m vitviz", description="Explore Vision Transformers and MAEs.")
    weights_help = ("local folder of weights, searched first: mae_visualize_vit_base.pth, a Hugging Face "
                    "snapshot folder vit-mae-base/, or <timm model name>/model.safetensors "
                    "(default: $VITVIZ_WEIGHTS_DIR)")
    parser.add_argument("--weights-dir", type=Path, default=None, metavar="DIR", help=weights_help)
    # The same option after the command; SUPPRESS keeps a value given before the command.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--weights-dir", type=Path, default=argparse.SUPPRESS, metavar="DIR", help=weights_help)
    heads_help = ("with --model PATH: the encoder's attention heads when the file does not name them "
                  "(default: what its config or args say, else width/64)")
    dheads_help = "with --model PATH: an MAE decoder's heads when the file does not name them (default: width/32)"
    for p in (parser, common):
        default = None if p is parser else argparse.SUPPRESS
        p.add_argument("--heads", type=int, default=default, metavar="N", help=heads_help)
        p.add_argument("--decoder-heads", type=int, default=default, metavar="N", help=dheads_help)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("models", parents=[common], help="list models and whether each is available here")
    p.set_defaults(func=_models)
    p = sub.add_parser("reconstruct", parents=[common], help="reconstruct a masked image and save the panels as PNG")
    p.add_argument("image", type=image_or_example, help=IMAGE_HELP)
    p.add_argument("--model", default="mae-tiny", help=MODEL_HELP)
    p.add_argument("--ratio", type=float, default=0.75, help="masking ratio in [0, 0.95] (default 0.75)")
    p.add_argument("--seed", type=int, default=0, help="mask seed (default 0)")
    p.add_argument("--pattern", choices=PATTERNS, default="random", help="mask pattern")
    p.add_argument("--out", type=Path, default=Path("panels.png"), help="output PNG (default panels.png)")
    p.add_argument("--json", type=Path, default=None, help="also write the metrics as JSON here")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    p.set_defaults(func=_reconstruct)
    p = sub.add_parser("sweep", parents=[common], help="an animated GIF of the reconstruction as the ratio rises")
    p.add_argument("image", type=image_or_example, help=IMAGE_HELP)
    p.add_argument("--model", default="mae-tiny", help=MODEL_HELP)
    p.add_argument("--seed", type=int, default=0, help="mask seed (default 0): masks nest as the ratio rises")
    p.add_argument("--pattern", choices=PATTERNS, default="random", help="mask pattern")
    p.add_argument("--out", type=Path, default=Path("sweep.gif"), help="output GIF (default sweep.gif)")
    p.add_argument("--frame-ms", type=int, default=250, help="milliseconds per frame")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    p.set_defaults(func=_sweep)
    p = sub.add_parser("attention", parents=[common], help="attention rollout of the class token as a PNG overlay")
    p.add_argument("image", type=image_or_example, help=IMAGE_HELP)
    p.add_argument("--model", default="mae-tiny", help="a ViT-family model (see `models`; not swin-tiny) " + OWN)
    p.add_argument("--random-weights", action="store_true",
                   help="use the architecture with random weights (works offline; maps show no learned content)")
    p.add_argument("--head-fusion", choices=("mean", "max", "min"), default="mean", help="how heads are fused")
    p.add_argument("--discard-ratio", type=float, default=0.0, help="share of weakest attentions dropped per layer")
    p.add_argument("--size", type=int, default=448, help="output side in pixels")
    p.add_argument("--out", type=Path, default=Path("rollout.png"), help="output PNG (default rollout.png)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    p.set_defaults(func=_attention)
    p = sub.add_parser("explain", parents=[common],
                       help="why a classifier said a class: four explanation maps as a PNG, deletion/insertion areas")
    p.add_argument("image", type=image_or_example, help=IMAGE_HELP)
    p.add_argument("--model", default="dinov2-small-lab8",
                   help="a classifier: dinov2-small-lab8 (8 classes, needs dinov2-small's weights), vit-base, "
                        "deit-small-distilled, " + OWN)
    p.add_argument("--class", dest="target", default="predicted",
                   help="the class to explain: a name of the model's classes (bird, mammal... for "
                        "dinov2-small-lab8; ImageNet's for the others), an index, or predicted (default)")
    p.add_argument("--method", choices=("all", "attention", "rollout", "grad_rollout", "gradcam"), default="all")
    p.add_argument("--removal", choices=("drop", "grey"), default="drop", help="how the curves remove a patch")
    p.add_argument("--steps", type=int, default=8, help="points per curve minus one (default 8)")
    p.add_argument("--random-weights", action="store_true",
                   help="use the architecture with random weights (works offline; maps show no learned content)")
    p.add_argument("--out", type=Path, default=Path("explain.png"), help="output PNG (default explain.png)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    p.set_defaults(func=_explain)
    p = sub.add_parser("features", parents=[common], help="PCA feature map of one layer's patch tokens as a PNG")
    p.add_argument("image", type=image_or_example, help=IMAGE_HELP)
    p.add_argument("--model", default="mae-tiny", help="any model (see `models`), Swin included, " + OWN)
    p.add_argument("--layer", type=int, default=-1,
                   help="0 = patch + position embedding, 1..depth = after that block, -1 = last (default)")
    p.add_argument("--joint", action="store_true", help="fit the PCA jointly with three example photos, shown beside")
    p.add_argument("--foreground", action="store_true",
                   help="colour only the foreground (split on the first component)")
    p.add_argument("--probes", action="store_true",
                   help="also print the probe R^2 table by layer (fitted on the example photos, scored on IMAGE)")
    p.add_argument("--random-weights", action="store_true",
                   help="use the architecture with random weights (works offline; maps show no learned content)")
    p.add_argument("--size", type=int, default=224, help="side of each panel in pixels")
    p.add_argument("--out", type=Path, default=Path("features.png"), help="output PNG (default features.png)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    p.set_defaults(func=_features)
    p = sub.add_parser("tokens", parents=[common], help="BEiT visual tokens: PNG of image/token map/decoded, JSON of ids")
    p.add_argument("image", type=image_or_example, help=IMAGE_HELP)
    p.add_argument("--model", default="vq-tiny", help="a visual tokenizer (see `models`)")
    p.add_argument("--out", type=Path, default=Path("tokens.png"), help="output PNG (default tokens.png)")
    p.add_argument("--json", type=Path, default=None, help="the ids and numbers as JSON (default: beside the PNG)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    p.set_defaults(func=_tokens)
    p = sub.add_parser("flops", parents=[common], help="the compute tables as CSV (closed-form FLOPs)")
    p.add_argument("--table", choices=FLOPS_TABLES, default="classic",
                   help="classic: global vs windowed attention (C=96, M=7); attention: the same over many sizes; "
                        "models: ViT-B/16 vs Swin-T by resolution; patch-size: ViT by patch size; mae: MAE by ratio")
    p.add_argument("--mae", default="MAE ViT-B/16", help="MAE architecture for --table mae")
    p.add_argument("--out", type=Path, default=None, help="output CSV (default: standard output)")
    p.set_defaults(func=_flops)
    p = sub.add_parser("probe", parents=[common], help="linear-probe accuracy vs labels per class (cached features)")
    p.add_argument("--model", default="mae-tiny", help="encoder with features on disk (mae-tiny, beit-tiny...)")
    p.add_argument("--layer", type=int, default=-1, help="0 = embedding, i = after block i, -1 = last (default)")
    p.add_argument("--pooling", choices=("cls", "avg"), default="cls", help="class token or average patch token")
    p.add_argument("--labels", default="1,2,5,10,all", help="labels per class, comma-separated (default 1,2,5,10,all)")
    p.add_argument("--seeds", default="0,1,2,3,4", help="seeds, comma-separated (default 0,1,2,3,4)")
    p.add_argument("--random-weights", action="store_true", help="the encoder's random-weight version")
    p.add_argument("--json", action="store_true", help="print the curve as JSON")
    p.set_defaults(func=_probe)
    p = sub.add_parser("probe-features", parents=[common], help="run an encoder over the labelled photos once")
    p.add_argument("--model", required=True, help="a ViT-like registry model")
    p.add_argument("--photos", type=Path, default=Path(".train/labelled"),
                   help="folder built by python -m vitviz.training.labelled")
    p.add_argument("--out", type=Path, default=None, help="output folder (default ~/.cache/vitviz/features)")
    p.add_argument("--random-weights", action="store_true", help="the encoder's random-weight version")
    p.set_defaults(func=_probe_features)
    p = sub.add_parser("settings", parents=[common], help="every VITVIZ_* setting: value here, default, meaning")
    p.set_defaults(func=_settings)
    from .doctor.commands import add_command as add_doctor
    from .intervene.commands import add_commands as add_intervene
    from .web.commands import add_command as add_export_web

    for add in (add_doctor, add_export_web, add_intervene):
        add(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args = build_parser().parse_args(argv)
    previous = os.environ.get("VITVIZ_WEIGHTS_DIR")
    try:
        if args.weights_dir is not None:
            if not args.weights_dir.is_dir():
                raise ValueError(f"--weights-dir {args.weights_dir} is not a folder")
            os.environ["VITVIZ_WEIGHTS_DIR"] = str(args.weights_dir.resolve())
        return int(args.func(args))
    except (ImageError, ModelUnavailable, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.weights_dir is not None:  # only this run: restore for in-process callers
            if previous is None:
                os.environ.pop("VITVIZ_WEIGHTS_DIR", None)
            else:
                os.environ["VITVIZ_WEIGHTS_DIR"] = previous
