"""Memory of one new browser session (Gradio 6.31's own SessionState against vitviz.ui.serve.sessions),
and the size of the page configuration every page load copies, serialises and sends.

Usage::

    python bench/session_memory.py

Builds the app, then creates 50 sessions each way and prints the Python memory each
holds (tracemalloc). Gradio copies every component's configuration into each session;
vitviz keeps only the session's own state. Then prints the page configuration as the
page receives it (compact JSON, and gzip-compressed at level 1 as the app sends it),
with vitviz.ui.serve.pageconfig and as Gradio builds it, and its largest components.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gzip
import json
import tracemalloc

import gradio.state_holder as sh
from gradio.blocks import Blocks

original = sh.SessionState.__init__
from vitviz.ui import build_demo, serve  # noqa: E402 - after the original is kept

demo = serve.install(build_demo())  # installs vitviz.ui.serve.sessions


def per_session(n: int = 50) -> float:
    tracemalloc.start()
    kept = [sh.SessionState(demo) for _ in range(n)]
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return current / n / 1024


lean = per_session()
sh.SessionState.__init__ = original
gradio_own = per_session()
print(f"per new session: Gradio 6.31's SessionState {gradio_own:.0f} KiB, with vitviz.ui.serve.sessions {lean:.0f} KiB")


def _json(value: object) -> bytes:
    return json.dumps(value, default=str, separators=(",", ":"), ensure_ascii=False).encode()


def _kb(config: dict) -> str:
    raw = _json(config)
    return f"{len(raw) / 1000:.0f} KB (gzip -1: {len(gzip.compress(raw, 1)) / 1000:.0f} KB)"


slim = demo.get_config_file()
full = getattr(Blocks.get_config_file, "__wrapped__", Blocks.get_config_file)(demo)  # Gradio's own
tabs = [c["props"].get("label") for c in slim["components"] if c.get("type") == "tabitem"]
print(f"page configuration ({len(tabs)} tabs: {', '.join(tabs)}): {_kb(slim)}; as Gradio builds it {_kb(full)}")
print(f"  components {len(_json(slim['components'])) / 1000:.0f} KB ({len(slim['components'])}), "
      f"events {len(_json(slim['dependencies'])) / 1000:.0f} KB ({len(slim['dependencies'])})")
largest = sorted(slim["components"], key=lambda c: -len(_json(c)))[:5]
print("  largest components: " + ", ".join(
    f"{c['props'].get('elem_id') or c['type']} {len(_json(c)) / 1000:.1f} KB" for c in largest))
