"""``python app.py``'s own options: your checkpoints (``--model NAME=PATH``) and MCP tools (``--mcp``).

Paths reach vitviz only from whoever starts it: these options (or ``VITVIZ_MODELS`` in the
starter's environment). Each ``--model`` is read and its architecture inferred before the app is
built, so a file that fits no layout stops the start with a sentence instead of a broken picker;
a public host refuses them (:data:`vitviz.settings.PUBLIC_LOCAL_REFUSAL`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import ModelUnavailable
from ..models.local import add_local_models
from ..models.registry import MODELS

MODEL_HELP = ("your own checkpoint, shown in every tab that takes its family (repeatable): NAME=PATH, or PATH (named "
              "after the file). PATH is a facebookresearch/mae, timm, DeiT or DINO .pth / .safetensors, or a Hugging "
              "Face snapshot folder (config.json + weights) of ViTMAE, ViT, DeiT, Dinov2 or BEiT. The architecture is "
              "read from the tensors; append ,heads=N (and ,decoder_heads=N for an MAE decoder) when the file does "
              "not name its head count (default: width/64, decoder width/32). Same as VITVIZ_MODELS='NAME=PATH;...'. "
              "Refused on a public host.")
MCP_HELP = ("also serve the app's named endpoints (reconstruct, rollout, head_atlas, feature_pca, explain, tokenize, "
            "...) as MCP tools for AI assistants, at /gradio_api/mcp/ (needs the mcp package: requirements.txt)")


def build_parser() -> argparse.ArgumentParser:
    """``python app.py [--model NAME=PATH]... [--mcp]``."""
    parser = argparse.ArgumentParser(
        prog="python app.py", description="Serve vitviz's web app (http://127.0.0.1:7860 unless GRADIO_SERVER_PORT "
                                          "or PORT says otherwise).")
    parser.add_argument("--model", action="append", default=[], metavar="NAME=PATH", help=MODEL_HELP)
    parser.add_argument("--mcp", action="store_true", help=MCP_HELP)
    return parser


def start_options(argv: Sequence[str] | None = None) -> dict:
    """Parse ``python app.py``'s arguments, register the local models, and return extra ``launch`` options.

    Exits with status 2 and a sentence on stderr for a bad ``--model``.
    """
    args = build_parser().parse_args(argv)
    try:
        for line in add_local_models(args.model, MODELS):
            print(f"vitviz: your checkpoint {line}", file=sys.stderr)
    except (ValueError, ModelUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    return {"mcp_server": True} if args.mcp else {}
