"""The checkpoint doctor: planted problems in the exact upstream formats, each named in words.

Files are written as facebookresearch/mae's ``main_pretrain.py`` saves them (``misc.save_model``:
``{"model", "optimizer", "epoch", "scaler", "args"}`` with ``args`` an ``argparse.Namespace``), as timm
saves a classifier (a bare state dict), and as DistributedDataParallel names keys (``module.``). Most
start from mae-tiny's own weights, so that only the planted problem differs from a healthy MAE.
"""

from __future__ import annotations

import argparse
import json

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

import vitviz
from vitviz.assets import model_file
from vitviz.cli import main
from vitviz.models import loading, local

from ..conftest import EXAMPLES
from ..models.local_fixtures import mae_state_dict, vit_state_dict

PHOTOS = [str(EXAMPLES / "chelsea.jpg")]


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    for name in ("VITVIZ_MODELS", "VITVIZ_PUBLIC", "SPACE_ID"):
        monkeypatch.delenv(name, raising=False)
    yield
    loading.CACHE.clear()
    local.DESCRIBED.clear()


def _tiny() -> dict[str, torch.Tensor]:
    """mae-tiny's weights in facebookresearch/mae names (fp32)."""
    return {k: v.float() for k, v in load_file(str(model_file("mae-tiny.safetensors"))).items()}


def _save_official(path, sd, **args) -> None:
    """As facebookresearch/mae util/misc.py save_model writes checkpoint-N.pth."""
    ns = argparse.Namespace(model="mae_vit_tiny_patch16", input_size=224, mask_ratio=0.75, norm_pix_loss=False,
                            batch_size=64, epochs=400, blr=1.5e-4, output_dir="./output_dir")
    for k, v in args.items():
        setattr(ns, k, v)
    opt = {"state": {}, "param_groups": [{"lr": 1e-4, "weight_decay": 0.05, "params": [0, 1]}]}
    torch.save({"model": sd, "optimizer": opt, "epoch": 399, "scaler": {"scale": 65536.0}, "args": ns}, path)


def _titles(d) -> dict[str, str]:
    return {f.title: f.severity for f in d.findings}


def _check(d) -> None:
    """Every report: findings ordered worst first, each a sentence, the JSON the same findings."""
    order = [f.severity for f in d.findings]
    ranks = [("problem", "warning", "note", "ok").index(s) for s in order]
    assert ranks == sorted(ranks)
    assert all(f.sentence.strip() for f in d.findings)
    data = json.loads(d.to_json())
    assert [f["title"] for f in data["findings"]] == [f.title for f in d.findings]


def test_healthy_mae_tiny_gets_a_clean_report():
    d = vitviz.diagnose("mae-tiny", device="cpu", photos=PHOTOS)
    _check(d)
    assert d.healthy, d.to_text()
    t = _titles(d)
    assert t["beats the visible-ring baseline"] == "ok" and t["beats its random-weight twin"] == "ok"
    assert t["plain pixel targets"] == "ok" and t["the encoder's position table"] == "ok"
    m = d.measurements["checkpoint"]
    assert m["mse75"] < m["ring75"] < d.measurements["random_twin"]["mse75"]
    assert set(d.panels) == {"masked", "ring baseline", "this checkpoint", "mae-tiny, same mask"}
    assert "measured on mae-tiny" in d.to_text() and "He et al." in d.to_text()


def test_random_weights(tmp_path):
    path = tmp_path / "checkpoint-0.pth"
    _save_official(path, mae_state_dict(5, d=64, depth=2, patch=16, grid=4, dd=32, ddepth=1), input_size=64)
    d = vitviz.diagnose(path, device="cpu", photos=PHOTOS)
    _check(d)
    t = _titles(d)
    assert t.get("no better than blurring the visible patches") == "problem" or \
        t.get("no better than its random-weight twin") == "problem", d.to_text()
    assert not d.healthy


def test_decoder_removed(tmp_path):
    sd = {k: v for k, v in _tiny().items() if not k.startswith(("decoder", "mask_token"))}
    path = tmp_path / "checkpoint-399.pth"
    _save_official(path, sd)
    d = vitviz.diagnose(path, device="cpu", photos=PHOTOS)
    _check(d)
    f = next(f for f in d.findings if f.title == "the decoder is missing")
    assert f.severity == "problem" and "encoder-only" in f.sentence and "pretraining checkpoint" in f.sentence
    assert "104 tensors" in f.expected and "Read anyway" in f.sentence
    assert _titles(d)["attention has structure"] == "ok"  # the encoder alone is still measured


def test_ddp_module_prefix(tmp_path):
    path = tmp_path / "checkpoint-399.pth"
    _save_official(path, {"module." + k: v for k, v in _tiny().items()})
    d = vitviz.diagnose(path, device="cpu", photos=PHOTOS)
    _check(d)
    f = next(f for f in d.findings if f.title == "every key starts with module.")
    assert f.severity == "warning" and "Read anyway" in f.sentence and "DistributedDataParallel" in f.sentence
    assert [x for x in d.findings if x.severity == "problem"] == []
    assert _titles(d)["beats its random-weight twin"] == "ok"


def test_norm_pix_loss_in_args(tmp_path):
    """The args Namespace is read (weights_only=True with argparse.Namespace allow-listed for that call)."""
    path = tmp_path / "checkpoint-399.pth"
    _save_official(path, _tiny(), norm_pix_loss=True)
    with pytest.raises(Exception, match="argparse.Namespace|Unsupported global"):
        torch.load(path, weights_only=True)  # plain weights_only refuses the Namespace: vitviz allow-lists it
    d = vitviz.diagnose(path, device="cpu", photos=PHOTOS)
    _check(d)
    f = next(f for f in d.findings if f.title == "per-patch normalised targets (norm_pix_loss)")
    assert f.severity == "warning" and "args.norm_pix_loss" in f.sentence and "leaks" in f.sentence
    assert "MAE-pytorch#40" in f.expected and "Table 1c" in f.expected
    # mae-tiny was trained on pixels: the doctor sees that the flag does not fit these weights
    assert _titles(d)["the outputs look like plain pixels"] == "warning"


def test_patch16_model_fed_at_another_resolution(tmp_path):
    """facebookresearch/mae util/pos_embed.py interpolate_pos_embed, for 256 px: pos_embed only."""
    sd = _tiny()
    pos = sd["pos_embed"]
    d = pos.shape[-1]
    grid = pos[:, 1:].reshape(1, 14, 14, d).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(16, 16), mode="bicubic", align_corners=False)
    sd["pos_embed"] = torch.cat([pos[:, :1], grid.permute(0, 2, 3, 1).flatten(1, 2)], dim=1)
    path = tmp_path / "checkpoint-256.pth"
    _save_official(path, sd, input_size=256)
    dx = vitviz.diagnose(path, device="cpu", photos=PHOTOS)
    _check(dx)
    t = _titles(dx)
    assert t["the encoder's table was resampled: fed at another resolution"] == "warning"
    f = next(f for f in dx.findings if f.title == "does not load strictly")
    assert f.severity == "problem" and "decoder_pos_embed" in f.sentence and "Read anyway" in f.sentence
    assert "224 px" in f.sentence
    assert t["beats its random-weight twin"] == "ok"  # measured after putting the sin-cos table back
    assert t["args.input_size differs from the position tables"] == "warning"


def test_truncated_file(tmp_path):
    full = tmp_path / "full.pth"
    _save_official(full, _tiny())
    data = full.read_bytes()
    cut = tmp_path / "checkpoint-399.pth"
    cut.write_bytes(data[: len(data) // 2])
    d = vitviz.diagnose(cut, device="cpu", photos=PHOTOS)
    _check(d)
    assert [(f.severity, f.title) for f in d.findings] == [("problem", "the file is truncated")]
    assert "download or copy it again" in d.findings[0].action


def test_not_an_mae_but_a_vit_classifier(tmp_path):
    path = tmp_path / "vit_classifier.pth"
    torch.save(vit_state_dict(2, d=64, depth=2, patch=16, grid=4, classes=10), path)  # timm: a bare state dict
    d = vitviz.diagnose(path, device="cpu", photos=PHOTOS)
    _check(d)
    f = next(f for f in d.findings if f.title == "not an MAE: a ViT classifier")
    assert f.severity == "problem" and "10 classes" in f.sentence and "Attention tab" in f.action
    assert "reconstruction" not in {x.topic for x in d.findings}


def test_public_host_refuses_paths(tmp_path, monkeypatch):
    monkeypatch.setenv("VITVIZ_PUBLIC", "1")
    with pytest.raises(ValueError, match="public host"):
        vitviz.diagnose(tmp_path / "x.pth")


def test_cli_text_and_json(tmp_path, capsys):
    path = tmp_path / "checkpoint-399.pth"
    _save_official(path, {k: v for k, v in _tiny().items() if not k.startswith(("decoder", "mask_token"))})
    assert main(["doctor", str(path), "--photo", "chelsea"]) == 0
    text = capsys.readouterr().out
    assert "[PROBLEM] keys: the decoder is missing" in text and "what to do:" in text
    assert main(["doctor", str(path), "--json", "--photo", "chelsea"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["findings"][0]["title"] == "the decoder is missing" and data["healthy"] is False
    cut = tmp_path / "cut.pth"
    cut.write_bytes(path.read_bytes()[:1000])
    assert main(["doctor", str(cut)]) == 0
    assert "the file is truncated" in capsys.readouterr().out


def test_hugging_face_snapshot_of_a_healthy_mae(tmp_path):
    """mae-tiny written as a transformers ViTMAEForPreTraining snapshot folder: read, and a clean report."""
    from safetensors.torch import save_file

    from vitviz.models.convert import official_to_hf

    folder = tmp_path / "vit-mae-tiny"
    folder.mkdir()
    save_file({k: v.contiguous() for k, v in official_to_hf(_tiny()).items()}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({
        "model_type": "vit_mae", "architectures": ["ViTMAEForPreTraining"], "hidden_size": 192,
        "num_attention_heads": 3, "decoder_num_attention_heads": 6, "norm_pix_loss": False, "image_size": 224}))
    (folder / "preprocessor_config.json").write_text(json.dumps({
        "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]}))
    d = vitviz.diagnose(folder, device="cpu", photos=PHOTOS)
    _check(d)
    assert d.healthy, d.to_text()
    assert "Hugging Face vit_mae snapshot" in d.layout
    t = _titles(d)
    assert t["plain pixel targets"] == "ok" and t["mean/std"] == "ok" and t["beats its random-weight twin"] == "ok"
