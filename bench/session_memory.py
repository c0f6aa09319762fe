"""Memory of one new browser session: Gradio 6.31's own SessionState against vitviz.ui.sessions.

Usage::

    python bench/session_memory.py

Builds the app, then creates 50 sessions each way and prints the Python memory each
holds (tracemalloc). Gradio copies every component's configuration into each session;
vitviz keeps only the session's own state.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tracemalloc
import gradio.state_holder as sh

original = sh.SessionState.__init__
from vitviz.ui import build_demo  # noqa: E402 - after the original is kept

demo = build_demo()  # installs vitviz.ui.sessions


def per_session(n: int = 50) -> float:
    tracemalloc.start()
    kept = [sh.SessionState(demo) for _ in range(n)]
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return current / n / 1024


lean = per_session()
sh.SessionState.__init__ = original
gradio_own = per_session()
print(f"per new session: Gradio 6.31's SessionState {gradio_own:.0f} KiB, with vitviz.ui.sessions {lean:.0f} KiB")
