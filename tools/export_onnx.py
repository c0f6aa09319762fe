"""Export mae-tiny as the ONNX graph the browser runs (``assets/models/mae-tiny.onnx``).

The graph takes the normalised image and the indices of the visible patches, so every
ratio, seed, pattern and painted mask is an input, never a re-export:

    image    float32 (1, 3, 224, 224)  ImageNet-normalised RGB (vitviz.core.images.normalize)
    visible  int64   (K,)              visible patch indices in raster order, 1 <= K <= 196
    pred     float32 (1, 196, 768)     per-patch predictions in the normalised input space
                                       (16x16 pixels x RGB, the layout of vitviz.core.patches.patchify)

The patch embedding runs on the visible patches only (the convolution as a matrix product on the gathered
patches), not on all 196: the same numbers, about 2% less CPU time a frame in ONNX Runtime Web at 75% hidden (0.7-2.6% in three runs)
(``node bench/web_graph.mjs``, bench/README.md).

The file's metadata records the weights' digest (``vitviz.models.checkpoint.weights_digest``),
which tests/web/test_onnx_graph.py compares with the committed safetensors.

Usage: ``python tools/export_onnx.py [--out assets/models/mae-tiny.onnx]``. Uses
torch's TorchScript exporter (``dynamo=False``), which needs only ``onnx``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OPSET = 17
MODEL = "mae-tiny"


def export(out: Path) -> Path:
    """Write the graph of mae-tiny to ``out`` and return it."""
    import io
    import warnings

    import onnx
    import torch
    from torch import nn

    import vitviz
    from vitviz.models.checkpoint import weights_digest

    loaded = vitviz.load_model(MODEL, device="cpu", kernels="eager")
    mae = loaded.module
    digest = weights_digest(mae)

    class Graph(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mae = mae

        def forward(self, image: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
            # The patch embedding (a stride-p convolution) on the visible patches only: each patch's pixels,
            # in the convolution weight's (channel, row, column) order, times the weight as a matrix; the same
            # tokens as embed_patches() followed by the encoder's gather, without embedding the hidden patches.
            p = self.mae.patch_size
            g = image.shape[-1] // p
            proj = self.mae.patch_embed.proj
            pixels = image.reshape(1, 3, g, p, g, p).permute(0, 2, 4, 1, 3, 5).reshape(1, g * g, 3 * p * p)
            tokens = (pixels[:, visible] @ proj.weight.reshape(proj.out_channels, -1).t() + proj.bias
                      + self.mae.pos_embed[:, 1:, :][:, visible])
            keep = torch.arange(visible.shape[0], dtype=visible.dtype)
            return self.mae.forward_decoder(self.mae.encode_tokens(tokens, keep), visible)

    graph = Graph().eval()
    size = loaded.data_config.input_size
    image = torch.zeros(1, 3, size, size)
    visible = torch.arange(0, mae.config.num_patches, 4, dtype=torch.long)
    buf = io.BytesIO()
    with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(graph, (image, visible), buf, dynamo=False, opset_version=OPSET,
                          input_names=["image", "visible"], output_names=["pred"],
                          dynamic_axes={"visible": {0: "visible_patches"}}, do_constant_folding=True)
    proto = half_storage(onnx.load_from_string(buf.getvalue()))
    meta = {"vitviz.model": MODEL, "vitviz.weights_digest": digest, "vitviz.input_size": str(size),
            "vitviz.patch_size": str(mae.patch_size), "vitviz.mean": ",".join(map(str, loaded.data_config.mean)),
            "vitviz.std": ",".join(map(str, loaded.data_config.std)), "vitviz.torch": torch.__version__}
    del proto.metadata_props[:]
    for k, v in meta.items():
        proto.metadata_props.add(key=k, value=v)
    proto.producer_name = "vitviz tools/export_onnx.py"
    onnx.checker.check_model(proto)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(proto.SerializeToString())
    return out


def half_storage(proto):
    """Store every fp32 initialiser that fp16 holds exactly as fp16, cast back to fp32 on load.

    mae-tiny's weights are saved in fp16, so all of them round-trip exactly: the file is half
    the size and computes the same fp32 numbers (ONNX Runtime folds the casts at session start).
    """
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    casts = []
    for init in proto.graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        full = numpy_helper.to_array(init)
        half = full.astype(np.float16)
        if full.size < 16 or not np.array_equal(half.astype(np.float32), full):
            continue
        name = init.name
        init.CopyFrom(numpy_helper.from_array(half, name + ".fp16"))
        casts.append(helper.make_node("Cast", [name + ".fp16"], [name], to=onnx.TensorProto.FLOAT,
                                      name="cast_" + name))
    nodes = casts + list(proto.graph.node)
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)
    return proto


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "models" / f"{MODEL}.onnx")
    args = ap.parse_args(argv)
    path = export(args.out)
    print(f"{path}: {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
