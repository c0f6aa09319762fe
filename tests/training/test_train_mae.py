"""The mae-tiny training loop: weight averaging, checkpoint, resume and export (a few real steps)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from vitviz.models.checkpoint import read_mae_file
from vitviz.models.mae import MAEConfig, MaskedAutoencoderViT
from vitviz.training.train_mae import main, update_ema

SMALL = MAEConfig(img_size=32, patch_size=8, embed_dim=16, depth=1, num_heads=2,
                  decoder_embed_dim=16, decoder_depth=1, decoder_num_heads=2)


def test_update_ema_moves_each_weight_the_given_fraction_and_keeps_the_model() -> None:
    torch.manual_seed(0)
    model, ema = MaskedAutoencoderViT(SMALL), MaskedAutoencoderViT(SMALL)
    before = {n: p.detach().clone() for n, p in ema.named_parameters()}
    update_ema(ema, model, 0.9)
    for (name, p_ema), p in zip(ema.named_parameters(), model.parameters()):
        assert torch.allclose(p_ema, 0.9 * before[name] + 0.1 * p, atol=1e-6), name
    update_ema(ema, model, 0.0)  # decay 0: the average becomes the model
    for p_ema, p in zip(ema.parameters(), model.parameters()):
        assert torch.equal(p_ema, p)


@pytest.fixture()
def tiny_data(tmp_path: Path) -> Path:
    """A data folder in ``vitviz.training.data``'s layout: 6 crops of 256 px and 2 held-out photos."""
    rng = np.random.default_rng(0)
    data = tmp_path / "data"
    (data / "heldout").mkdir(parents=True)
    np.save(data / "train_crops.npy", rng.integers(0, 256, (6, 256, 256, 3), dtype=np.uint8))
    heldout = []
    for i in range(2):
        path = data / "heldout" / f"photo{i}.png"
        Image.fromarray(rng.integers(0, 256, (240, 260, 3), dtype=np.uint8)).save(path)
        heldout.append({"path": str(path)})
    (data / "manifest.json").write_text(json.dumps({"train": [], "heldout": heldout}))
    return data


def _run(data: Path, out: Path, steps: int, *extra: str) -> None:
    assert main(["--data", str(data), "--ckpt", str(out / "ckpt.pt"), "--out", str(out / "m.safetensors"),
                 "--batch", "2", "--lr", "1e-3", "--warmup", "1", "--hours", "1", "--save-every", "1",
                 "--eval-every", "100", "--max-steps", str(steps), "--grad-weight", "1", *extra]) == 0


def test_training_with_an_average_resumes_it_and_exports_it(tiny_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    _run(tiny_data, out, 2, "--ema", "0.5")
    first = torch.load(out / "ckpt.pt", weights_only=True)
    assert first["step"] == 2 and "ema" in first
    assert any(not torch.equal(first["ema"][k], first["model"][k]) for k in first["model"])
    _run(tiny_data, out, 3, "--ema", "0.5")
    state = torch.load(out / "ckpt.pt", weights_only=True)
    assert state["step"] == 3
    # the resumed average went on from the saved one: one more step of decay 0.5 towards the new weights
    key = "decoder_pred.weight"
    assert not torch.equal(state["ema"][key], first["ema"][key])
    exported, meta = read_mae_file(out / "m.safetensors")
    assert meta["step"] == "3"
    for name, value in exported.items():  # the file holds the average (fp16), not the raw weights
        assert torch.allclose(value.float(), state["ema"][name], atol=2e-3), name
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert log[-1]["step"] == 3 and 0 < log[-1]["heldout_baseline"] and "raw_improvement" in log[-1]


def test_training_without_an_average_exports_the_weights(tiny_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    _run(tiny_data, out, 1)
    state = torch.load(out / "ckpt.pt", weights_only=True)
    assert "ema" not in state
    exported, _ = read_mae_file(out / "m.safetensors")
    for name, value in exported.items():
        assert torch.allclose(value.float(), state["model"][name], atol=2e-3), name
