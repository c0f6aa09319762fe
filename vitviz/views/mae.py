"""Everything the MAE explorer shows, computed from a reconstruction: no UI code here.

Turns :class:`~vitviz.mae.reconstruct.Reconstruction` objects and sweeps into panels,
numbers, sentences and export files, so the Gradio tab only places them.
"""

from __future__ import annotations

import io
import json
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go
from PIL import Image

from ..compute.formulas import encoder_flops_ratio, mae_flops
from ..core.images import image_size
from ..core.masking import NESTED_PATTERNS, PATTERNS
from ..mae.reconstruct import Reconstruction, prepare, reconstruct
from ..mae.sweep import STOPS, Sweep, image_key, reconstruct_cached, sweep
from ..models.loading import LoadedModel, available_models, load_model
from ..models.mae import MAEConfig
from ..models.registry import MAE_TINY_CONFIG
from ..plots.mae import sweep_figure
from ..render._draw import label_row, text
from ..render.mae import error_heatmap, grid_overlay, shade_hidden
from .common import enlargement_note, model_label

THUMB_RATIOS: tuple[float, ...] = (0.25, 0.5, 0.75, 0.9)


@dataclass(frozen=True)
class Panels:
    """The five same-size panels of the MAE tab, each ``uint8`` ``(H, W, 3)``."""

    original: np.ndarray
    masked: np.ndarray
    reconstruction: np.ndarray
    pasted: np.ndarray
    error: np.ndarray


def masked_panel(r: Reconstruction) -> np.ndarray:
    """The masked input as shown: hidden patches grey, the patch grid drawn lightly. ``uint8`` ``(H, W, 3)``."""
    return grid_overlay(r.masked, r.patch_size, alpha=0.25)


def panels(r: Reconstruction, error_vmax: float | None = None, painting: bool = False) -> Panels:
    """Original with its patch grid, masked input, reconstruction, pasted, error heatmap.

    While the user paints the mask (``painting``), the original shows the hidden patches
    darkened: the panel that is clicked shows what the clicks did.
    """
    original = shade_hidden(r.original, r.mask, r.patch_size) if painting else r.original
    return Panels(
        original=grid_overlay(original, r.patch_size),
        masked=masked_panel(r),
        reconstruction=r.reconstruction,
        pasted=r.pasted,
        error=error_heatmap(r.error_map, r.mask, r.patch_size, vmax=error_vmax),
    )


def metrics(model: LoadedModel, r: Reconstruction, photo: Any = None) -> dict:
    """All numbers shown under the panels (JSON-ready); ``photo``, the image given (a path), adds its size
    (``photo_size``: width, height), so the line can say when it was enlarged to the model's input."""
    cfg = model.architecture.config
    flops = mae_flops(cfg, r.mask_ratio)
    full = mae_flops(cfg, 0.0)
    out = {
        "model": model.name,
        **r.metrics(),
        "encoder_gflops": flops["encoder"] / 1e9,
        "encoder_gflops_full_sequence": full["encoder"] / 1e9,
        "encoder_flops_saving": encoder_flops_ratio(cfg, r.mask_ratio),
        "decoder_gflops": flops["decoder"] / 1e9,
    }
    if photo is not None:
        out["photo_size"] = list(image_size(photo))
        out["input_side"], out["patch_size"] = int(cfg.img_size), int(cfg.patch_size)
    return out


#: Where the model's own loss is measured, for the metrics line: the same hidden-patch MSE on the pixels the
#: model was trained to predict (each channel standardised by the model's mean and spread, ImageNet's for
#: MAE; each patch by its own mean and variance for ``norm_pix`` checkpoints), so it differs from the 0-to-1
#: MSE beside it (:func:`vitviz.mae.reconstruct.predict`).
LOSS_SPACE = {False: "the same error on the model's standardised pixels", True: "on per-patch normalised pixels"}


def metrics_markdown(m: dict) -> str:
    """The metrics as one or two lines of Markdown."""
    hidden = m["hidden_patches"]
    note = enlargement_note(*m["photo_size"], m["input_side"], m["patch_size"]) if m.get("photo_size") else ""
    if hidden == 0:
        return (f"**{m['model']}** · **nothing is hidden**: the encoder sees all {m['num_patches']} tokens, so "
                "there is nothing to rebuild and no error to measure. Move the slider to hide patches."
                + (f"\n\n{note}" if note else ""))
    psnr = f"{m['psnr_db']:.1f}\u00a0dB"  # never "dB" alone on the next line
    text = (
        f"**{m['model']}** · hidden-patch **MSE {m['masked_mse']:.4f}** · **PSNR {psnr}** (pixel values 0 to 1) · "
        f"training loss {m['model_loss']:.3f} ({LOSS_SPACE[bool(m.get('norm_pix'))]}) · "
        f"**{m['tokens_encoded']} of {m['num_patches']} tokens** encoded ({hidden} hidden): "
        f"**{m['encoder_flops_saving']:.1f}x fewer encoder FLOPs** "
        f"({m['encoder_gflops']:.2f} vs {m['encoder_gflops_full_sequence']:.2f} GFLOPs)"
    )
    text += f"\n\n{note}" if note else ""
    if m.get("norm_pix"):
        text += (
            "\n\n⚠️ This checkpoint predicts *per-patch normalised* pixels; the panels were de-normalised "
            "with each hidden patch's true mean and variance, which leaks part of the answer."
        )
    return text


def metrics_text(m: dict) -> str:
    """The metrics line as plain text (the Markdown without its emphasis)."""
    return re.sub(r"\*+", "", metrics_markdown(m)).replace("\n\n", " ")


def export_png(r: Reconstruction, compare: Reconstruction | None = None, names: tuple[str, str] = ("", ""),
               metrics: list[str] = (), painting: bool = False) -> np.ndarray:
    """What the tab shows, as one image: the panels (and a comparison row) with the error colour bar,
    then the metrics lines under them. ``uint8``.

    Args:
        metrics: plain-text lines (:func:`metrics_text`) written under the panels.
    """
    def row(x: Reconstruction, name: str, vmax: float | None, paint: bool) -> np.ndarray:
        p = panels(x, error_vmax=vmax, painting=paint)
        masked = f"masked: {int(x.mask.sum())} of {x.mask.size} hidden ({x.mask_ratio:.0%})"
        return label_row([("original", p.original), (masked, p.masked),
                          (f"{name} reconstruction".strip(), p.reconstruction), ("reconstruction + visible", p.pasted),
                          ("error of hidden patches (MSE)", p.error)])

    rows = [row(r, names[0], None, painting)]
    if compare is not None:
        vmax = float(r.error_map[r.mask].max()) if r.mask.any() else None
        rows.append(row(compare, names[1], vmax, painting))
    width = max(x.shape[1] for x in rows)
    if metrics:
        size, line = 14, 20
        chars = max(40, width // 8)
        lines = [w for m in metrics for w in textwrap.wrap(m, chars)]
        band = np.full((line * len(lines) + 10, width, 3), 255, dtype=np.uint8)
        band = text(band, [(4, 4 + i * line, t) for i, t in enumerate(lines)], size, anchor="la", outlined=False,
                    fill=(20, 20, 20))
        rows.append(band)
    padded = [np.pad(x, ((0, 8), (0, width - x.shape[1]), (0, 0)), constant_values=255) for x in rows]
    return np.concatenate(padded, axis=0)


def mask_rows(mask: np.ndarray) -> list[str]:
    """A mask as one string of 0/1 per patch row (1 = hidden): readable in a JSON file."""
    return ["".join("1" if v else "0" for v in row) for row in np.asarray(mask, dtype=bool)]


def export_record(image_name: str, controls: dict, mask: np.ndarray, items: list[dict]) -> dict:
    """What the export JSON holds: the image, every control, the mask and the metrics of each model.

    Args:
        image_name: the file name the user gave (no server folder).
        controls: model, compare, mask_ratio, seed, pattern, painted.
        mask: ``(gh, gw)`` bool, True = hidden.
        items: :func:`metrics` of the model (and of the comparison model).
    """
    m = np.asarray(mask, dtype=bool)
    return {"image": image_name, "controls": controls,
            "mask": {"grid": list(m.shape), "hidden": int(m.sum()), "legend": "one string per patch row, 1 = hidden",
                     "rows": mask_rows(m)},
            "results": items}


def export_json(record: dict) -> str:
    """An export record as indented JSON text (the mask rows stay one line each)."""
    return json.dumps(record, indent=2, default=float)


def sweep_data(model: LoadedModel, s: Sweep) -> dict:
    """Chart data of a sweep: ratios, MSE, PSNR, encoder and total GFLOPs per ratio."""
    cfg = model.architecture.config
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


#: The comparison dropdown's value that means "no comparison" (one home: the page checks it too).
NO_COMPARE = "(none)"


def compared(compare_name: str, model_name: str | None = None) -> str | None:
    """The model to compare with, or ``None`` (no comparison picked, or the main model itself: one row)."""
    return compare_name if compare_name and compare_name not in (NO_COMPARE, model_name) else None


def compare_choices() -> tuple[list[tuple[str, str]], str]:
    """What the comparison picker offers: the MAE models whose weights can be had here ((label, name) pairs;
    the main model is left out of the comparison when picked in both), and a sentence saying so when there is
    no second one (offline with the embedded mae-tiny alone)."""
    here = [(label, name) for label, name in model_choices() if not label.endswith("(unavailable)")]
    if len(here) > 1:
        return here, ""
    only = here[0][1] if here else "none"
    return here, (f"No second MAE is here (only {only}): a comparison needs another MAE's weights, on disk in "
                  "VITVIZ_WEIGHTS_DIR or downloaded (README, Models).")


def model_choices() -> list[tuple[str, str]]:
    """(label, name) pairs of MAE models; unavailable ones say so in the label."""
    out = []
    for info in available_models():
        if info.family == "mae":
            out.append((model_label(info, info.name) if info.available else f"{info.name} (unavailable)", info.name))
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
    if other.architecture.config.grid != first.architecture.config.grid:
        raise ValueError(f"{other_name} uses a different patch grid than {first.name}; "
                         "compare models with the same grid")
    return other, reconstruct(other, image, mask=r.mask)


def nesting_sentence() -> str:
    """Which patterns keep, for one seed, the patches of a lower ratio hidden at a higher one.

    Built from :data:`vitviz.core.masking.NESTED_PATTERNS`, which the tests check pattern by pattern.
    """
    nested = [p for p in PATTERNS if p in NESTED_PATTERNS]
    redrawn = [p for p in PATTERNS if p not in NESTED_PATTERNS]
    sentence = "With one **seed**, raising the ratio hides more of the same patches"
    if nested:
        sentence += " for " + " and ".join(f"*{p}*" for p in nested)
        sentence += " (the same rectangles grow)" if "block" in nested else ""
    if redrawn:
        sentence += "; " + " and ".join(f"*{p}*" for p in redrawn) + " is redrawn at every ratio"
    return sentence + "."


def encoder_help(config: MAEConfig = MAE_TINY_CONFIG, name: str = "mae-tiny") -> str:
    """Why the encoder skips hidden patches, with the decoder's computed cost at 75%."""
    f = mae_flops(config, 0.75)
    return (
        "**Why the encoder skips hidden patches**: MAE's encoder runs only on the visible patches (no mask "
        "tokens), so at 75% it processes a quarter of them. The decoder is light *per token* but runs on "
        f"every token, visible ones and mask tokens: for {name} at 75% it costs {f['decoder'] / 1e9:.2f} GFLOPs "
        f"against the encoder's {f['encoder'] / 1e9:.2f} (see Compute). It exists only for pre-training: "
        "afterwards it is thrown away, and fine-tuning and inference run the encoder on all patches. "
        "*(MAE §3, table 1c)*"
    )


def sweep_stops(image: Any, model_name: str, seed: int, pattern: str,
                progress: Callable[[float], Any] | None = None) -> None:
    """Every slider stop in batched passes, into the sweep cache; :func:`sweep_outputs` then draws them (built
    once, by the caller that keeps them: the chart and thumbnails are most of a cached sweep's time)."""
    sweep(load_model(model_name), image, seed, pattern, STOPS, progress=progress)


def sweep_outputs(image: Any, model_name: str, seed: int, pattern: str) -> tuple[go.Figure, list, dict]:
    """Chart, thumbnails and chart data of a cached sweep."""
    model = load_model(model_name)
    s = sweep(model, image, seed, pattern, STOPS)
    data = sweep_data(model, s)
    return sweep_figure(data), thumbnails(s), data


@dataclass(frozen=True)
class Stop:
    """One slider stop already computed: its ratio, panels and metrics line."""

    ratio: float
    panels: Panels
    metrics: str


def sweep_key(image: Any, model_name: str, seed: int, pattern: str) -> tuple[tuple, Any]:
    """The key of a sweep (model, image content, seed, pattern) and the image as the model takes it
    (:func:`vitviz.mae.reconstruct.prepare`: decoded once, for :func:`cached_stops` too)."""
    model = load_model(model_name)
    original = prepare(model, image)
    return image_key(model, original, seed, pattern), original


def cached_stops(image: Any, model_name: str, seed: int, pattern: str, original: Any = None
                 ) -> tuple[list[Stop], bool]:
    """The slider stops a sweep has already computed (nothing is computed here), and whether every stop was.

    ``original``: the prepared image of :func:`sweep_key`, so the photo is not decoded once per stop.
    """
    model = load_model(model_name)
    original = prepare(model, image) if original is None else original
    stops, complete = [], True
    for ratio in STOPS:
        r, hit = reconstruct_cached(model, original, ratio, seed, pattern)
        if not hit:
            complete = False
            continue
        stops.append(Stop(ratio, panels(r), metrics_markdown(metrics(model, r, image))))
    return stops, complete


def export_files(image: Any, model_name: str, mask_ratio: float, seed: int, pattern: str, painted: np.ndarray | None,
                 compare_name: str | None) -> tuple[bytes, str]:
    """What the tab shows, for download: the panels as one PNG (bytes) and the metrics and controls (JSON text)."""
    model, r = result(image, model_name, mask_ratio, seed, pattern, painted)
    items = [metrics(model, r, image)]
    q = None
    if compare_name:
        other, q = compare(image, model, r, compare_name)
        items.append(metrics(other, q))
    buffer = io.BytesIO()
    Image.fromarray(export_png(r, q, (model_name, compare_name or ""), metrics=[metrics_text(m) for m in items],
                               painting=painted is not None)).save(buffer, format="png")
    controls = {"model": model_name, "compare": compare_name,
                "mask_ratio": None if painted is not None else float(mask_ratio), "seed": seed, "pattern": pattern,
                "painted": painted is not None}
    return buffer.getvalue(), export_json(export_record(Path(str(image)).name, controls, r.mask, items))


def url_controls(state: Any) -> dict[str, Any]:
    """The MAE tab's controls the page's URL sets (:class:`vitviz.views.urlstate.UrlState`): model, ratio, seed,
    pattern, and a painted mask (paint mode on); an absent one is left out."""
    found = {"model_name": state.model, "mask_ratio": state.ratio, "seed": state.seed, "pattern": state.pattern}
    if state.mask is not None:
        found.update(paint=True, painted=state.mask.tolist())
    return {k: v for k, v in found.items() if v is not None}
