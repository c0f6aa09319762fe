"""Importing the library changes no process-wide state (issue 27, item 8).

The app sets PIL's pixel cap once, from settings (``vitviz.ui.serve``); a library module
that set it at import would silently replace the host's cap depending on import order.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_importing_every_library_module_leaves_pil_and_torch_global_state_alone() -> None:
    code = textwrap.dedent("""
        import importlib, pkgutil
        import torch
        from PIL import Image
        cap = Image.MAX_IMAGE_PIXELS
        rng = torch.get_rng_state().clone()
        import vitviz
        names = [m.name for m in pkgutil.walk_packages(vitviz.__path__, "vitviz.")
                 if not m.name.startswith("vitviz.ui") and m.name != "vitviz.__main__"]
        for name in names:
            importlib.import_module(name)
        assert len(names) > 50, names
        assert Image.MAX_IMAGE_PIXELS == cap, (cap, Image.MAX_IMAGE_PIXELS)
        assert torch.equal(torch.get_rng_state(), rng), "an import drew from torch's global RNG"
        print("ok", len(names))
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ok")
