"""``import vitviz`` and ``python -m vitviz --help`` load only what they need (issue 34).

Each check runs in a fresh interpreter, as a user's first command does. No timing: what
is asserted is which heavy packages end up imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "timm", "gradio", "numpy", "PIL", "plotly", "safetensors")


def _loaded_after(code: str) -> list[str]:
    probe = code + f"\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_import_vitviz_loads_no_heavy_package():
    assert _loaded_after("import vitviz") == []


def test_cli_help_loads_no_heavy_package():
    code = ("import contextlib, io\nfrom vitviz.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
            "    try:\n        main(['reconstruct', '--help'])\n    except SystemExit:\n        pass\n")
    assert _loaded_after(code) == []


def test_settings_command_loads_no_heavy_package():
    code = ("import contextlib, io\nfrom vitviz.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['settings']) == 0\n")
    assert _loaded_after(code) == []


def test_public_names_resolve_to_their_modules():
    import importlib

    import vitviz

    for name in vitviz.__all__:
        value = getattr(vitviz, name)
        where, _, attr = vitviz._EXPORTS[name].partition(":")
        assert value is getattr(importlib.import_module(where, "vitviz"), attr or name), name
    assert set(vitviz.__all__) == set(vitviz._EXPORTS)
    assert set(vitviz.__all__) <= set(dir(vitviz))
    with pytest.raises(AttributeError, match="no_such_name"):
        vitviz.no_such_name  # noqa: B018


def test_mask_names_are_those_of_masking():
    from vitviz.core import mask_names, masking

    assert masking.PATTERNS is mask_names.PATTERNS
    assert masking.NESTED_PATTERNS is mask_names.NESTED_PATTERNS
    assert masking.MAX_RATIO == mask_names.MAX_RATIO
    defined = {n for n, v in vars(masking).items()
               if not n.startswith("_") and getattr(v, "__module__", None) == masking.__name__}
    constants = {"BLOCK_MAX_SHARE", "HIDDEN_GREY", "MAX_RATIO", "NESTED_PATTERNS", "PATTERNS"}
    assert set(masking.__all__) == defined | constants  # its public API: every function defined there, the limits
