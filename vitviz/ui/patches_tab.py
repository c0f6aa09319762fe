"""The Patches tab: how an image becomes a sequence of tokens.

Wiring only: every number and image comes from :mod:`vitviz.tokens`,
:mod:`vitviz.render_tokens`, :mod:`vitviz.plots` and :mod:`vitviz.reconstruct`.

Named endpoints: ``patch_grid`` (image, patch size, resolution -> overlay, readout,
numbers) and ``pos_similarity`` (model, row, column -> similarity map, full grid of maps).
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from .. import tokens as tk
from ..plots import embedding_figure, pixel_vector_figure
from ..reconstruct import reconstruct
from ..render import grid_overlay, label_row
from ..render_tokens import (
    MosaicLayout,
    OverlayLayout,
    StripLayout,
    color_range,
    mark_patch,
    patch_grid_overlay,
    shuffled_view,
    similarity_image,
    similarity_mosaic,
    token_strip,
)
from .common import as_seed, example_images, memo_view, require_image, user_errors

DEFAULT_MODEL = "mae-tiny"
DEFAULT_PATCH = 16
DEFAULT_RESOLUTION = 224
#: Default selected point (fractions of the view): patch (4, 9) of a 14x14 grid.
DEFAULT_POINT = [4.5 / 14, 9.5 / 14]
RES_MIN, RES_MAX = 112, 448
#: White band above drawn images: Gradio puts the component's label over their top-left corner.
LABEL_PAD = 26
MAE_RATIO, MAE_SEED = 0.75, 0

INTRO = (
    "A Vision Transformer reads an image as a **sequence**: it cuts the picture into P×P patches, "
    "flattens each one into P·P·3 numbers, multiplies it by one learned matrix **E** to get a token, puts "
    "a **[CLS]** token in front and adds a **position embedding** to every token, since attention by "
    "itself cannot tell where a token came from. Take each step apart below. **Click a patch** on the grid, "
    "the token strip or the map of maps to follow it everywhere."
)
POLICY = (
    "**Crop/resize policy:** the resolution is rounded to the nearest multiple of the patch size; the "
    "image's shorter side is resized to it and the longer side is centre-cropped to a square (the "
    "darkened bands are cut off). This is what the models here do with any photo."
)
EXPLAIN_STRIP = (
    "**The token strip** is what the transformer actually receives: [CLS] first, then the patches in "
    "raster order (row by row, left to right), wrapped into lines here only to fit the page. Nothing in the "
    "sequence itself says which patch was above which: that is the position embedding's job."
)
EXPLAIN_POS = (
    "**Position embeddings:** each tile of the big picture is one patch's position embedding compared "
    "(cosine similarity) with every other patch's, drawn at that patch's place — the ViT paper's figure 7. "
    "Click a tile to select its patch."
)
EXPLAIN_RES = (
    "**Another resolution:** a ViT trained at one grid can run at another if its position embeddings are "
    "resampled to the new grid. timm does it bicubically (`timm.layers.resample_abs_pos_embed`); MAE's "
    "fixed sin-cos embeddings can instead be recomputed for the new grid."
)
EXPLAIN_SHUFFLE = (
    "**Shuffle the patches:** the patch tokens are permuted *without* their positions. Self-attention, "
    "LayerNorm and the MLP treat tokens as a set, so without position embeddings each patch's output is the "
    "same wherever it sits (the encoder is *permutation-equivariant*). Adding the position embeddings — which "
    "stay in place while the contents move — breaks this: the same patch now gets a different output."
)


# ----------------------------------------------------------------------------- text


def readout_markdown(g: tk.PatchGrid) -> str:
    """The live readout of a patch grid, as Markdown."""
    gh, gw = g.grid
    h, w = g.image_size
    rh, rw = g.resized
    snapped = (f"{g.requested} px is not a multiple of {g.patch_size}: using the nearest, **{g.side} px**. "
               if g.side != g.requested else "")
    if g.crop_left or g.crop_top:
        lost = g.crop_left * 2 if g.crop_left else g.crop_top * 2
        axis = "width" if g.crop_left else "height"
        crop = (f"Your {w}×{h} image → {rw}×{rh} (shorter side {g.side} px) → centre crop {g.side}×{g.side} "
                f"(about {lost} px of the {axis} cut off).")
    else:
        crop = f"Your {w}×{h} image → {g.side}×{g.side} (square: nothing is cut off)."
    return (
        f"**Grid** {gh} × {gw} patches of {g.patch_size} px at {g.side}×{g.side} px  ·  "
        f"**N** = {g.num_patches:,} patch tokens  ·  **N + 1** = {g.seq_len:,} with [CLS]  ·  "
        f"**P·P·3** = {g.patch_dim:,} numbers per patch\n\n"
        f"**One global attention layer** compares every token with every token: (N+1)² = "
        f"{g.attention_pairs:,} pairs, **{g.relative_attention_cost:.3g}×** ViT-B/16 at 224 px (197 tokens); "
        f"its products QKᵀ and AV cost 4·(N+1)²·C = {g.attention_gflops:.3g} GFLOPs at C = 768.\n\n"
        f"{snapped}{crop}"
    )


def model_note(m: tk.TokenModel) -> str:
    """What the picked model's position embeddings are, and whether its maps mean anything."""
    pos = tk.position_embeddings(m.module)
    gh, gw = pos.grid
    d = pos.full.shape[-1]
    head = (f"**{m.name}**: patch {m.patch_size} at {m.side} px → {gh}×{gw} grid, position embeddings "
            f"of {d} numbers for {pos.num_prefix} prefix token(s) and {gh * gw} patches.")
    if m.sincos:
        return head + (" **Fixed 2-D sin-cos** embeddings (not learned): half of the numbers encode the "
                       "column and half the row at many frequencies, so each map is brightest along the "
                       "patch's own row and column, fading with distance.")
    if m.random_weights:
        return head + (" ⚠️ **Random weights**: this is the architecture with a seeded random initialisation, "
                       "not the published weights (those are not embedded: they need a download or a weights "
                       "folder). Its *learned* position embeddings are "
                       "untrained random vectors, so **every map is noise**: 1 on the patch itself and near 0 "
                       "elsewhere (trained ViTs show smooth row and column structure). The shapes, the "
                       "interpolation and the shuffle demonstration do not depend on training.")
    return head + (" **Learned** embeddings: nothing told the model about 2-D space, yet nearby patches end up "
                   "with similar embeddings and rows and columns show up as stripes.")


def _token_text(g: tk.PatchGrid, index: int | None) -> str:
    gh, gw = g.grid
    if index is None:
        return ("**[CLS]** selected: token 0 of the sequence. It has no pixels: it is one learned vector, the same "
                "for every image, which gathers information from the patches through attention.")
    r, c = divmod(index, gw)
    return (f"**Patch p{index + 1}** (row {r}, column {c} of the {gh}×{gw} grid) is token {index + 1} of "
            f"{g.seq_len:,}. Its {g.patch_dim:,} numbers are {g.patch_size}×{g.patch_size} pixels × 3 channels, "
            "flattened row by row, R G B per pixel.")


# ----------------------------------------------------------------------------- handlers


def _user_grid(patch_size: Any, resolution: Any) -> tuple[int, int]:
    s = tk.snap_to_patch(int(resolution), int(patch_size))
    return s // int(patch_size), s // int(patch_size)


def _point(point: Any) -> tuple[float, float]:
    if isinstance(point, (list, tuple)) and len(point) == 2:
        return float(point[0]), float(point[1])
    return float(DEFAULT_POINT[0]), float(DEFAULT_POINT[1])


@user_errors
def patch_grid(image: str | None, patch_size: float, resolution: float) -> tuple[np.ndarray, str, dict]:
    """Endpoint ``patch_grid``: (image, patch size, resolution) -> overlay, readout (Markdown), numbers (JSON)."""
    require_image(image)
    g, resized, _ = tk.grid_view(image, int(patch_size), int(resolution))
    overlay, _ = patch_grid_overlay(g, resized)
    return overlay, readout_markdown(g), g.readouts()


@user_errors
@memo_view()
def update_grid(image: str | None, patch_size: float, resolution: float, point: Any, on_cls: bool) -> tuple:
    """Grid, readouts, token strip and the selected patch's pixels (private)."""
    require_image(image)
    g, resized, view = tk.grid_view(image, int(patch_size), int(resolution))
    r, c = tk.patch_at(_point(point), g.grid)
    index = r * g.grid[1] + c
    overlay, layout = patch_grid_overlay(g, resized, selected=None if on_cls else (r, c))
    strip, strip_layout = token_strip(tk.token_patches(view, g.patch_size), selected=0 if on_cls else index + 1,
                                      pad_top=LABEL_PAD)
    if on_cls:
        fig = go.Figure()
        fig.add_annotation(text="[CLS] has no pixels: it is a learned vector (its embedding is on the right)",
                           showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
        fig.update_layout(height=280, template="plotly_white", xaxis=dict(visible=False), yaxis=dict(visible=False))
    else:
        fig = pixel_vector_figure(tk.pixel_vector(view, g.patch_size, index), g.patch_size,
                                  f"p{index + 1} flattened: {g.patch_size}×{g.patch_size}×3 = {g.patch_dim} numbers")
    return (overlay, readout_markdown(g), g.readouts(), layout, strip, strip_layout, fig,
            _token_text(g, None if on_cls else index))


@user_errors
@memo_view()
def update_model(image: str | None, model_key: str, resolution: float, point: Any, on_cls: bool) -> tuple:
    """Row/column of the selected patch in the model's grid, its embedding E·x, the model note (private)."""
    require_image(image)
    m = tk.get_token_model(model_key)
    r, c = tk.patch_at(_point(point), m.grid)
    side = tk.snap_to_patch(int(resolution), m.patch_size)
    g = side // m.patch_size
    e_dim = m.module.patch_embed.proj.out_channels
    k_in = m.patch_size * m.patch_size * 3
    if on_cls:
        vec = tk.class_token_embedding(m.module)
        fig = embedding_figure(vec, f"{m.name}: the [CLS] token ({e_dim} numbers, learned)")
        text = (f"**[CLS]** in {m.name}: a learned vector of {e_dim} numbers (plus its position embedding); it is "
                "not computed from pixels." + (" Random weights: these numbers are untrained." if m.random_weights
                                               else ""))
    else:
        rr, cc = tk.patch_at(_point(point), (g, g))
        vec = tk.patch_embedding(m.module, m.data_config, tk.model_view(image, side), rr * g + cc)
        fig = embedding_figure(vec, f"{m.name}: E·x + b for its patch ({rr}, {cc})")
        text = (f"**Embedding:** {m.name} cuts {m.patch_size}-px patches; at {side} px its grid is {g}×{g}, and its "
                f"patch ({rr}, {cc}) holds the centre of your patch. Its {k_in:,} normalised pixel values times "
                f"**E** ({e_dim}×{k_in:,}) plus a bias give the {e_dim} numbers above: the patch's token, before "
                "the position embedding is added."
                + (" ⚠️ Random weights: E is untrained." if m.random_weights else ""))
    return r, c, fig, text, model_note(m)


def _pos_views(model_key: str, row: float, col: float) -> tuple[np.ndarray, np.ndarray, MosaicLayout]:
    m = tk.get_token_model(model_key)
    pos = tk.position_embeddings(m.module)
    if row is None or col is None:
        raise ValueError("give a row and a column")
    r, c = int(row), int(col)
    tk.check_patch(r, c, pos.grid)
    sims = tk.similarity_grid(pos.patches, pos.grid)
    vmin, vmax = color_range(sims)
    one = similarity_image(sims[r, c], (r, c), vmin, vmax, pad_top=LABEL_PAD)
    mosaic, layout = similarity_mosaic(sims, vmin, vmax, selected=(r, c), pad_top=LABEL_PAD)
    return one, mosaic, layout


@user_errors
def pos_similarity(model_key: str, row: float, col: float) -> tuple[np.ndarray, np.ndarray]:
    """Endpoint ``pos_similarity``: (model, row, column) -> that patch's map, the full grid of maps."""
    one, mosaic, _ = _pos_views(model_key, row, col)
    return one, mosaic


@user_errors
def pos_views(model_key: str, row: float, col: float) -> tuple[np.ndarray, np.ndarray, MosaicLayout]:
    """Like :func:`pos_similarity`, plus the mosaic's layout for clicks (private)."""
    return _pos_views(model_key, row, col)


def _sincos_note(new: tuple[int, int], old: tuple[int, int]) -> str:
    """Why recomputed sin-cos and interpolated embeddings differ at a new grid."""
    if new[0] > old[0]:
        return (f"Recomputed sin-cos continues counting past row and column {old[0] - 1}, positions the model never "
                "saw in training; interpolation stretches the range it knows over the bigger grid.")
    if new[0] < old[0]:
        return (f"Recomputed sin-cos uses only positions 0..{new[0] - 1} of the {old[0]} the model knows (as if "
                "the image were its top-left corner); interpolation squeezes the whole range into the smaller grid.")
    return "At the training grid both are the model's own embeddings."


@user_errors
@memo_view()
def update_resolution(image: str | None, model_key: str, resolution: float) -> tuple:
    """The model at another resolution: interpolated maps and, for an MAE, reconstructions (private)."""
    require_image(image)
    m = tk.get_token_model(model_key)
    side = tk.snap_to_patch(int(resolution), m.patch_size)
    view = tk.model_view(image, side)
    run = tk.run_at_resolution(m, view)
    pos = tk.position_embeddings(m.module)
    sims = tk.similarity_grid(run.pos.patches, run.grid)
    vmin, vmax = color_range(sims)
    interp, _ = similarity_mosaic(sims, vmin, vmax, target=520, pad_top=LABEL_PAD)
    (gh, gw), (oh, ow) = run.grid, pos.grid
    same = run.grid == pos.grid
    lines = [
        f"**{m.name} at {side}×{side} px**: {gh}×{gw} = {gh * gw:,} patches + {pos.num_prefix} prefix token(s); "
        f"encoder output {tuple(run.output_shape)} in {1000 * run.seconds:.0f} ms on this machine.",
        ("Same grid as in training: resampling returns the stored embeddings unchanged."
         if same else f"Position embeddings resampled bicubically from {oh}×{ow} to {gh}×{gw}: the pattern "
                      "is stretched, so every patch keeps a position the model knows."),
    ]
    if not m.sincos:
        return ("\n\n".join(lines), interp, gr.update(value=None, visible=False), gr.update(visible=False), None)
    sin = tk.sincos_at(pos, run.grid)
    s2 = tk.similarity_grid(sin.patches, run.grid)
    lo = min(vmin, color_range(s2)[0])
    interp, _ = similarity_mosaic(sims, lo, 1.0, target=520, pad_top=LABEL_PAD)
    recomputed, _ = similarity_mosaic(s2, lo, 1.0, target=520, pad_top=LABEL_PAD)
    panels, mse = [], []
    for method, title in (("sincos", "sin-cos recomputed"), ("bicubic", "bicubic interpolated")):
        r = reconstruct(tk.resized_loaded(m, side, method), image, MAE_RATIO, MAE_SEED, "random")
        if not panels:
            panels += [(f"{side} px input", grid_overlay(r.original, m.patch_size, alpha=0.25)),
                       (f"masked {int(MAE_RATIO * 100)}%", r.masked)]
        panels.append((f"{title} + visible", r.pasted))
        mse.append((title, r.masked_mse))
    native = reconstruct(m.loaded(), image, MAE_RATIO, MAE_SEED, "random")
    lines.append("**MAE reconstruction** (75% hidden, seed 0), hidden-patch MSE: "
                 + ", ".join(f"{t} **{v:.4f}**" for t, v in mse)
                 + f"; at its own {m.side} px: {native.masked_mse:.4f}. " + _sincos_note(run.grid, pos.grid))
    return ("\n\n".join(lines), interp, gr.update(value=recomputed, visible=True),
            gr.update(visible=True), label_row(panels))


@user_errors
@memo_view()
def update_shuffle(image: str | None, model_key: str, seed: float, row: float, col: float) -> tuple:
    """The shuffle demonstration for the selected patch (private)."""
    require_image(image)
    m = tk.get_token_model(model_key)
    s = as_seed(seed)
    view = tk.model_view(image, m.side)
    i = tk.check_patch(int(row), int(col), m.grid)
    res = tk.shuffle_demo(m.module, m.data_config, view, s)
    j = int(res.where[i])
    gh, gw = m.grid
    scale = max(1, 448 // m.side)
    before = mark_patch(view, m.patch_size, i, m.grid, scale)
    after = mark_patch(shuffled_view(view, m.patch_size, res.perm), m.patch_size, j, m.grid, scale)
    ok = "holds" if res.max_diff_without < 1e-5 else "does not hold"
    text = (
        f"Seed {s}: patch ({i // gw}, {i % gw}) moves to ({j // gw}, {j % gw}). Max absolute difference of "
        f"encoder outputs (the same patch before vs after the shuffle; outputs are about {res.output_scale:.2f} "
        "in size):\n\n"
        "| | this patch | worst of all patches | [CLS] |\n|---|---|---|---|\n"
        f"| **without** position embeddings | {res.diff_without[i]:.2e} | {res.max_diff_without:.2e} | "
        f"{res.prefix_diff_without:.2e} |\n"
        f"| **with** position embeddings | {res.diff_with[i]:.2e} | {res.max_diff_with:.2e} | "
        f"{res.prefix_diff_with:.2e} |\n\n"
        f"Without positions the differences are float rounding: permutation equivariance **{ok}** (< 1e-5). "
        "With positions the contents moved but the position rows stayed, so the outputs change."
        + (" (Random weights: the numbers differ from a trained model's, the equivariance does not.)"
           if m.random_weights else "")
    )
    return before, after, text


@user_errors
def next_seed(seed: float | None) -> int:
    """The next permutation seed."""
    return 0 if seed is None else as_seed(seed) + 1


# ----------------------------------------------------------------------------- clicks


@user_errors
def click_overlay(evt: gr.SelectData, layout: OverlayLayout | None, point: Any) -> tuple:
    """A click on the grid selects the patch under it (clicks on the cropped bands are ignored)."""
    if layout is None:
        return point, False
    p = layout.point(float(evt.index[0]), float(evt.index[1]))
    return ([p[0], p[1]] if p is not None else point), False


@user_errors
def click_strip(evt: gr.SelectData, layout: StripLayout | None, patch_size: float, resolution: float,
                point: Any, on_cls: bool) -> tuple:
    """A click on the token strip selects that token ([CLS] or a patch)."""
    if layout is None:
        return point, on_cls
    t = layout.token_at(float(evt.index[0]), float(evt.index[1]))
    if t is None:
        return point, on_cls
    if t == 0:
        return point, True
    grid = _user_grid(patch_size, resolution)
    r, c = divmod(t - 1, grid[1])
    return list(tk.patch_center(r, c, grid)), False


@user_errors
def click_mosaic(evt: gr.SelectData, layout: MosaicLayout | None, point: Any) -> tuple:
    """A click on a tile of the map of maps selects that tile's patch."""
    if layout is None:
        return point, False
    hit = layout.patch_at(float(evt.index[0]), float(evt.index[1]))
    if hit is None:
        return point, False
    return list(tk.patch_center(hit[0], hit[1], layout.grid)), False


@user_errors
def rowcol_to_point(model_key: str, row: float, col: float) -> tuple:
    """Typed row/column (in the model's grid) -> the selected point."""
    m = tk.get_token_model(model_key)
    if row is None or col is None:
        raise ValueError("give a row and a column")
    tk.check_patch(int(row), int(col), m.grid)
    return list(tk.patch_center(int(row), int(col), m.grid)), False


# ----------------------------------------------------------------------------- layout


def build_tab(demo: gr.Blocks) -> None:
    """Create the Patches tab's components inside the caller's ``gr.Tab`` context.

    Args:
        demo: the enclosing app; its page load draws the first example at once.
    """
    examples = example_images()
    choices = tk.model_choices()
    keys = [k for _, k in choices]
    default_model = DEFAULT_MODEL if DEFAULT_MODEL in keys else (keys[0] if keys else None)
    point = gr.State(list(DEFAULT_POINT))
    on_cls = gr.State(False)
    overlay_layout, strip_layout, mosaic_layout = gr.State(None), gr.State(None), gr.State(None)
    img_kw: dict[str, Any] = dict(type="numpy", format="png", interactive=False, buttons=["download", "fullscreen"])

    gr.Markdown(INTRO)
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            image = gr.Image(value=examples[1] if len(examples) > 1 else (examples[0] if examples else None),
                             type="filepath",
                             sources=["upload", "webcam", "clipboard"], label="Your image", height=240,
                             elem_id="patches-input")
            if examples:
                gr.Examples(examples=examples, inputs=image, label="Example photos")
            patch = gr.Radio(list(tk.PATCH_SIZES), value=DEFAULT_PATCH, label="Patch size P (px)",
                             elem_id="patches-size")
            res = gr.Slider(RES_MIN, RES_MAX, value=DEFAULT_RESOLUTION, step=8, label="Input resolution (px)",
                            elem_id="patches-resolution")
            gr.Markdown(POLICY)
        with gr.Column(scale=2):
            overlay = gr.Image(label="The patch grid (click a patch)", height=460, elem_id="patches-overlay",
                               **img_kw)
            readout = gr.Markdown(elem_id="patches-readout")
            with gr.Accordion("Numbers (JSON)", open=False):
                numbers = gr.JSON(elem_id="patches-numbers")

    gr.Markdown("### The token sequence")
    gr.Markdown(EXPLAIN_STRIP)
    strip = gr.Image(label="Tokens in order: [CLS], p1 … pN (click a token)", elem_id="patches-strip", **img_kw)
    token_text = gr.Markdown(elem_id="patches-token-text")
    with gr.Row():
        model = gr.Dropdown(choices=choices, value=default_model, label="Model (for E, positions, shuffle)",
                            elem_id="patches-model", scale=2)
        row = gr.Number(value=4, precision=0, minimum=0, label="row (model grid)", elem_id="patches-row", scale=0,
                        min_width=110)
        col = gr.Number(value=9, precision=0, minimum=0, label="column (model grid)", elem_id="patches-col",
                        scale=0, min_width=110)
    note = gr.Markdown(elem_id="patches-model-note")
    with gr.Row(equal_height=True):
        pixels_plot = gr.Plot(label="flattened pixel vector", elem_id="patches-pixels")
        embed_plot = gr.Plot(label="embedding E·x + b", elem_id="patches-embedding")
    embed_text = gr.Markdown(elem_id="patches-embedding-text")

    gr.Markdown("### Position embeddings")
    gr.Markdown(EXPLAIN_POS)
    with gr.Row():
        sim_map = gr.Image(label="cosine similarity of the selected patch's position with all others",
                           elem_id="patches-sim-map", scale=1, **img_kw)
        mosaic = gr.Image(label="every patch's map, at its place (click a tile)", elem_id="patches-sim-grid",
                          scale=2, **img_kw)

    gr.Markdown("### Another resolution")
    gr.Markdown(EXPLAIN_RES)
    res2 = gr.Slider(RES_MIN, RES_MAX, value=320, step=16, label="Run the model at (px)",
                     elem_id="patches-model-resolution")
    res_text = gr.Markdown(elem_id="patches-res-text")
    with gr.Row():
        res_interp = gr.Image(label="maps after bicubic interpolation (timm)", elem_id="patches-res-interp",
                              height=460, **img_kw)
        res_sincos = gr.Image(label="maps of sin-cos recomputed for the new grid (MAE)", elem_id="patches-res-sincos",
                              visible=False, height=460, **img_kw)
    with gr.Row(visible=False) as mae_row:
        res_recon = gr.Image(label="MAE reconstruction at that resolution", elem_id="patches-res-recon", height=360,
                             **img_kw)

    gr.Markdown("### Shuffle the patches")
    gr.Markdown(EXPLAIN_SHUFFLE)
    with gr.Row():
        seed = gr.Number(value=0, precision=0, minimum=0, label="Permutation seed", elem_id="patches-seed",
                         min_width=120, scale=0)
        shuffle_btn = gr.Button("Shuffle again (next seed)", elem_id="patches-shuffle", scale=0)
    with gr.Row():
        before = gr.Image(label="in place (selected patch outlined)", elem_id="patches-before", height=400, **img_kw)
        after = gr.Image(label="shuffled (the same patch, outlined)", elem_id="patches-after", height=400, **img_kw)
    shuffle_text = gr.Markdown(elem_id="patches-shuffle-text")
    api_btn = gr.Button(visible=False)

    grid_in = [image, patch, res, point, on_cls]
    grid_out = [overlay, readout, numbers, overlay_layout, strip, strip_layout, pixels_plot, token_text]
    model_in = [image, model, res, point, on_cls]
    model_out = [row, col, embed_plot, embed_text, note]
    pos_in, pos_out = [model, row, col], [sim_map, mosaic, mosaic_layout]
    res_in, res_out = [image, model, res2], [res_text, res_interp, res_sincos, mae_row, res_recon]
    shuffle_in, shuffle_out = [image, model, seed, row, col], [before, after, shuffle_text]
    quick: dict[str, Any] = dict(api_visibility="private", trigger_mode="always_last", show_progress="minimal")

    def selection_chain(event: Any) -> Any:
        """Everything that follows a new selection (or a new image)."""
        return (event.then(update_grid, grid_in, grid_out, **quick)
                .then(update_model, model_in, model_out, **quick)
                .then(pos_views, pos_in, pos_out, **quick)
                .then(update_shuffle, shuffle_in, shuffle_out, **quick))

    def model_chain(event: Any) -> Any:
        """Everything that depends on the model."""
        return (event.then(pos_views, pos_in, pos_out, **quick)
                .then(update_shuffle, shuffle_in, shuffle_out, **quick)
                .then(update_resolution, res_in, res_out, **quick))

    model_chain(demo.load(update_grid, grid_in, grid_out, api_visibility="private").then(
        update_model, model_in, model_out, **quick))
    model_chain(image.change(update_grid, grid_in, grid_out, **quick).then(update_model, model_in, model_out, **quick))
    model_chain(model.change(update_model, model_in, model_out, **quick))
    for control in (patch, res):
        control.change(update_grid, grid_in, grid_out, **quick).then(update_model, model_in, model_out, **quick)
    selection_chain(overlay.select(click_overlay, [overlay_layout, point], [point, on_cls], api_visibility="private"))
    selection_chain(strip.select(click_strip, [strip_layout, patch, res, point, on_cls], [point, on_cls],
                                 api_visibility="private"))
    selection_chain(mosaic.select(click_mosaic, [mosaic_layout, point], [point, on_cls], api_visibility="private"))
    selection_chain(gr.on([row.submit, col.submit], rowcol_to_point, [model, row, col], [point, on_cls],
                          api_visibility="private"))
    res2.change(update_resolution, res_in, res_out, **quick)
    seed.submit(update_shuffle, shuffle_in, shuffle_out, **quick)
    shuffle_btn.click(next_seed, seed, seed, api_visibility="private", queue=False).then(
        update_shuffle, shuffle_in, shuffle_out, **quick)
    api_btn.click(patch_grid, [image, patch, res], [overlay, readout, numbers], api_name="patch_grid")
    api_btn.click(pos_similarity, [model, row, col], [sim_map, mosaic], api_name="pos_similarity")
