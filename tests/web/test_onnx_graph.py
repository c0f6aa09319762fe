"""The committed ONNX graph of mae-tiny computes what the torch model computes, from the committed weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vitviz
from vitviz.core.images import model_input
from vitviz.core.masking import make_mask, num_hidden
from vitviz.mae.reconstruct import assemble_stops, prepare, reconstruct
from vitviz.models.checkpoint import weights_digest
from vitviz.web.graph import graph_file, graph_metadata, hide_order

ort = pytest.importorskip("onnxruntime")

GRID = (14, 14)


@pytest.fixture(scope="module")
def model():
    return vitviz.load_model("mae-tiny", device="cpu")


@pytest.fixture(scope="module")
def session():
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    return ort.InferenceSession(str(graph_file()), opts, providers=["CPUExecutionProvider"])


def _painted() -> np.ndarray:
    m = np.zeros(GRID, dtype=bool)
    m[3:11, 2:9] = True  # a painted rectangle
    m[0, :] = True  # and a stroke along the top
    return m


MASKS = [
    ("random", 0.75, 0), ("random", 0.5, 7), ("random", 0.95, 3), ("random", 0.0, 0),
    ("block", 0.6, 1), ("block", 0.4, 42), ("grid", 0.75, 0), ("grid", 0.3, 0), ("painted", None, None),
]


@pytest.mark.parametrize("pattern,ratio,seed", MASKS)
def test_graph_reconstruction_equals_torch_within_two_levels(model, session, photo_path, pattern, ratio, seed):
    mask = _painted() if pattern == "painted" else make_mask(GRID, ratio, seed, pattern).numpy()
    ref = reconstruct(model, photo_path, mask=mask)
    original = prepare(model, photo_path)
    image = model_input(original, model.data_config).numpy()
    visible = np.flatnonzero(~mask.reshape(-1)).astype(np.int64)
    (pred,) = session.run(["pred"], {"image": image, "visible": visible})
    assert pred.shape == (1, 196, 768) and pred.dtype == np.float32
    # The page's arithmetic: de-normalise per channel (patch layout: 16x16 pixels x RGB), as predict() does.
    mean = np.array(model.data_config.mean, np.float32)
    std = np.array(model.data_config.std, np.float32)
    px = (pred.reshape(1, 14, 14, 16, 16, 3) * std + mean).transpose(0, 1, 3, 2, 4, 5).reshape(1, 224, 224, 3)
    mt = torch.from_numpy(mask).unsqueeze(0)
    got = assemble_stops(original, torch.from_numpy(px), mt, torch.zeros(1), 16, False)[0]
    for name in ("reconstruction", "pasted", "masked"):
        diff = np.abs(getattr(got, name).astype(int) - getattr(ref, name).astype(int)).max()
        assert diff <= 2, (name, diff)
    np.testing.assert_allclose(got.error_map, ref.error_map, atol=2e-4)
    if mask.any():
        assert abs(got.psnr - ref.psnr) < 0.05


def test_graph_records_the_digest_of_the_committed_weights(model):
    meta = graph_metadata()
    fresh = vitviz.load_model("mae-tiny", device="cpu", kernels="eager")
    assert meta["vitviz.model"] == "mae-tiny"
    assert meta["vitviz.weights_digest"] == weights_digest(fresh.module)
    assert (meta["vitviz.input_size"], meta["vitviz.patch_size"]) == ("224", "16")
    assert tuple(map(float, meta["vitviz.mean"].split(","))) == model.data_config.mean
    assert tuple(map(float, meta["vitviz.std"].split(","))) == model.data_config.std


def test_graph_stores_the_fp16_weights_exactly():
    """Every weight is an fp16 initialiser (the checkpoint's own dtype), so the file is about 11.6 MB."""
    import onnx

    proto = onnx.load(str(graph_file()))
    kinds = {i.data_type for i in proto.graph.initializer}
    assert kinds == {onnx.TensorProto.FLOAT16}
    assert graph_file().stat().st_size < 12_500_000


@pytest.mark.parametrize("pattern", ["random", "block"])
@pytest.mark.parametrize("seed", [0, 5, 99])
def test_a_prefix_of_the_hiding_order_is_the_server_mask(pattern, seed):
    order = hide_order(pattern, seed, GRID)
    assert sorted(order.tolist()) == list(range(196))
    for ratio in (0.05, 0.3, 0.55, 0.75, 0.95):
        m = torch.zeros(196, dtype=torch.bool)
        m[order[:num_hidden(196, ratio)]] = True
        assert torch.equal(m.view(GRID), make_mask(GRID, ratio, seed, pattern))


def test_hide_order_names_the_nested_patterns():
    with pytest.raises(ValueError, match="random, block"):
        hide_order("grid", 0, GRID)
