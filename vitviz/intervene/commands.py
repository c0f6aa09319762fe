"""The command-line commands ``ablate`` and ``logit-lens`` (registered by :mod:`vitviz.cli`).

``python -m vitviz ablate chelsea --model dinov2-small-lab8 --heads-off 11.0,11.3 --rank 11`` prints the
prediction before and after, and optionally the ranking of a layer's heads; ``python -m vitviz logit-lens
chelsea`` prints every layer's reading. Both can write their numbers as JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..assets import image_or_example

IMAGE_HELP = "input image file, or a bundled example photo's name (astronaut, chelsea, coffee, rocket)"
MODEL_HELP = ("a ViT, DeiT, DINO(v2) or MAE: dinov2-small-lab8 (default; 8 classes, needs dinov2-small's weights), "
              "mae-tiny (offline), vit-base, deit-small-distilled, dinov2-small, or your own checkpoint's path")


def parse_heads(text: str) -> list[tuple[int, int]]:
    """``"11.0,11.3"`` or ``"11:0 11:3"`` -> ``[(11, 0), (11, 3)]`` (layer.head, counted from 0).

    Raises:
        ValueError: a pair that is not two integers.
    """
    out = []
    for part in text.replace(" ", ",").split(","):
        if not part:
            continue
        bits = part.replace(":", ".").split(".")
        if len(bits) != 2 or not all(b.strip().lstrip("-").isdigit() for b in bits):
            raise ValueError(f"a head is LAYER.HEAD (counted from 0, e.g. 11.3), got {part!r}")
        out.append((int(bits[0]), int(bits[1])))
    return out


def parse_tokens(text: str) -> list[Any]:
    """``"cls,high-norm,3:5,17"`` -> ``["cls", "high-norm", (3, 5), 17]``: names, ROW:COL patches, indices."""
    out: list[Any] = []
    for part in text.replace(" ", ",").split(","):
        if not part:
            continue
        if ":" in part:
            r, c = part.split(":", 1)
            if not (r.isdigit() and c.isdigit()):
                raise ValueError(f"a patch is ROW:COL (counted from 0), got {part!r}")
            out.append((int(r), int(c)))
        else:
            out.append(int(part) if part.isdigit() else part)
    return out


def _model(args: argparse.Namespace) -> Any:
    from ..models.loading import open_model

    return open_model(args.model, device=args.device, random_init=args.random_weights,
                      heads=getattr(args, "heads", None), decoder_heads=getattr(args, "decoder_heads", None))


def _write(path: Path | None, data: dict) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1))
        print(f"numbers -> {path}")


def run_ablate(args: argparse.Namespace) -> int:
    """``ablate``: before and after, and the ranking of ``--rank`` layers' heads."""
    from .ablation import ablate, rank_heads

    model = _model(args)
    ab = ablate(model, args.image, heads=parse_heads(args.heads_off or ""), tokens=parse_tokens(args.tokens or ""),
                mode=args.mode)
    print(ab.summary())
    data: dict[str, Any] = {"model": model.name, "mode": ab.mode, "heads": ab.heads, "tokens": ab.token_names}
    if ab.kind == "classifier":
        for which in ("before", "after"):
            print(f"top-5 {which}: " + ", ".join(f"{n} {p:.1%}" for n, p in ab.top(5, which)))
            data[f"top5_{which}"] = ab.top(5, which)
    elif ab.kind == "mae":
        data["hidden_error"] = {"before": ab.before.hidden_error, "after": ab.after.hidden_error}
    data["effect"] = ab.effect()
    if args.rank is not None:
        layers = None if args.rank == "all" else [int(v) for v in args.rank.split(",")]
        r = rank_heads(model, args.image, layers=layers, mode=args.mode, target=args.target or None)
        print(f"heads by the {r.measure}" + (f" (*{r.target}*)" if r.target else "") + ", removed one at a time:")
        for layer, head, effect in r.rows[: args.top]:
            print(f"  layer {layer:>2} head {head:>2}  {effect:+.3g}")
        data["ranking"] = {"measure": r.measure, "target": r.target, "rows": r.rows}
    _write(args.json, data)
    return 0


def run_lens(args: argparse.Namespace) -> int:
    """``logit-lens``: each layer's reading through the final norm and head."""
    from .lens import ClassLens, logit_lens

    model = _model(args)
    lens = logit_lens(model, args.image)
    print(lens.summary())
    if isinstance(lens, ClassLens):
        t = lens.final if not args.target else lens.classes.index(args.target) if args.target in lens.classes else None
        if t is None:
            raise ValueError(f"unknown class {args.target!r}; this model's classes include {', '.join(lens.classes[:10])}")
        p = lens.prob_by_layer(t)
        print(f"layer      p({lens.classes[t]})  top-3 (class token)")
        for i, name in enumerate(lens.names):
            print(f"{name:<10} {p[i]:>8.1%}  " + ", ".join(f"{n} {q:.1%}" for n, q in lens.top(i, 3)))
        lead = lens.first_lead(t)
        print(f"*{lens.classes[t]}* first leads at " + ("no layer" if lead is None else lens.names[lead]))
        data = {"model": model.name, "head_from": lens.head_from, "class": lens.classes[t], "first_lead": lead,
                "prob_by_layer": p.tolist(), "top3": [lens.top(i, 3) for i in range(len(lens.names))],
                "avg_prob_by_layer": lens.prob_by_layer(t, pool="avg").tolist()}
    else:
        for name, err in zip(lens.names, lens.errors):
            print(f"{name:<16} hidden-patch MSE {err:.4f}")
        data = {"model": model.name, "layers": list(lens.names), "hidden_error": lens.errors.tolist()}
    _write(args.json, data)
    return 0


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``ablate`` and ``logit-lens`` on the CLI's sub-parsers."""
    for name, fn, text in (("ablate", run_ablate, "switch attention heads or tokens off and compare the outputs"),
                           ("logit-lens", run_lens, "read every layer through the model's final norm and head")):
        p = sub.add_parser(name, parents=[common], help=text)
        p.add_argument("image", type=image_or_example, help=IMAGE_HELP)
        p.add_argument("--model", default="dinov2-small-lab8", help=MODEL_HELP)
        p.add_argument("--random-weights", action="store_true", help="the architecture with random weights")
        p.add_argument("--target", default=None, help="the class to follow (default: the model's answer)")
        p.add_argument("--json", type=Path, default=None, help="also write the numbers as JSON here")
        p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
        if name == "ablate":
            p.add_argument("--heads-off", default="", metavar="L.H,...", help="heads to remove, LAYER.HEAD from 0")
            p.add_argument("--tokens", default="", metavar="T,...",
                           help="tokens to remove: cls, dist, reg0, high-norm, ROW:COL patches or indices")
            p.add_argument("--mode", choices=("zero", "mean"), default="zero",
                           help="zero (default) or mean over the example photos")
            p.add_argument("--rank", default=None, metavar="LAYERS",
                           help="also rank the heads of these layers (e.g. 11, or 10,11, or all)")
            p.add_argument("--top", type=int, default=10, help="ranking rows printed (default 10)")
        p.set_defaults(func=fn)
