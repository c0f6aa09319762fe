"""Start-up costs, each in a fresh interpreter: ``import vitviz``, the CLI, and the app until
it serves its page (issue 34's first and seventh rows).

Usage::

    python bench/startup.py [--before DIR] [--repeats 5] [--app] [--port 7370]

Each row runs as a new process, the way a user's command does, and is timed from the
process's start to its end (for the app: until ``GET /`` answers 200). With ``--before``
every row also runs on the other checkout (a worktree of the starting commit), the two
alternated so that the machine's load hits both alike; the table gives the median of
each and their ratio. ``python -c pass`` is the interpreter's own floor, measured the
same way. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import APP_COMMAND, side_by_side, stop  # noqa: E402  (python app.py without Gradio's failing localhost check)

#: Row name -> command line (run in the tree's root with the tree on ``PYTHONPATH``).
COMMANDS: dict[str, list[str]] = {
    "python -c pass (interpreter floor)": [sys.executable, "-c", "pass"],
    "python -c 'import vitviz'": [sys.executable, "-c", "import vitviz"],
    "python -m vitviz --help": [sys.executable, "-m", "vitviz", "--help"],
    "python -m vitviz reconstruct --help": [sys.executable, "-m", "vitviz", "reconstruct", "--help"],
    "python -m vitviz settings": [sys.executable, "-m", "vitviz", "settings"],
    "python -m vitviz flops": [sys.executable, "-m", "vitviz", "flops"],
}


def _env(tree: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), **extra}


def time_command(tree: Path, cmd: list[str]) -> float:
    """Seconds from start to exit of ``cmd`` run in ``tree``."""
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=tree, env=_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def time_app(tree: Path, port: int, timeout: float = 600.0) -> float:
    """Seconds from ``python app.py`` to its first ``GET /`` answered 200 (then the app is stopped)."""
    env = _env(tree, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", GRADIO_ANALYTICS_ENABLED="False")
    t0 = time.perf_counter()
    proc = subprocess.Popen(APP_COMMAND, cwd=tree, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the app in {tree} exited early")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as resp:
                    if resp.status == 200:
                        return time.perf_counter() - t0
            except OSError:
                pass
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError("the app did not start in time")
            time.sleep(0.05)
    finally:
        stop(proc)


def loadavg() -> str:
    """The first three fields of ``/proc/loadavg``."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, default=None, help="another checkout to time side by side")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--app", action="store_true", help="also time the app's start to its first page")
    ap.add_argument("--app-repeats", type=int, default=3)
    ap.add_argument("--port", type=int, default=7370, help="loopback port of the app (default 7370)")
    args = ap.parse_args(argv)
    trees = {"after": ROOT} if args.before is None else {"before": args.before.resolve(), "after": ROOT}
    rows: dict[str, dict[str, list[float]]] = {name: {t: [] for t in trees} for name in COMMANDS}
    if args.app:
        rows["app start to first page (python app.py)"] = {t: [] for t in trees}
    print(f"load average before: {loadavg()}", flush=True)
    for name, cmd in COMMANDS.items():
        for tree in trees.values():  # one untimed run each: the files are in the page cache
            time_command(tree, cmd)
        for _ in range(args.repeats):
            for t, tree in trees.items():
                rows[name][t].append(time_command(tree, cmd))
    if args.app:
        name = "app start to first page (python app.py)"
        for _ in range(args.app_repeats):
            for t, tree in trees.items():
                rows[name][t].append(time_app(tree, args.port))
    print(f"load average after: {loadavg()}")
    print(side_by_side(rows, list(trees), "row"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
