"""Server work of the tabs' slow steps, on two checkouts side by side (issue 34's table).

Usage::

    python bench/tab_views.py --before DIR [--rounds 3] [--scenarios explain features-swin]

Each scenario runs in a fresh process per round (what a new visitor's first request
meets: caches empty, the model already loaded and not timed), alternating the "before"
checkout and this one, and with the environment the checkout's ``app.py`` gives itself
(its ``os.environ.setdefault`` lines: ``OMP_WAIT_POLICY``, ``OPENBLAS_NUM_THREADS``), so the
numbers are those the app would see. It times the view functions the tab's handlers call
(no Gradio, no browser: the page adds its own fixed cost on top). Prints the median of
each step per checkout, their ratio and the load average.

Scenarios:

- ``explain``: deit-small-distilled with random weights (what the app runs offline without
  dinov2-small's weights). A new photo (maps, then curves: drop, 8 steps), a change of class
  (the second of the picker's top-5, by name), a change of removal (grey), a change of steps
  (16), and back to the predicted class. Each curve step as the page runs it: where the checkout
  draws a first pass (every other point) before the rest, a "first drawn" row times that pass
  (the same as the full row for a checkout without one).
- ``explain-lab8``: the same steps on dinov2-small-lab8, the classifier the Explain tab opens
  on where dinov2-small's weights are here (257 tokens, a trained decision on 8 classes).
- ``features-swin``: swin-tiny with random weights, a new photo: PCA maps of the last layer,
  probes by depth, the pooling view.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import side_by_side  # noqa: E402 - after the path

SCENARIOS = ("explain", "explain-lab8", "features-swin")
#: Explain scenario -> the classifier it runs.
EXPLAIN_MODELS = {"explain": "deit-small-distilled:random", "explain-lab8": "dinov2-small-lab8"}


def _app_env(tree: Path) -> dict[str, str]:
    """The ``os.environ.setdefault("NAME", "VALUE")`` lines of the tree's ``app.py``."""
    text = (tree / "app.py").read_text()
    return dict(re.findall(r'os\.environ\.setdefault\("([A-Z_]+)",\s*"([^"]*)"\)', text))


def _child(scenario: str) -> dict[str, float]:
    sys.path.insert(0, os.environ["VITVIZ_BENCH_TREE"])
    from vitviz.assets import example_images
    from vitviz.models.loading import load_choice

    photo = example_images()[1]
    steps: dict[str, float] = {}

    def timed(name: str, fn) -> object:  # noqa: ANN001
        t0 = time.perf_counter()
        out = fn()
        steps[name] = time.perf_counter() - t0
        return out

    if scenario in EXPLAIN_MODELS:
        from vitviz.views import explain as v

        choice = EXPLAIN_MODELS[scenario]
        label = "Explain" if scenario == "explain" else "Explain, dinov2-small-lab8"
        load_choice(choice)
        two_passes = "first_pass" in inspect.signature(v.curves_view).parameters

        def curves(name: str, target: str, removal: str, n: int, before: float = 0.0) -> None:
            """The page's curve events: a first pass then the rest where the checkout has one, else one call;
            ``before`` (the maps' time) is added to both rows."""
            t0 = time.perf_counter()
            if two_passes:
                v.curves_view(photo, choice, target, "all", removal, n, first_pass=True)
                steps[f"{name}, first drawn"] = before + time.perf_counter() - t0
            v.curves_view(photo, choice, target, "all", removal, n)
            steps[name] = before + time.perf_counter() - t0
            if not two_passes:
                steps[f"{name}, first drawn"] = steps[name]

        timed(f"{label}: new photo, maps", lambda: v.maps_view(photo, choice, "predicted"))
        curves(f"{label}: new photo, curves", "predicted", "drop", 8)
        for end in ("", ", first drawn"):
            steps[f"{label}: new photo, maps + curves{end}"] = (steps[f"{label}: new photo, maps"]
                                                               + steps[f"{label}: new photo, curves{end}"])
        _, e = v.explanation_for(photo, choice, "predicted")
        other = v.class_choices(e)[2][1]  # the second most probable class, by name

        timed(f"{label}: change of class, maps", lambda: v.maps_view(photo, choice, other))
        curves(f"{label}: change of class (maps + curves)", other, "drop", 8, steps[f"{label}: change of class, maps"])
        curves(f"{label}: change of removal mode (curves, grey)", other, "grey", 8)
        curves(f"{label}: change of steps (curves, 16)", other, "grey", 16)
        timed(f"{label}: back to the predicted class, maps", lambda: v.maps_view(photo, choice, "predicted"))
        curves(f"{label}: back to the predicted class (maps + curves)", "predicted", "grey", 16,
               steps[f"{label}: back to the predicted class, maps"])
    elif scenario == "features-swin":
        from vitviz.views import features as v

        choice = "swin-tiny:random"
        model = load_choice(choice)
        depth = v.num_blocks(model)
        timed("Features swin-tiny: PCA maps", lambda: v.pca_view(photo, choice, depth, False))
        timed("Features swin-tiny: probes by depth", lambda: v.probe_view(photo, choice))
        timed("Features swin-tiny: pooling", lambda: v.pooling_view(photo, choice))
        steps["Features swin-tiny: new photo, all three"] = sum(steps.values())
    else:
        raise ValueError(f"unknown scenario {scenario!r}")
    return steps


def loadavg() -> str:
    """The first three fields of ``/proc/loadavg``."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, default=None, help="the other checkout (a worktree of the start)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    ap.add_argument("--child", choices=SCENARIOS, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child)))
        return 0
    trees = {"after": ROOT} if args.before is None else {"before": args.before.resolve(), "after": ROOT}
    results: dict[str, dict[str, list[float]]] = {}
    print(f"load average before: {loadavg()}", flush=True)
    for scenario in args.scenarios:
        for r in range(args.rounds):
            for t, tree in trees.items():
                env = {**os.environ, **_app_env(tree), "VITVIZ_BENCH_TREE": str(tree)}
                env.pop("PYTHONPATH", None)
                out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", scenario],
                                     cwd=tree, env=env, capture_output=True, text=True)
                if out.returncode:
                    raise RuntimeError(f"{scenario} in {tree} failed:\n{out.stderr[-3000:]}")
                for step, s in json.loads(out.stdout.strip().splitlines()[-1]).items():
                    results.setdefault(step, {k: [] for k in trees})[t].append(s)
                print(f"  {scenario} round {r + 1} {t} done (load {loadavg()})", file=sys.stderr, flush=True)
    print(f"load average after: {loadavg()}")
    print(side_by_side(results, list(trees), "step"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
