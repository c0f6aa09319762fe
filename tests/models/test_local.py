"""Your own checkpoints (issue 31): each layout written here, loaded strictly, and checked number for
number against the published forward pass written out in plain torch (tests/models/local_fixtures.py)."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import vitviz
from vitviz.core.images import IMAGENET_MEAN, IMAGENET_STD, synthetic_image
from vitviz.models import loading

from .local_fixtures import mae_forward, mae_state_dict, vit_forward, vit_state_dict


pytestmark = pytest.mark.usefixtures("no_own_models")


def _x(view: np.ndarray) -> torch.Tensor:
    """The ImageNet normalisation of a uint8 ``(S, S, 3)`` view, by hand: ``(1, 3, S, S)``."""
    x = torch.from_numpy(view.astype(np.float32) / 255).permute(2, 0, 1)
    return ((x - torch.tensor(IMAGENET_MEAN)[:, None, None]) / torch.tensor(IMAGENET_STD)[:, None, None])[None]


def _check_attention(model, sd, heads: int, classes: int) -> None:
    a = vitviz.attention(model, synthetic_image(200))
    logits, ref = vit_forward(sd, _x(a.image), heads)
    assert a.attentions.shape == (len(ref), heads, *ref[0].shape[1:])
    for got, want in zip(a.attentions, ref):
        np.testing.assert_allclose(got, want.numpy(), atol=1e-4)
    if classes:
        with torch.no_grad():
            out = model.module(_x(a.image))
        np.testing.assert_allclose(out[0].numpy(), logits.numpy(), atol=2e-4)


# --------------------------------------------------------------------------- facebookresearch/mae


def _mae_file(tmp_path, norm_pix: bool = False, decoder: bool = True, name: str = "checkpoint-399.pth"):
    sd = mae_state_dict(1, d=256, depth=6, patch=8, grid=8, dd=128 if decoder else 0, ddepth=2)
    args = argparse.Namespace(model="mae_vit_mine_patch8", input_size=64, mask_ratio=0.75, norm_pix_loss=norm_pix,
                              batch_size=64, output_dir="./out", blr=1.5e-4)
    opt = {"state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.zeros(4)}}, "param_groups": [{"lr": 1e-4}]}
    path = tmp_path / name
    torch.save({"model": sd, "optimizer": opt, "epoch": 399, "scaler": {"scale": 65536.0}, "args": args}, path)
    return path, sd


def test_mae_checkpoint_reconstructs_like_the_reference(tmp_path):
    path, sd = _mae_file(tmp_path)
    m = vitviz.load_model(str(path), device="cpu")
    assert m.family == "mae" and m.patch_size == 8 and m.input_size == 64 and not m.norm_pix
    c = m.module.config
    assert (c.embed_dim, c.depth, c.num_heads, c.decoder_embed_dim, c.decoder_depth, c.decoder_num_heads) == (
        256, 6, 4, 128, 2, 4)
    card = m.spec.description
    assert "epoch 399" in card and "4 heads (not in the file: width / 64" in card and "width / 32" in card
    r = vitviz.reconstruct(m, synthetic_image(200), mask_ratio=0.75, seed=3)
    keep = torch.from_numpy(~r.mask.reshape(-1)).nonzero().flatten()
    x = _x(r.original)
    pred = mae_forward(sd, x, keep, heads=4, dheads=4)
    target = x[0].reshape(3, 8, 8, 8, 8).permute(1, 3, 2, 4, 0).reshape(64, -1)  # (L, p*p*3) as models_mae
    hidden = torch.from_numpy(r.mask.reshape(-1))
    loss = ((pred - target) ** 2).mean(-1)[hidden].mean()
    assert r.model_loss == pytest.approx(float(loss), rel=1e-4)
    pixels = pred.reshape(8, 8, 8, 8, 3).permute(0, 2, 1, 3, 4).reshape(64, 64, 3)
    pixels = pixels * torch.tensor(IMAGENET_STD) + torch.tensor(IMAGENET_MEAN)
    want = (pixels.clamp(0, 1) * 255).round().numpy()
    assert np.abs(r.reconstruction.astype(float) - want).max() <= 1


def test_mae_norm_pix_from_args_and_encoder_only(tmp_path):
    path, _ = _mae_file(tmp_path, norm_pix=True)
    m = vitviz.load_model(path, device="cpu")
    assert m.norm_pix and "norm_pix_loss" in m.spec.description
    enc, sd = _mae_file(tmp_path, decoder=False, name="pretrain.pth")
    e = vitviz.load_model(enc, device="cpu")
    assert e.family == "dino" and type(e.module).__name__ == "VisionTransformer"  # a backbone: no decoder, no head
    _check_attention(e, sd, heads=4, classes=0)
    with pytest.raises(ValueError, match="not a masked autoencoder"):
        vitviz.reconstruct(e, synthetic_image(64))


def test_heads_override(tmp_path):
    path, _ = _mae_file(tmp_path)
    m = vitviz.load_model(path, device="cpu", heads=8, decoder_heads=2)
    assert (m.module.config.num_heads, m.module.config.decoder_num_heads) == (8, 2)
    assert "given with heads=" in m.spec.description
    with pytest.raises(vitviz.ModelUnavailable, match="3 heads do not divide the width 256"):
        vitviz.load_model(path, device="cpu", heads=3)


# --------------------------------------------------------------------------- timm / DeiT / DINO


def test_deit_with_distillation_token(tmp_path):
    sd = vit_state_dict(2, d=128, depth=3, patch=16, grid=4, classes=10, dist=True)
    path = tmp_path / "deit.pth"
    torch.save({"model": {f"module.{k}": v for k, v in sd.items()}, "epoch": 7,
                "args": argparse.Namespace(model="deit_mine_distilled", distillation_type="hard")}, path)
    m = vitviz.load_model(str(path), device="cpu")
    assert m.family == "deit" and type(m.module).__name__ == "VisionTransformerDistilled"
    assert "class and distillation tokens" in m.spec.description and "10-class" in m.spec.description
    _check_attention(m, sd, heads=2, classes=10)


def test_vit_with_four_registers(tmp_path):
    sd = vit_state_dict(3, d=192, depth=2, patch=14, grid=5, classes=7, registers=4, layer_scale=True)
    path = tmp_path / "vit_reg4.safetensors"
    save_file(sd, str(path))
    m = vitviz.load_model(path, device="cpu")
    assert m.family == "vit" and m.input_size == 70 and m.module.num_prefix_tokens == 5
    assert "4 register" in m.spec.description and "LayerScale" in m.spec.description
    _check_attention(m, sd, heads=3, classes=7)


def test_dino_teacher_student(tmp_path):
    teacher = vit_state_dict(4, d=192, depth=2, patch=16, grid=4)
    student = vit_state_dict(5, d=192, depth=2, patch=16, grid=4)
    g = torch.Generator().manual_seed(0)
    head = {"head.mlp.0.weight": torch.randn(64, 192, generator=g), "head.mlp.0.bias": torch.zeros(64),
            "head.last_layer.weight_g": torch.ones(100, 1), "head.last_layer.weight_v": torch.randn(100, 64)}
    path = tmp_path / "checkpoint.pth"
    torch.save({"teacher": {**{f"backbone.{k}": v for k, v in teacher.items()}, **head},
                "student": {**{f"module.backbone.{k}": v for k, v in student.items()},
                            **{f"module.{k}": v for k, v in head.items()}},
                "optimizer": {}, "epoch": 100, "args": argparse.Namespace(arch="vit_tiny", patch_size=16)}, path)
    m = vitviz.load_model(path, device="cpu")
    assert m.family == "dino"
    card = m.spec.description
    assert "['teacher']" in card and "also holds student" in card and "projection head (4 tensors" in card
    assert "3 heads (args.arch = vit_tiny)" in card
    _check_attention(m, teacher, heads=3, classes=0)


# --------------------------------------------------------------------------- Hugging Face folders


def _hf_folder(tmp_path, name: str, sd: dict, config: dict):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    save_file({k: v.contiguous() for k, v in sd.items()}, str(folder / "model.safetensors"))
    return folder


def test_hf_vitmae_folder(tmp_path):
    from vitviz.models.convert import official_to_hf

    sd = mae_state_dict(6, d=128, depth=2, patch=16, grid=4, dd=64, ddepth=1)
    folder = _hf_folder(tmp_path, "vit-mae-mine", official_to_hf(sd), {
        "model_type": "vit_mae", "architectures": ["ViTMAEForPreTraining"], "hidden_size": 128,
        "num_attention_heads": 8, "decoder_num_attention_heads": 2, "norm_pix_loss": True, "image_size": 64})
    m = vitviz.load_model(folder, device="cpu")
    assert m.family == "mae" and m.norm_pix
    assert (m.module.config.num_heads, m.module.config.decoder_num_heads) == (8, 2)
    r = vitviz.reconstruct(m, synthetic_image(64), mask_ratio=0.5, seed=0)
    assert r.reconstruction.shape == (64, 64, 3)


def _hf_vit_names(sd: dict, prefix: str) -> dict:
    from vitviz.models.convert import official_to_hf

    body = {k: v for k, v in sd.items() if not k.startswith(("head", "dist_token"))}
    out = {k.replace("vit.", prefix, 1): v for k, v in official_to_hf(body).items()}
    return out


def test_hf_vit_and_deit_folders(tmp_path):
    sd = vit_state_dict(7, d=128, depth=2, patch=16, grid=4, classes=5)
    hf = _hf_vit_names(sd, "vit.") | {"classifier.weight": sd["head.weight"], "classifier.bias": sd["head.bias"]}
    folder = _hf_folder(tmp_path, "vit-mine", hf, {"model_type": "vit", "num_attention_heads": 4,
                                                   "architectures": ["ViTForImageClassification"]})
    m = vitviz.load_model(folder, device="cpu")
    assert m.family == "vit" and "4 heads (config.json)" in m.spec.description
    _check_attention(m, sd, heads=4, classes=5)
    dsd = vit_state_dict(8, d=128, depth=2, patch=16, grid=4, classes=5, dist=True)
    hf = _hf_vit_names(dsd, "deit.") | {"deit.embeddings.distillation_token": dsd["dist_token"],
                                        "cls_classifier.weight": dsd["head.weight"],
                                        "cls_classifier.bias": dsd["head.bias"],
                                        "distillation_classifier.weight": dsd["head_dist.weight"],
                                        "distillation_classifier.bias": dsd["head_dist.bias"]}
    folder = _hf_folder(tmp_path, "deit-mine", hf, {"model_type": "deit", "num_attention_heads": 2})
    d = vitviz.load_model(folder, device="cpu")
    assert d.family == "deit"
    _check_attention(d, dsd, heads=2, classes=5)


def test_hf_beit_folder(tmp_path):
    from vitviz.models.beit import BEiTConfig, BEiTForMIM
    from vitviz.models.convert import beit_to_hf

    config = BEiTConfig(img_size=128, patch_size=16, embed_dim=96, depth=2, num_heads=2, vocab_size=40,
                        mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), abs_pos_embed=False, rel_pos_bias="shared",
                        layer_scale=0.1, qv_bias=True)
    torch.manual_seed(0)
    ref = BEiTForMIM(config).eval()
    folder = _hf_folder(tmp_path, "beit-mine", beit_to_hf(ref.state_dict()), {
        "model_type": "beit", "architectures": ["BeitForMaskedImageModeling"], "hidden_size": 96,
        "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 384, "patch_size": 16,
        "image_size": 128, "vocab_size": 40, "use_absolute_position_embeddings": False,
        "use_shared_relative_position_bias": True, "use_relative_position_bias": False,
        "layer_scale_init_value": 0.1, "use_mask_token": True})
    m = vitviz.load_model(folder, device="cpu")
    assert m.family == "beit" and m.input_size == 128
    for (k, v), (k2, v2) in zip(m.module.state_dict().items(), ref.state_dict().items()):
        assert k == k2 and torch.equal(v, v2)
    from vitviz.beit.api import guess_tokens

    assert guess_tokens(m, synthetic_image(128), mask_ratio=0.4, seed=0).predicted_ids.shape == (8, 8)
    with pytest.raises(ValueError, match="your own BEiT"):
        vitviz.beit_predict(m, synthetic_image(64))


# --------------------------------------------------------------------------- errors and public mode


def test_truncated_foreign_and_unsafe_files_fail_with_a_sentence(tmp_path):
    path, _ = _mae_file(tmp_path)
    cut = tmp_path / "cut.pth"
    cut.write_bytes(path.read_bytes()[: 5000])
    with pytest.raises(vitviz.ModelUnavailable, match="cannot read .*cut.pth"):
        vitviz.load_model(cut)
    foreign = tmp_path / "resnet.pth"
    torch.save({"conv1.weight": torch.zeros(8, 3, 7, 7), "fc.weight": torch.zeros(10, 8)}, foreign)
    with pytest.raises(vitviz.ModelUnavailable, match=r"fits no layout .* it holds 2 tensors: conv1, fc"):
        vitviz.load_model(foreign)
    odd = tmp_path / "odd.pth"
    torch.save({"epoch": 3, "weights": [1, 2]}, odd)
    with pytest.raises(vitviz.ModelUnavailable, match="none of model, state_dict, teacher"):
        vitviz.load_model(odd)
    unsafe = tmp_path / "unsafe.pth"
    torch.save({"model": vit_state_dict(0, 64, 1, 16, 2), "args": {"path": __import__("pathlib").Path("/x")}}, unsafe)
    with pytest.raises(vitviz.ModelUnavailable, match="never unpickles arbitrary objects"):
        vitviz.load_model(unsafe)
    extra = tmp_path / "extra.safetensors"
    save_file(vit_state_dict(0, 64, 1, 16, 2) | {"blocks.0.attn.q_norm.weight": torch.ones(32)}, str(extra))
    with pytest.raises(vitviz.ModelUnavailable, match="unexpected 1 keys"):
        vitviz.load_model(extra)


def test_named_models_from_the_environment_and_public_mode(tmp_path, monkeypatch):
    path, _ = _mae_file(tmp_path)
    monkeypatch.setenv("VITVIZ_MODELS", f"mine={path}")
    assert "mine" in [i.name for i in vitviz.available_models()]
    info = next(i for i in vitviz.available_models() if i.name == "mine")
    assert info.available and str(path) in info.source and info.family == "mae"
    assert loading.load_choice("mine", device="cpu").spec.local is not None
    assert loading.load_choice("mine:random", device="cpu").random_init
    for request in (str(path), f"{path}:random", "../" + path.name):  # a request names a path: refused
        with pytest.raises(ValueError, match="unknown model"):
            loading.load_choice(request)
        with pytest.raises(ValueError, match="unknown model"):
            loading.load_model(request)
    monkeypatch.setenv("VITVIZ_PUBLIC", "1")
    with pytest.raises(ValueError, match="public host never loads checkpoints"):
        vitviz.available_models()
    monkeypatch.delenv("VITVIZ_MODELS")
    with pytest.raises(ValueError, match="public host never loads checkpoints"):
        vitviz.load_model(str(path))
    assert "mine" not in [i.name for i in vitviz.available_models()]


def test_cli_takes_a_path(tmp_path, capsys):
    from vitviz.cli import main

    path, _ = _mae_file(tmp_path)
    image = tmp_path / "in.png"
    synthetic_image(100).save(image)
    assert main(["reconstruct", str(image), "--model", str(path), "--out", str(tmp_path / "p.png")]) == 0
    assert "of 64 tokens encoded" in capsys.readouterr().out
    assert main(["attention", str(image), "--model", str(path), "--heads", "8", "--out", str(tmp_path / "a.png")]) == 0
    assert main(["reconstruct", str(image), "--model", str(tmp_path / "none.pth")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_hf_dinov2_folder(tmp_path):
    sd = vit_state_dict(9, d=128, depth=2, patch=14, grid=4, layer_scale=True)
    names = {"norm1": "norm1", "norm2": "norm2", "attn.proj": "attention.output.dense", "mlp.fc1": "mlp.fc1",
             "mlp.fc2": "mlp.fc2"}
    hf = {"embeddings.cls_token": sd["cls_token"], "embeddings.position_embeddings": sd["pos_embed"],
          "embeddings.mask_token": torch.zeros(1, 128),
          "embeddings.patch_embeddings.projection.weight": sd["patch_embed.proj.weight"],
          "embeddings.patch_embeddings.projection.bias": sd["patch_embed.proj.bias"],
          "layernorm.weight": sd["norm.weight"], "layernorm.bias": sd["norm.bias"]}
    for i in range(2):
        b, h = f"blocks.{i}.", f"encoder.layer.{i}."
        for ours, theirs in names.items():
            for kind in ("weight", "bias"):
                hf[f"{h}{theirs}.{kind}"] = sd[f"{b}{ours}.{kind}"]
        for kind in ("weight", "bias"):
            for part, chunk in zip(("query", "key", "value"), sd[f"{b}attn.qkv.{kind}"].chunk(3)):
                hf[f"{h}attention.attention.{part}.{kind}"] = chunk
        hf[f"{h}layer_scale1.lambda1"], hf[f"{h}layer_scale2.lambda1"] = sd[f"{b}ls1.gamma"], sd[f"{b}ls2.gamma"]
    folder = _hf_folder(tmp_path, "dinov2-mine", hf, {
        "model_type": "dinov2", "architectures": ["Dinov2Model"], "hidden_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "patch_size": 14, "image_size": 56, "mlp_ratio": 4})
    m = vitviz.load_model(folder, device="cpu")
    assert m.family == "dino" and m.input_size == 56 and "mask_token" in m.spec.description
    _check_attention(m, sd, heads=4, classes=0)


def _hf_swin_names(sd: dict) -> dict:
    """timm Swin names -> transformers' ``SwinForImageClassification`` names, written out here (patch merging
    at the end of stage i in transformers, at the start of stage i + 1 in timm; q, k, v apart)."""
    import re

    block = {"norm1": "layernorm_before", "attn.proj": "attention.output.dense", "norm2": "layernorm_after",
             "mlp.fc1": "intermediate.dense", "mlp.fc2": "output.dense"}
    hf: dict[str, torch.Tensor] = {}
    for key, value in sd.items():
        if key.startswith("patch_embed.proj."):
            hf["swin.embeddings.patch_embeddings.projection." + key.rsplit(".", 1)[1]] = value
        elif key.startswith("patch_embed.norm."):
            hf["swin.embeddings.norm." + key.rsplit(".", 1)[1]] = value
        elif key.startswith("norm."):
            hf["swin.layernorm." + key.rsplit(".", 1)[1]] = value
        elif key.startswith("head.fc."):
            hf["classifier." + key.rsplit(".", 1)[1]] = value
        elif m := re.match(r"layers\.(\d+)\.downsample\.(.+)", key):
            hf[f"swin.encoder.layers.{int(m.group(1)) - 1}.downsample.{m.group(2)}"] = value
        elif m := re.match(r"(layers\.\d+\.blocks\.\d+)\.(.+)\.(weight|bias)$", key):
            stem, part, kind = f"swin.encoder.{m.group(1)}", m.group(2), m.group(3)
            if part == "attn.qkv":
                for name, chunk in zip(("query", "key", "value"), value.chunk(3)):
                    hf[f"{stem}.attention.self.{name}.{kind}"] = chunk
            else:
                hf[f"{stem}.{block[part]}.{kind}"] = value
        elif key.endswith("attn.relative_position_bias_table"):
            stem = "swin.encoder." + key.removesuffix(".attn.relative_position_bias_table")
            hf[f"{stem}.attention.self.relative_position_bias_table"] = value
            w = 7
            hf[f"{stem}.attention.self.relative_position_index"] = torch.zeros(w * w, w * w, dtype=torch.long)
        else:
            raise AssertionError(f"unmapped timm key {key}")
    return hf


def test_hf_swin_folder(tmp_path):
    """Issue 31: a Hugging Face Swin snapshot (SwinForImageClassification, non-standard sizes) loads strictly
    and computes what timm's Swin of the same weights computes; a Swin with absolute embeddings is refused."""
    from timm.models.swin_transformer import SwinTransformer

    g = torch.Generator().manual_seed(11)
    ref = SwinTransformer(img_size=112, patch_size=4, window_size=7, embed_dim=32, depths=(2, 2), num_heads=(2, 4),
                          num_classes=5).eval()
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    config = {"model_type": "swin", "architectures": ["SwinForImageClassification"], "image_size": 112,
              "patch_size": 4, "window_size": 7, "embed_dim": 32, "depths": [2, 2], "num_heads": [2, 4],
              "mlp_ratio": 4.0, "num_channels": 3, "use_absolute_embeddings": False}
    folder = _hf_folder(tmp_path, "swin-mine", _hf_swin_names(ref.state_dict()), config)
    m = vitviz.load_model(folder, device="cpu")
    assert m.family == "swin" and m.input_size == 112 and "depths 2-2" in m.spec.description
    x = _x(np.asarray(synthetic_image(112).resize((112, 112))))
    with torch.no_grad():
        np.testing.assert_allclose(m.module(x).numpy(), ref(x).numpy(), atol=1e-5)
    tokens = vitviz.layer_tokens(m, synthetic_image(112))
    assert len(tokens.tokens) >= 2
    bad = _hf_folder(tmp_path, "swin-ape", _hf_swin_names(ref.state_dict()), config | {"use_absolute_embeddings": True})
    with pytest.raises(vitviz.ModelUnavailable, match="absolute position embeddings"):
        vitviz.load_model(bad, device="cpu")
    hf = _hf_swin_names(ref.state_dict())
    del hf["swin.encoder.layers.0.blocks.1.attention.self.key.weight"]
    partial = _hf_folder(tmp_path, "swin-partial", hf, config)
    with pytest.raises(vitviz.ModelUnavailable, match="not all of query, key and value"):
        vitviz.load_model(partial, device="cpu")
