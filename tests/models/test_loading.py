import threading

import pytest
import torch
from safetensors.torch import save_file

import vitviz
from vitviz import ModelUnavailable
from vitviz.models import loading
from vitviz.models.checkpoint import build_mae_strict, export_mae, read_mae_file
from vitviz.models.mae import MaskedAutoencoderViT


def test_export_and_strict_reload_round_trip(tiny_config, tmp_path):
    model = MaskedAutoencoderViT(tiny_config)
    path = tmp_path / "m.safetensors"
    export_mae(model, path, {"step": "1"})
    sd, meta = read_mae_file(path)
    assert meta["format"] == "vitviz-mae" and meta["step"] == "1"
    again = build_mae_strict(tiny_config, sd, "test file")
    for k, v in again.state_dict().items():
        assert torch.equal(v, model.state_dict()[k].half().float())


def test_missing_decoder_keys_fail_loudly(tiny_config, tmp_path):
    sd = MaskedAutoencoderViT(tiny_config).state_dict()
    encoder_only = {k: v for k, v in sd.items() if not k.startswith(("decoder", "mask_token"))}
    path = tmp_path / "encoder_only.safetensors"
    save_file(encoder_only, str(path))
    loaded, _ = read_mae_file(path)
    with pytest.raises(ModelUnavailable, match=r"missing \d+ keys .*decoder"):
        build_mae_strict(tiny_config, loaded, "encoder_only.safetensors")


def test_extra_key_and_wrong_shape_fail(tiny_config):
    sd = MaskedAutoencoderViT(tiny_config).state_dict()
    with pytest.raises(ModelUnavailable, match="unexpected 1 keys"):
        build_mae_strict(tiny_config, {**sd, "head.weight": torch.zeros(1)}, "x")
    bad = dict(sd)
    bad["decoder_pred.weight"] = torch.zeros(5, 5)
    with pytest.raises(ModelUnavailable, match="shape"):
        build_mae_strict(tiny_config, bad, "x")


def test_corrupt_file_is_model_unavailable(tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(b"\x00" * 100)
    with pytest.raises(ModelUnavailable):
        read_mae_file(path)


def test_unknown_model_lists_choices():
    with pytest.raises(ValueError, match="mae-tiny"):
        vitviz.load_model("resnet-50")


def test_available_models_reports_embedded_model():
    infos = {m.name: m for m in vitviz.available_models()}
    assert infos["mae-tiny"].available, infos["mae-tiny"].reason
    assert infos["mae-tiny"].family == "mae"


def test_embedded_model_loads_in_eval_mode_once_under_threads(monkeypatch):
    cache = loading.LRU(capacity=2)
    monkeypatch.setattr(loading, "CACHE", cache)
    spec = loading.get_spec("mae-tiny")
    results = []
    threads = [threading.Thread(target=lambda: results.append(loading.load_model(spec.name, device="cpu")))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.computed == 1
    assert all(r is results[0] for r in results)
    assert not results[0].module.training
    assert results[0].data_config.input_size == 224
