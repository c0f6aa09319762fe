"""The public BEiT API on the shipped models: shapes, dtypes, round trip, determinism, strict files."""

from __future__ import annotations

import numpy as np
import pytest

import vitviz
from vitviz.assets import model_file
from vitviz.models.beit import load_beit_file
from vitviz.models.vqvae import load_vq_file


@pytest.fixture(scope="module")
def vq():
    return vitviz.load_model("vq-tiny", device="cpu")


@pytest.fixture(scope="module")
def beit():
    return vitviz.load_model("beit-tiny", device="cpu")


def test_registry_lists_both_models_as_embedded_and_available():
    infos = {i.name: i for i in vitviz.available_models()}
    assert infos["vq-tiny"].available and infos["vq-tiny"].family == "vq"
    assert infos["beit-tiny"].available and infos["beit-tiny"].family == "beit"


def test_shipped_files_load_strictly_and_are_small():
    for name, loader in (("vq-tiny.safetensors", load_vq_file), ("beit-tiny.safetensors", load_beit_file)):
        path = model_file(name)
        assert path.stat().st_size < 25 * 1024 * 1024
        module, meta = loader(path)
        assert meta["format"].startswith("vitviz-") and "step" in meta


def test_tokenize_shapes_dtypes_and_round_trip(vq, photo_path):
    t = vitviz.tokenize(vq, photo_path)
    assert t.ids.shape == (14, 14) and t.ids.dtype == np.int64
    assert t.decoded.shape == (224, 224, 3) and t.decoded.dtype == np.uint8
    assert t.codebook_size == 512
    assert 0 <= int(t.ids.min()) and int(t.ids.max()) < t.codebook_size
    # the round trip keeps the picture: much closer to it than a flat grey image is
    grey = float(((t.original / 255.0 - 0.5) ** 2).mean())
    assert t.mse < 0.5 * grey
    # tokenizing the decoded image again mostly gives back the same tokens
    again = vitviz.tokenize(vq, t.decoded)
    assert float((again.ids == t.ids).mean()) > 0.5


def test_beit_predict_contract(beit, vq, photo_path):
    p = vitviz.beit_predict(beit, photo_path, mask_ratio=0.4, seed=0, pattern="block")
    assert p.mask.shape == (14, 14) and p.mask.dtype == bool and int(p.mask.sum()) == round(0.4 * 196)
    assert np.array_equal(p.target_ids, vitviz.tokenize(vq, photo_path).ids)
    assert p.predicted_ids.shape == (14, 14) and p.predicted_ids.dtype == np.int64
    assert p.top5.shape == (14, 14, 5) and np.array_equal(p.top5[..., 0], p.predicted_ids)
    assert p.decoded.shape == (224, 224, 3) and p.decoded.dtype == np.uint8
    hid = np.repeat(np.repeat(p.mask, 16, 0), 16, 1)
    assert np.array_equal(p.decoded[~hid], p.original[~hid])  # visible patches pasted
    top1 = float((p.predicted_ids == p.target_ids)[p.mask].mean())
    assert p.accuracy == pytest.approx(top1) and 0.0 <= p.accuracy <= p.top5_accuracy <= 1.0


def test_predictions_are_deterministic_per_seed(beit, photo_path):
    a = vitviz.beit_predict(beit, photo_path, seed=3)
    b = vitviz.beit_predict(beit, photo_path, seed=3)
    c = vitviz.beit_predict(beit, photo_path, seed=4)
    assert np.array_equal(a.mask, b.mask) and np.array_equal(a.predicted_ids, b.predicted_ids)
    assert np.array_equal(a.decoded, b.decoded)
    assert not np.array_equal(a.mask, c.mask)


def test_painted_mask_and_errors(beit, photo_path):
    mask = np.zeros((14, 14), dtype=bool)
    mask[2:6, 3:9] = True
    p = vitviz.beit_predict(beit, photo_path, mask=mask)
    assert np.array_equal(p.mask, mask)
    with pytest.raises(ValueError, match="block, random"):
        vitviz.beit_predict(beit, photo_path, pattern="grid")
    with pytest.raises(ValueError, match="14x14"):
        vitviz.beit_predict(beit, photo_path, mask=np.ones((7, 7), dtype=bool))
    with pytest.raises(ValueError, match="not a BEiT model"):
        vitviz.beit_predict(vitviz.load_model("mae-tiny", device="cpu"), photo_path)
    with pytest.raises(ValueError, match="not a visual tokenizer"):
        vitviz.tokenize(beit, photo_path)
    with pytest.raises(vitviz.ImageError):
        vitviz.tokenize(vitviz.load_model("vq-tiny", device="cpu"), b"not an image")


def test_random_weights_path_builds_both_architectures(photo_path):
    vq = vitviz.load_model("vq-tiny", device="cpu", random_init=True)
    beit = vitviz.load_model("beit-tiny", device="cpu", random_init=True)
    assert vq.random_init and beit.random_init
    p = vitviz.beit_predict(beit, photo_path, tokenizer=vq)
    assert p.predicted_ids.shape == (14, 14)
