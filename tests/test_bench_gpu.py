"""``bench/gpu.py`` (issue 32): the GPU check runs on the CPU with ``--device cpu`` and its tolerances bite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_check_runs_on_the_cpu_and_covers_every_entry_point():
    env = dict(os.environ, HF_HUB_OFFLINE="1", VITVIZ_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "bench/gpu.py", "--device", "cpu", "--quick", "--repeats", "1"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    rows = [line for line in out.stdout.splitlines() if line.startswith("| ") and line.endswith(" ok |")]
    entries = {line.split(" | ")[1] for line in rows}
    assert {"reconstruct", "sweep (3 ratios)", "attention", "rollout", "head_atlas", "features",
            "explain (class)", "explain (grad rollout)", "tokenize", "beit_predict"} <= entries
    assert f"{len(rows)} rows, 0 outside their tolerance" in out.stdout


def test_a_difference_beyond_its_tolerance_fails_the_row():
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from bench.gpu import COMPARE, Row

    levels, tol, unit = COMPARE["uint8"]
    a = np.zeros((4, 4, 3), np.uint8)
    b = a.copy()
    b[0, 0, 0] = 3
    assert levels(a, b) == 3 and not Row("m", "reconstruct", levels(a, b), tol, unit, 1.0, 1.0).ok
    ids, tol, _ = COMPARE["ids"]
    assert ids(np.arange(100), np.r_[np.arange(99), 7]) <= tol < ids(np.arange(10), np.r_[np.arange(9), 7])
    rel, tol, _ = COMPARE["float"]
    assert rel(np.array([0.0, 1.0]), np.array([0.0, 1.002])) > tol >= rel(np.array([0.0, 1.0]), np.array([0.0, 1.0]))
