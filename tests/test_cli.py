import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vitviz", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_models_lists_availability():
    p = run("models")
    assert p.returncode == 0, p.stderr
    assert "mae-tiny" in p.stdout and "available" in p.stdout


def test_reconstruct_writes_panels_and_metrics(tmp_path, photo_path):
    out, js = tmp_path / "panels.png", tmp_path / "m.json"
    p = run("reconstruct", str(photo_path), "--model", "mae-tiny", "--ratio", "0.75", "--seed", "0",
            "--pattern", "random", "--out", str(out), "--json", str(js))
    assert p.returncode == 0, p.stderr
    img = np.asarray(Image.open(out))
    assert img.shape[1] >= 4 * 224 and img.shape[0] >= 224
    metrics = json.loads(js.read_text())
    assert metrics["tokens_encoded"] == 49 and metrics["num_patches"] == 196
    assert 0 < metrics["masked_mse"] < 1


def test_errors_exit_non_zero_with_message(tmp_path, photo_path):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"garbage")
    p = run("reconstruct", str(bad), "--out", str(tmp_path / "x.png"))
    assert p.returncode == 1 and "error:" in p.stderr and "Traceback" not in p.stderr
    p = run("reconstruct", str(photo_path), "--ratio", "0.99", "--out", str(tmp_path / "x.png"))
    assert p.returncode == 1 and "mask ratio" in p.stderr
    p = run("reconstruct", str(photo_path), "--model", "nope", "--out", str(tmp_path / "x.png"))
    assert p.returncode == 1 and "unknown model" in p.stderr
    assert run("frobnicate").returncode == 2
