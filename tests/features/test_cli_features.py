"""``python -m vitviz features``: the PCA map PNG, the probe table, errors as exit code 1."""

from __future__ import annotations

import numpy as np
from PIL import Image

from vitviz.cli import main


def test_features_writes_the_pca_png(photo_path, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "f.png"
    assert main(["features", str(photo_path), "--model", "mae-tiny", "--layer", "3", "--joint", "--out", str(out)]) == 0
    img = np.asarray(Image.open(out))
    assert img.shape[1] >= 4 * 224 and img.shape[2] == 3
    text = capsys.readouterr().out
    assert "block 3 (layer 3 of 8)" in text and "PCA over 4 image(s)" in text


def test_features_probe_table_and_errors(photo_path, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["features", str(photo_path), "--probes", "--out", str(tmp_path / "g.png")]) == 0
    text = capsys.readouterr().out
    assert "| 0 | embedding |" in text and "| 8 | block 8 |" in text and "fitted on 3 images" in text
    assert main(["features", str(photo_path), "--layer", "9", "--out", str(tmp_path / "h.png")]) == 1
    assert "layer must be 0..8" in capsys.readouterr().err
