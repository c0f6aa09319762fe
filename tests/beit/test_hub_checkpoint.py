"""The published BEiT pretraining checkpoint, offline: its exact file format, loaded strictly.

``microsoft/beit-base-patch16-224-pt22k`` on the Hugging Face hub holds ``model.safetensors``
(added by the hub's safetensors converter from ``pytorch_model.bin``: same keys, fp32, metadata
``{"format": "pt"}``) and ``config.json``. Its keys are those of transformers'
``BeitForMaskedImageModeling`` as written by ``convert_beit_unilm_to_pytorch.py`` (pt22k: shared
relative position bias with its stored index, mask token, no absolute position embedding,
``lambda_1/2`` LayerScale, query/value biases and no key bias, ``layernorm``, ``lm_head``).
The layout below is spelled out here from those rules, independently of
:mod:`vitviz.models.convert`, with random weights.

Reduced depth: the file has 2 blocks instead of 12 (``num_hidden_layers: 2`` in its
``config.json``, and the registry entry's depth patched to match); every other shape is
BEiT-Base's (768 wide, 12 heads, the (27*27+3, 12) bias table, the (197, 197) index, the
(8192, 768) head), so the file is a 84 MB prefix of the real format rather than 368 MB.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import vitviz
from vitviz import ModelUnavailable
from vitviz.models import loading
from vitviz.models.beit import BEiTConfig, BEiTForMIM, load_beit_file
from vitviz.models.registry import MODELS, get_spec
from tests.models.test_zoo import offline  # noqa: F401 - offline, empty download caches, a fresh model cache

NAME = "beit-base-pt22k"
FOLDER = "beit-base-patch16-224-pt22k"
DEPTH = 2
D, HEADS, VOCAB, GRID = 768, 12, 8192, 14


def hub_index(g: int) -> np.ndarray:
    """BEiT's relative position index for a g x g grid plus the class token, int64 ``(g*g+1, g*g+1)``."""
    ys, xs = np.meshgrid(np.arange(g), np.arange(g), indexing="ij")
    ys, xs = ys.reshape(-1), xs.reshape(-1)
    dy = ys[:, None] - ys[None, :] + g - 1
    dx = xs[:, None] - xs[None, :] + g - 1
    n = (2 * g - 1) ** 2 + 3
    out = np.zeros((g * g + 1,) * 2, dtype=np.int64)
    out[1:, 1:] = dy * (2 * g - 1) + dx
    out[0, :] = n - 3  # class token to patches
    out[:, 0] = n - 2  # patches to class token
    out[0, 0] = n - 1
    return out


def hub_state_dict(depth: int = DEPTH, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random weights under the hub file's names, shapes and dtypes."""
    gen = torch.Generator().manual_seed(seed)

    def r(*shape: int) -> torch.Tensor:
        return (0.02 * torch.randn(*shape, generator=gen)).float()

    sd = {
        "beit.embeddings.cls_token": r(1, 1, D),
        "beit.embeddings.mask_token": r(1, 1, D),
        "beit.embeddings.patch_embeddings.projection.weight": r(D, 3, 16, 16),
        "beit.embeddings.patch_embeddings.projection.bias": r(D),
        "beit.encoder.relative_position_bias.relative_position_bias_table": r((2 * GRID - 1) ** 2 + 3, HEADS),
        "beit.encoder.relative_position_bias.relative_position_index": torch.from_numpy(hub_index(GRID)),
        "layernorm.weight": 1 + r(D),
        "layernorm.bias": r(D),
        "lm_head.weight": r(VOCAB, D),
        "lm_head.bias": r(VOCAB),
    }
    for i in range(depth):
        p = f"beit.encoder.layer.{i}."
        sd.update({
            p + "lambda_1": 0.1 + r(D),
            p + "lambda_2": 0.1 + r(D),
            p + "layernorm_before.weight": 1 + r(D),
            p + "layernorm_before.bias": r(D),
            p + "attention.attention.query.weight": r(D, D),
            p + "attention.attention.query.bias": r(D),
            p + "attention.attention.key.weight": r(D, D),
            p + "attention.attention.value.weight": r(D, D),
            p + "attention.attention.value.bias": r(D),
            p + "attention.output.dense.weight": r(D, D),
            p + "attention.output.dense.bias": r(D),
            p + "layernorm_after.weight": 1 + r(D),
            p + "layernorm_after.bias": r(D),
            p + "intermediate.dense.weight": r(4 * D, D),
            p + "intermediate.dense.bias": r(4 * D),
            p + "output.dense.weight": r(D, 4 * D),
            p + "output.dense.bias": r(D),
        })
    return sd


def hub_config(depth: int = DEPTH) -> dict:
    """The hub's ``config.json`` (``num_hidden_layers`` reduced)."""
    return {"architectures": ["BeitForMaskedImageModeling"], "hidden_size": D, "image_size": 224,
            "intermediate_size": 4 * D, "layer_norm_eps": 1e-12, "layer_scale_init_value": 0.1,
            "model_type": "beit", "num_attention_heads": HEADS, "num_channels": 3, "num_hidden_layers": depth,
            "patch_size": 16, "use_absolute_position_embeddings": False, "use_mask_token": True,
            "use_mean_pooling": True, "use_relative_position_bias": False,
            "use_shared_relative_position_bias": True, "vocab_size": VOCAB}


def write_snapshot(root: Path, sd: dict[str, torch.Tensor], config: dict | None = None) -> Path:
    snap = root / FOLDER
    snap.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in sd.items()}, str(snap / "model.safetensors"), metadata={"format": "pt"})
    (snap / "config.json").write_text(json.dumps(config or hub_config()))
    return snap


@pytest.fixture(autouse=True)
def short_beit_base(offline, monkeypatch) -> None:
    """Offline with empty caches (the zoo's ``offline`` fixture), BEiT-Base cut to DEPTH blocks."""
    spec = get_spec(NAME)
    monkeypatch.setitem(MODELS, NAME, dataclasses.replace(
        spec, beit_config=dataclasses.replace(spec.beit_config, depth=DEPTH)))


@pytest.fixture(scope="module")
def hub_sd() -> dict[str, torch.Tensor]:
    return hub_state_dict()


def _load(monkeypatch, root: Path) -> vitviz.LoadedModel:
    monkeypatch.setenv("VITVIZ_WEIGHTS_DIR", str(root))
    return vitviz.load_model(NAME, device="cpu", kernels="eager")


def test_hub_file_loads_strictly_and_predicts_8192_logits(monkeypatch, tmp_path, hub_sd) -> None:
    write_snapshot(tmp_path / "w", hub_sd)
    model = _load(monkeypatch, tmp_path / "w")
    beit = model.module
    assert isinstance(beit, BEiTForMIM) and not beit.training and not model.random_init
    c = beit.config
    assert (c.embed_dim, c.num_heads, c.vocab_size, c.grid) == (D, HEADS, VOCAB, (GRID, GRID))
    assert beit.pos_embed is None and beit.rel_pos_bias is not None
    # the numbers land where BEiT's names put them
    p = "beit.encoder.layer.1."
    blk = beit.blocks[1]
    qkv = torch.cat([hub_sd[p + f"attention.attention.{n}.weight"] for n in ("query", "key", "value")])
    assert torch.equal(blk.attn.qkv.weight, qkv)
    assert torch.equal(blk.attn.q_bias, hub_sd[p + "attention.attention.query.bias"])
    assert torch.equal(blk.attn.v_bias, hub_sd[p + "attention.attention.value.bias"])
    assert torch.equal(blk.gamma_1, hub_sd[p + "lambda_1"]) and torch.equal(blk.gamma_2, hub_sd[p + "lambda_2"])
    assert torch.equal(beit.lm_head.weight, hub_sd["lm_head.weight"])
    table = hub_sd["beit.encoder.relative_position_bias.relative_position_bias_table"]
    index = hub_sd["beit.encoder.relative_position_bias.relative_position_index"]
    expected_bias = table[index.reshape(-1)].reshape(GRID * GRID + 1, GRID * GRID + 1, HEADS).permute(2, 0, 1)
    assert torch.equal(beit.rel_pos_bias().reshape(HEADS, GRID * GRID + 1, -1), expected_bias)
    x = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    mask = torch.zeros(2, GRID * GRID, dtype=torch.bool)
    mask[:, 40:120] = True
    with torch.no_grad():
        logits = beit(x, mask)
    assert logits.shape == (2, GRID * GRID, VOCAB) and bool(torch.isfinite(logits).all())
    # the mask token reaches the encoder: hiding patches changes the logits
    with torch.no_grad():
        assert not torch.allclose(beit(x, torch.zeros_like(mask)), logits)
    # the other kernel modes run BEiT's q/v-bias attention too (packed oneDNN and int8 linear layers)
    for kernels in ("onednn", "int8"):
        other = vitviz.load_model(NAME, device="cpu", kernels=kernels).module
        with torch.no_grad():
            assert other(x, mask).shape == logits.shape


@pytest.mark.parametrize("change, message", [
    ("drop", r"missing 1 keys \(beit\.encoder\.layer\.0\.lambda_1\)"),
    ("key_bias", r"unexpected 1 keys \(beit\.encoder\.layer\.0\.attention\.attention\.key\.bias\)"),
    ("abs_pos", r"unexpected 1 keys \(beit\.embeddings\.position_embeddings\)"),
])
def test_missing_or_extra_key_is_refused_naming_it(monkeypatch, tmp_path, hub_sd, change, message) -> None:
    sd = dict(hub_sd)
    if change == "drop":
        del sd["beit.encoder.layer.0.lambda_1"]
    elif change == "key_bias":
        sd["beit.encoder.layer.0.attention.attention.key.bias"] = torch.zeros(D)
    else:
        sd["beit.embeddings.position_embeddings"] = torch.zeros(1, GRID * GRID + 1, D)
    write_snapshot(tmp_path / "w", sd)
    with pytest.raises(ModelUnavailable, match=message):
        _load(monkeypatch, tmp_path / "w")


def test_stored_index_must_be_the_computed_one_and_shapes_must_match(monkeypatch, tmp_path, hub_sd) -> None:
    sd = dict(hub_sd)
    key = "beit.encoder.relative_position_bias.relative_position_index"
    sd[key] = sd[key].flip(0).contiguous()
    write_snapshot(tmp_path / "a", sd)
    with pytest.raises(ModelUnavailable, match="relative_position_index differs"):
        _load(monkeypatch, tmp_path / "a")
    sd = dict(hub_sd)
    sd["lm_head.weight"] = torch.zeros(512, D)
    write_snapshot(tmp_path / "b", sd)
    loading.CACHE.clear()
    with pytest.raises(ModelUnavailable, match=r"lm_head.weight has shape \(512, 768\)"):
        _load(monkeypatch, tmp_path / "b")


def test_config_json_of_another_architecture_is_refused(monkeypatch, tmp_path, hub_sd) -> None:
    write_snapshot(tmp_path / "w", hub_sd, {**hub_config(), "use_shared_relative_position_bias": False,
                                             "use_relative_position_bias": True})
    with pytest.raises(ModelUnavailable, match="use_shared_relative_position_bias=False"):
        _load(monkeypatch, tmp_path / "w")


def test_offline_it_is_listed_unavailable_with_the_reason(monkeypatch, tmp_path) -> None:
    (tmp_path / "w" / FOLDER).mkdir(parents=True)
    # the pickled pytorch_model.bin is never a source: only model.safetensors is looked for
    (tmp_path / "w" / FOLDER / "pytorch_model.bin").write_bytes(b"not read")
    monkeypatch.setenv("VITVIZ_WEIGHTS_DIR", str(tmp_path / "w"))
    info = {i.name: i for i in vitviz.available_models()}[NAME]
    assert not info.available
    assert "offline" in info.reason and f"{FOLDER}/model.safetensors" in info.reason
    assert "microsoft/beit-base-patch16-224-pt22k" in info.reason
    with pytest.raises(ModelUnavailable, match="offline"):
        vitviz.load_model(NAME, device="cpu")
    from vitviz.views import beit as bv  # the BEiT tab's picker and note, as the MAE zoo's

    assert (f"{NAME} (unavailable)", NAME) in bv.beit_choices()
    note = bv.model_note(NAME)
    assert "**unavailable**" in note and "offline" in note and "pickle" in note


def test_beit_tiny_keys_and_metadata_are_unchanged(tmp_path) -> None:
    """The new config fields are off for beit-tiny: plain timm blocks, the same keys, the same metadata."""
    from vitviz.assets import model_file
    from safetensors import safe_open

    path = model_file("beit-tiny.safetensors")
    with safe_open(str(path), framework="pt") as fh:
        meta = fh.metadata()
        keys = set(fh.keys())
    config = BEiTConfig.from_dict(json.loads(meta["config"]))
    assert not config.beit_blocks and config.to_dict() == json.loads(meta["config"])
    assert set(BEiTForMIM(config).state_dict()) == keys
    model, _ = load_beit_file(path)  # strict
    assert model.pos_embed is not None and model.rel_pos_bias is None


def test_tab_view_shows_the_guessed_ids_and_says_why_no_pixels(monkeypatch, tmp_path, hub_sd) -> None:
    from vitviz.beit.api import beit_predict, guess_tokens
    from vitviz.views import beit as bv

    write_snapshot(tmp_path / "w", hub_sd)
    monkeypatch.setenv("VITVIZ_WEIGHTS_DIR", str(tmp_path / "w"))
    photo = Path(__file__).resolve().parents[2] / "assets" / "examples" / "chelsea.jpg"
    assert (f"{NAME}", NAME) in bv.beit_choices()
    model = vitviz.load_model(NAME, device="cpu")
    with pytest.raises(ValueError, match="pickle.*guess_tokens"):
        beit_predict(model, photo)
    g = guess_tokens(model, photo, mask_ratio=0.4, seed=3)
    assert g.predicted_ids.shape == (GRID, GRID) and int(g.predicted_ids.max()) < VOCAB
    assert int(g.mask.sum()) == round(0.4 * GRID * GRID)
    v = bv.predict_view(photo, NAME, 0.4, 3, "block")
    assert np.array_equal(v.prediction.predicted_ids, g.predicted_ids) and np.array_equal(v.prediction.mask, g.mask)
    assert v.correctness is None and v.target_decoded is None
    assert v.decoded.shape == (bv.TOKEN_MAP_SIZE, bv.TOKEN_MAP_SIZE, 3)
    assert "cannot be decoded" in v.text and "never unpickles" in v.text
    ids = np.asarray(v.metrics["predicted_ids"])
    assert ((ids == -1) == ~g.mask).all()
    beit_panel, mae_panel, text, nums = bv.compare_view(photo, v.prediction)
    assert beit_panel is None and mae_panel is None and "beit-tiny" in text and nums == {}
    assert "available" in bv.model_note(NAME)
