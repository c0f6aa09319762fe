"""``python -m vitviz tokens IMAGE``: a PNG of the image, its token map and the decoded image, and the ids as JSON."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

from vitviz.cli import main


def test_tokens_command_writes_png_and_json(photo_path, tmp_path, capsys):
    out = tmp_path / "tokens.png"
    assert main(["tokens", str(photo_path), "--out", str(out)]) == 0
    data = json.loads(out.with_suffix(".json").read_text())
    ids = np.asarray(data["ids"])
    assert ids.shape == (14, 14) and ids.min() >= 0 and ids.max() < data["codebook_size"] == 512
    png = np.asarray(Image.open(out))
    assert png.shape[1] > 3 * 224  # three panels side by side
    assert "round trip" in capsys.readouterr().out


def test_tokens_command_rejects_a_model_that_is_not_a_tokenizer(photo_path, tmp_path, capsys):
    assert main(["tokens", str(photo_path), "--model", "mae-tiny", "--out", str(tmp_path / "x.png")]) == 1
    assert "not a visual tokenizer" in capsys.readouterr().err
