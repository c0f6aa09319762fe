"""The command-line command ``export-web`` (registered by :mod:`vitviz.cli`): writes the static page in which
mae-tiny runs in the visitor's browser."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def run(args: argparse.Namespace) -> int:
    """Run ``export-web`` with the parsed arguments; 0 on success."""
    from .export import export_web

    files = export_web(args.dir)
    size = sum((args.dir / f).stat().st_size for f in files)
    print(f"wrote {len(files)} files ({size / 1e6:.1f} MB) to {args.dir}; serve it with "
          f"`python -m http.server -d {args.dir}` or publish it as a static site (docs/in-browser.md)")
    return 0


def add_command(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``export-web`` on the CLI's sub-parsers."""
    p = sub.add_parser("export-web", parents=[common],
                       help="write the static page (mae-tiny in the visitor's browser) into a folder",
                       description="Write the static page: mae-tiny reconstructs photos and the camera in the "
                                   "visitor's browser (ONNX Runtime Web); serve the folder with any static server.")
    p.add_argument("dir", type=Path, help="folder to write (created)")
    p.set_defaults(func=run)
