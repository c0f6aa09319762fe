"""The GPU path, checked: every library entry point on a device against the CPU result.

Usage::

    python bench/gpu.py                 # CUDA (fails with a sentence where there is none)
    python bench/gpu.py --device cpu    # the same checks on the CPU (what the test runs, with --quick)

For each model (random weights of the published shapes where the real ones are absent: MAE-B/L,
ViT-B, DeiT-S) it loads the model on the device and on the CPU, runs each entry point on the
same photo with the same seeds, and prints a Markdown table: the largest difference against
the CPU result and the tolerance it must meet, the median time on the device and its peak
memory (CUDA's allocator; on the CPU, tensor storages created while it runs). The exit code is
1 when any row fails its tolerance. It takes under five minutes on a GPU machine.

Tolerances: uint8 panels within 2 levels (TF32 and fused kernels round differently); float maps
and features within 1e-3 of their range; token ids and argmax classes equal in at least 99 % of
patches (a near-tie may flip).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

#: (model, random weights?) the full run checks; ``--quick`` keeps the small ones.
MODELS_FULL = (("mae-tiny", False), ("mae-base", True), ("mae-large", True), ("dinov2-small", False),
               ("vit-base", True), ("deit-small-distilled", True), ("vq-tiny", False), ("beit-tiny", False))
MODELS_QUICK = (("mae-tiny", False), ("deit-small-distilled", True), ("vq-tiny", False), ("beit-tiny", False))


@dataclass
class Row:
    """One entry point on one model: its agreement with the CPU and its cost on the device."""

    model: str
    entry: str
    diff: float
    tolerance: float
    unit: str
    ms: float
    peak_mib: float

    @property
    def ok(self) -> bool:
        return self.diff <= self.tolerance

    def line(self) -> str:
        return (f"| {self.model} | {self.entry} | {self.diff:.3g} {self.unit} | ≤ {self.tolerance:g} | "
                f"{self.ms:.1f} | {self.peak_mib:.0f} | {'ok' if self.ok else 'FAIL'} |")


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    """Largest absolute difference over the reference's range."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    span = float(np.ptp(b)) or 1.0
    return float(np.abs(a - b).max()) / span


def _levels(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(np.asarray(a, np.int16) - np.asarray(b, np.int16)).max())


def _disagree(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(np.asarray(a) != np.asarray(b)))


#: How each kind of output is compared: (function, tolerance, unit).
COMPARE: dict[str, tuple[Callable[[np.ndarray, np.ndarray], float], float, str]] = {
    "uint8": (_levels, 2.0, "levels"),
    "float": (_relative, 1e-3, "of range"),
    "ids": (_disagree, 0.01, "share differing"),
}


def _entries(vitviz: Any, family: str) -> dict[str, tuple[str, Callable[[Any, Any], np.ndarray]]]:
    """Entry points for a family: name -> (kind of output, fn(model, image) -> array)."""
    from vitviz.mae.sweep import sweep

    if family == "mae":
        return {
            "reconstruct": ("uint8", lambda m, img: vitviz.reconstruct(m, img, 0.75, seed=0).pasted),
            "sweep (3 ratios)": ("float", lambda m, img: np.array(
                sweep(m, img, seed=0, ratios=(0.25, 0.5, 0.75), cache=None).mse)),
            "attention": ("float", lambda m, img: vitviz.attention(m, img).attentions),
            "rollout": ("float", lambda m, img: vitviz.attention(m, img).rollout()),
            "head_atlas": ("float", lambda m, img: vitviz.head_atlas(m, img).distance),
            "features": ("float", lambda m, img: vitviz.layer_tokens(m, img).tokens[-1]),
        }
    if family in ("vit", "deit", "dino", "dinov2"):
        out = {
            "attention": ("float", lambda m, img: vitviz.attention(m, img).attentions),
            "rollout": ("float", lambda m, img: vitviz.attention(m, img).rollout()),
            "head_atlas": ("float", lambda m, img: vitviz.head_atlas(m, img).distance),
            "features": ("float", lambda m, img: vitviz.layer_tokens(m, img).tokens[-1]),
        }
        if family in ("vit", "deit"):
            out["explain (class)"] = ("ids", lambda m, img: np.array([vitviz.explain_maps(m, img).target]))
            out["explain (grad rollout)"] = ("float", lambda m, img: vitviz.explain_maps(
                m, img, target=0).maps["grad_rollout"])
        return out
    if family == "vq":
        return {"tokenize": ("ids", lambda m, img: vitviz.tokenize(m, img).ids)}
    if family == "beit":
        return {"beit_predict": ("ids", lambda m, img: vitviz.beit_predict(m, img, 0.4, seed=0).predicted_ids)}
    return {}


def _timed(fn: Callable[[], np.ndarray], device: Any, repeats: int) -> tuple[np.ndarray, float, float]:
    """(result, median ms, peak MiB) of ``fn`` on ``device``, each call computed afresh.

    The library's result caches (attention, tokens, sweeps) are emptied before every call
    (:func:`vitviz.cache.enforce_budget` with a budget of 0: loaded models are not counted), so
    a row times the model's work, not a cache hit.
    """
    import torch

    from bench.common import peak_mib
    from vitviz.cache import enforce_budget

    def fresh() -> np.ndarray:
        enforce_budget(0)
        return fn()

    cuda = device.type == "cuda"
    out = fresh()  # warm-up (and the result compared)
    times = []
    for _ in range(repeats):
        enforce_budget(0)
        if cuda:
            torch.cuda.synchronize(device)
        t = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize(device)
        times.append(1000 * (time.perf_counter() - t))
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
        enforce_budget(0)
        base = torch.cuda.memory_allocated(device)
        fn()
        peak = (torch.cuda.max_memory_allocated(device) - base) / 2**20
    else:
        enforce_budget(0)
        peak = peak_mib(fn)
    return out, float(np.median(times)), peak


def run(device_name: str, models: tuple[tuple[str, bool], ...], repeats: int) -> list[Row]:
    """Every entry point of every model on ``device_name`` against the CPU."""
    import torch

    import vitviz
    from vitviz.core.images import load_image

    device = torch.device(device_name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device here: run this on a GPU machine, or pass --device cpu")
    img = load_image(ROOT / "assets" / "examples" / "astronaut.jpg")
    rows: list[Row] = []
    for name, random_init in models:
        try:
            ref = vitviz.load_model(name, device="cpu", random_init=random_init)
            dev = vitviz.load_model(name, device=device, random_init=random_init)
        except vitviz.ModelUnavailable as exc:
            print(f"skipped {name}: {exc}")
            continue
        label = name + (" (random weights)" if random_init else "")
        for entry, (kind, fn) in _entries(vitviz, ref.spec.family).items():
            expected = fn(ref, img)
            got, ms, peak = _timed(lambda: fn(dev, img), device, repeats)
            compare, tol, unit = COMPARE[kind]
            rows.append(Row(label, entry, compare(got, expected), tol, unit, ms, peak))
            print(rows[-1].line(), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    p.add_argument("--quick", action="store_true", help="the small models only (the test's run)")
    p.add_argument("--repeats", type=int, default=5, help="timed calls per row (median)")
    args = p.parse_args(argv)
    import torch

    where = torch.cuda.get_device_name(0) if args.device.startswith("cuda") and torch.cuda.is_available() else "CPU"
    print(f"device {args.device} ({where}), torch {torch.__version__}, load average "
          f"{open('/proc/loadavg').read().split()[:3]}")
    print("| model | entry point | largest difference vs CPU | tolerance | ms (median) | peak MiB | |")
    print("|---|---|---|---|---|---|---|")
    rows = run(args.device, MODELS_QUICK if args.quick else MODELS_FULL, max(1, args.repeats))
    failed = [r for r in rows if not r.ok]
    print(f"{len(rows)} rows, {len(failed)} outside their tolerance")
    return 1 if failed or not rows else 0


if __name__ == "__main__":
    raise SystemExit(main())
