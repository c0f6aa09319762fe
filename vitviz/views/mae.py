"""Everything the MAE explorer shows, computed from a reconstruction: no UI code here.

Turns :class:`~vitviz.mae.reconstruct.Reconstruction` objects and sweeps into panels,
numbers, sentences and export files, so the Gradio tab only places them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..compute.formulas import encoder_flops_ratio, mae_flops
from ..core.patches import pixel_to_patch
from ..mae.reconstruct import Reconstruction, reconstruct
from ..mae.sweep import Sweep, reconstruct_cached
from ..models.loading import LoadedModel, available_models, load_model
from ..render._draw import label_row
from ..render.mae import error_heatmap, grid_overlay

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
    i, j = pixel_to_patch(x, y, m.shape, m.shape[0] * patch_size)
    m[i, j] = not m[i, j]
    if m.all():
        m[i, j] = False  # keep at least one patch visible
    return m


def model_choices() -> list[tuple[str, str]]:
    """(label, name) pairs of MAE models; unavailable ones say so in the label."""
    out = []
    for info in available_models():
        if info.family == "mae":
            out.append((info.name if info.available else f"{info.name} (unavailable)", info.name))
    return out


def model_note(name: str | None) -> str:
    """Description, licence and availability of the picked model, as Markdown."""
    for info in available_models():
        if info.name == name:
            status = "**available**" if info.available else "**unavailable**"
            reason = f" — {info.reason}" if info.reason else ""
            return f"{info.description}  \n*{info.architecture}* · licence: {info.licence}  \n{status}{reason}"
    return ""


def result(image: Any, model_name: str, ratio: float, seed: int, pattern: str,
           painted: np.ndarray | None) -> tuple[LoadedModel, Reconstruction]:
    """The model and its reconstruction: of a painted mask, else of the (cached) slider stop."""
    model = load_model(model_name)
    if painted is not None:
        return model, reconstruct(model, image, mask=painted)
    return model, reconstruct_cached(model, image, ratio, seed, pattern)[0]


def compare(image: Any, first: LoadedModel, r: Reconstruction, other_name: str) -> tuple[LoadedModel, Reconstruction]:
    """Another MAE on the same image and the same mask as ``r``.

    Raises:
        ValueError: the other model cuts a different patch grid.
    """
    other = load_model(other_name)
    if other.module.config.grid != first.module.config.grid:
        raise ValueError(f"{other_name} uses a different patch grid than {first.name}; "
                         "compare models with the same grid")
    return other, reconstruct(other, image, mask=r.mask)
