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


def test_sweep_gif(tmp_path, photo_path):
    out = tmp_path / "sweep.gif"
    p = run("sweep", str(photo_path), "--seed", "1", "--out", str(out))
    assert p.returncode == 0, p.stderr
    gif = Image.open(out)
    assert gif.n_frames == 20 + 18  # up through 20 stops, then back down
    assert "ratio 0.95" in p.stdout


def test_flops_csv(tmp_path):
    import csv

    out = tmp_path / "classic.csv"
    assert run("flops", "--out", str(out)).returncode == 0
    rows = list(csv.DictReader(out.open()))
    assert [int(r["tokens"]) for r in rows] == [196, 784, 3136, 12544]
    assert [float(r["products_flop_ratio"]) for r in rows] == [4.0, 16.0, 64.0, 256.0]
    for table in ("attention", "models", "patch-size", "mae"):
        p = run("flops", "--table", table)
        assert p.returncode == 0 and p.stdout.count("\n") > 3, table
    bad = run("flops", "--table", "mae", "--mae", "nope")
    assert bad.returncode == 1 and "unknown MAE architecture" in bad.stderr


def test_help_for_each_command():
    for cmd in ("models", "reconstruct", "sweep", "attention", "flops"):
        p = run(cmd, "--help")
        assert p.returncode == 0 and "usage" in p.stdout


def test_attention_png(tmp_path, photo_path):
    out = tmp_path / "rollout.png"
    p = run("attention", str(photo_path), "--out", str(out), "--size", "224")
    assert p.returncode == 0, p.stderr
    assert Image.open(out).size == (224, 224) and "sums to 1.000" in p.stdout
    p = run("attention", str(photo_path), "--model", "deit-small-distilled", "--random-weights",
            "--out", str(tmp_path / "deit.png"))
    assert p.returncode == 0, p.stderr
    p = run("attention", str(photo_path), "--model", "swin-tiny", "--random-weights", "--out", str(out))
    assert p.returncode == 1 and "Swin tab" in p.stderr


def test_missing_file_is_named_as_typed(tmp_path):
    """Issue 15 item 8: the message keeps the folder the user typed."""
    typed = "photos/nothere.jpg"
    p = subprocess.run([sys.executable, "-m", "vitviz", "reconstruct", typed, "--out", str(tmp_path / "x.png")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert f"no readable file at '{typed}'" in p.stderr
