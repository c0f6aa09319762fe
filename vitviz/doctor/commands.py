"""The command-line command ``doctor`` (registered by :mod:`vitviz.cli`): ``python -m vitviz doctor PATH``
prints the checkpoint doctor's findings, worst first (``--json``: the same findings as data)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..assets import image_or_example


def run(args: argparse.Namespace) -> int:
    """Run ``doctor`` with the parsed arguments; 0 on success."""
    from .diagnose import diagnose
    from ..models.registry import model_names

    subject = args.checkpoint if args.checkpoint in model_names() else Path(args.checkpoint)
    photos = [str(image_or_example(p)) for p in args.photo] if args.photo else None
    d = diagnose(subject, device=args.device, photos=photos)
    print(d.to_json() if args.json else d.to_text())
    if args.panels is not None and d.panels:
        import numpy as np
        from PIL import Image

        from ..render.doctor import doctor_panels

        args.panels.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.asarray(doctor_panels(d.panels))).save(args.panels)
        print(f"panels -> {args.panels}", file=sys.stderr)
    return 0


def add_command(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``doctor`` on the CLI's sub-parsers."""
    p = sub.add_parser("doctor", parents=[common],
                       help="is this MAE checkpoint healthy? findings with their evidence and what to do")
    p.add_argument("checkpoint", help="a checkpoint file (.pth, .bin, .safetensors), a Hugging Face snapshot folder, "
                                      "or a registry model name (mae-tiny shows a healthy report)")
    p.add_argument("--json", action="store_true", help="print the report as JSON (the same findings, as data)")
    p.add_argument("--photo", action="append", default=None, metavar="IMAGE",
                   help="measure on this image instead of the bundled example photos (repeatable)")
    p.add_argument("--panels", type=Path, default=None, help="also write the reconstruction panels as a PNG here")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    p.set_defaults(func=run)
