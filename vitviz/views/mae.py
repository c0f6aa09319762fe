"""Everything the MAE explorer shows, computed from a reconstruction: no UI code here.

Turns :class:`~vitviz.reconstruct.Reconstruction` objects and sweeps into panels,
numbers, sentences and export files, so the Gradio tab only places them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from .flops import encoder_flops_ratio, mae_flops
from .models.loading import LoadedModel
from .reconstruct import Reconstruction
from .render import error_heatmap, grid_overlay, label_row
from .sweep import Sweep

THUMB_RATIOS: tuple[float, ...] = (0.25, 0.5, 0.75, 0.9)


@dataclass(frozen=True)
class Panels:
    """The five same-size panels of the MAE tab, each ``uint8`` ``(H, W, 3)``."""

    original: np.ndarray
    masked: np.ndarray
    reconstruction: np.ndarray
    pasted: np.ndarray
    error: np.ndarray


def panels(r: Reconstruction, error_vmax: float | None = None) -> Panels:
    """Original with its patch grid, masked input, reconstruction, pasted, error heatmap."""
    return Panels(
        original=grid_overlay(r.original, r.patch_size),
        masked=grid_overlay(r.masked, r.patch_size, alpha=0.25),
        reconstruction=r.reconstruction,
        pasted=r.pasted,
        error=error_heatmap(r.error_map, r.mask, r.patch_size, vmax=error_vmax),
    )


def metrics(model: LoadedModel, r: Reconstruction) -> dict:
    """All numbers shown under the panels (JSON-ready)."""
    cfg = model.module.config
    flops = mae_flops(cfg, r.mask_ratio)
    full = mae_flops(cfg, 0.0)
    return {
        "model": model.name,
        **r.metrics(),
        "encoder_gflops": flops["encoder"] / 1e9,
        "encoder_gflops_full_sequence": full["encoder"] / 1e9,
        "encoder_flops_saving": encoder_flops_ratio(cfg, r.mask_ratio),
        "decoder_gflops": flops["decoder"] / 1e9,
    }


def metrics_markdown(m: dict) -> str:
    """The metrics as one or two lines of Markdown."""
    hidden = m["hidden_patches"]
    psnr = "—" if hidden == 0 else f"{m['psnr_db']:.1f} dB"
    text = (
        f"**{m['model']}** · hidden-patch **MSE {m['masked_mse']:.4f}** · **PSNR {psnr}** (RGB in [0, 1]) · "
        f"model loss {m['model_loss']:.3f} (its training space) · "
        f"**{m['tokens_encoded']} of {m['num_patches']} tokens** encoded ({hidden} hidden): "
        f"**{m['encoder_flops_saving']:.1f}x fewer encoder FLOPs** "
        f"({m['encoder_gflops']:.2f} vs {m['encoder_gflops_full_sequence']:.2f} GFLOPs)"
    )
    if m.get("norm_pix"):
        text += (
            "\n\n⚠️ This checkpoint predicts *per-patch normalised* pixels; the panels were de-normalised "
            "with each hidden patch's true mean and variance, which leaks part of the answer."
        )
    return text


def export_png(r: Reconstruction, compare: Reconstruction | None = None, names: tuple[str, str] = ("", "")) -> np.ndarray:
    """All panels (and a comparison row) as one labelled image. ``uint8``."""
    p = panels(r)
    rows = [label_row([("original", p.original), (f"masked {r.mask_ratio:.0%}", p.masked),
                       (f"{names[0]} reconstruction", p.reconstruction), ("+ visible", p.pasted),
                       ("hidden-patch error", p.error[:, : r.original.shape[1]])])]
    if compare is not None:
        q = panels(compare)
        rows.append(label_row([("original", q.original), (f"masked {compare.mask_ratio:.0%}", q.masked),
                               (f"{names[1]} reconstruction", q.reconstruction), ("+ visible", q.pasted),
                               ("hidden-patch error", q.error[:, : compare.original.shape[1]])]))
    width = max(row.shape[1] for row in rows)
    padded = [np.pad(row, ((0, 8), (0, width - row.shape[1]), (0, 0)), constant_values=255) for row in rows]
    return np.concatenate(padded, axis=0)


def export_json(items: list[dict], extra: dict) -> str:
    """Metrics of one or two models plus the request, as JSON text."""
    return json.dumps({**extra, "results": items}, indent=2, default=float)


def sweep_data(model: LoadedModel, s: Sweep) -> dict:
    """Chart data of a sweep: ratios, MSE, PSNR, encoder and total GFLOPs per ratio."""
    cfg = model.module.config
    flops = [mae_flops(cfg, r) for r in s.ratios]
    return {
        "model": model.name,
        "ratios": list(s.ratios),
        "masked_mse": s.mse,
        "psnr_db": s.psnr,
        "tokens_encoded": s.tokens,
        "encoder_gflops": [f["encoder"] / 1e9 for f in flops],
        "total_gflops": [f["total"] / 1e9 for f in flops],
    }


def thumbnails(s: Sweep, ratios: tuple[float, ...] = THUMB_RATIOS) -> list[tuple[np.ndarray, str]]:
    """``(pasted reconstruction, caption)`` at a few ratios, for a thumbnail strip."""
    out = []
    for ratio in ratios:
        r = s.at(ratio)
        out.append((r.pasted, f"{r.mask_ratio:.0%} hidden · MSE {r.masked_mse:.4f}"))
    return out


def toggle_patch(mask: np.ndarray, x: float, y: float, patch_size: int) -> np.ndarray:
    """Flip the patch under pixel ``(x, y)`` of a painted mask. Returns a new ``(gh, gw)`` bool."""
    m = np.array(mask, dtype=bool, copy=True)
    gh, gw = m.shape
    i = int(np.clip(y // patch_size, 0, gh - 1))
    j = int(np.clip(x // patch_size, 0, gw - 1))
    m[i, j] = not m[i, j]
    if m.all():
        m[i, j] = False  # keep at least one patch visible
    return m
