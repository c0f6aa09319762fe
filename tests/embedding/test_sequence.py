"""Patches and positions: grid arithmetic, the token sequence, position embeddings, the shuffle."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

import vitviz.core.patches as core_patches
from vitviz.core.images import square_view
from vitviz.models.loading import LoadedModel
from vitviz.models.mae import MaskedAutoencoderViT
from vitviz.models.registry import get_spec
import vitviz.core.pos_embed as core_pos_embed
import vitviz.embedding.resolution as embedding_resolution
import vitviz.embedding.shuffle as embedding_shuffle
import vitviz.embedding.sequence as embedding_sequence
import vitviz.models.loading as models_loading
import vitviz.views.patches as views_patches
from vitviz.core.images import DataConfig, square_resize, to_uint8
from vitviz.core.patches import patchify
from vitviz.mae.reconstruct import reconstruct
from vitviz.render.patches import patch_grid_overlay, shuffled_view, similarity_mosaic, token_strip


def _random_vit(name: str, seed: int = 0):
    """A timm ViT with seeded random weights, through the package's one random-weights path."""
    from vitviz.models.build import create_timm, isolated_seed

    with isolated_seed(seed):
        return create_timm(name).eval().requires_grad_(False)


def _loaded(module, cfg, name: str = "vit-base", random_init: bool = True) -> LoadedModel:
    return LoadedModel(name, get_spec(name), module, cfg, torch.device("cpu"), random_init=random_init)


def _photo(w: int, h: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


@pytest.fixture(scope="module")
def tiny_vit():
    """timm's ``test_vit`` (patch 16 at 160 px, width 64) with seeded random weights."""
    return _random_vit("test_vit", seed=0), DataConfig(input_size=160)


# ----------------------------------------------------------------------------- grid arithmetic and policy


@pytest.mark.parametrize("resolution,patch,side", [
    (224, 16, 224), (120, 16, 128), (119, 16, 112), (225, 14, 224), (230, 14, 224), (231, 14, 238),
    (100, 32, 96), (112, 32, 128), (8, 16, 16), (3, 16, 16), (448, 4, 448), (447, 8, 448),
])
def test_resolution_snaps_to_the_nearest_multiple_of_the_patch(resolution, patch, side):
    s = core_patches.snap_to_patch(resolution, patch)
    assert s == side
    assert s % patch == 0 and s >= patch
    assert abs(s - resolution) <= patch / 2 or s == patch


@pytest.mark.parametrize("w,h", [(640, 480), (480, 640), (1000, 333), (37, 100), (1, 1), (225, 224), (300, 300)])
@pytest.mark.parametrize("patch,resolution", [(16, 224), (14, 224), (32, 120), (4, 113), (8, 448)])
def test_grid_policy_for_non_square_and_non_divisible_inputs(w, h, patch, resolution):
    g = core_patches.patch_grid(h, w, patch, resolution)
    s = g.side
    assert s == core_patches.snap_to_patch(resolution, patch)
    # shorter side resized to S, longer side centre-cropped: exactly images.square_resize
    rh, rw = g.resized
    assert min(rh, rw) == s and rh >= s and rw >= s
    assert g.crop_top == (rh - s) // 2 and g.crop_left == (rw - s) // 2
    assert (g.crop_top == 0) or (g.crop_left == 0)
    gh, gw = g.grid
    assert gh == gw == s // patch
    assert g.num_patches == gh * gw and g.seq_len == gh * gw + 1
    assert g.patch_dim == patch * patch * 3
    assert g.attention_pairs == (gh * gw + 1) ** 2
    left, top, right, bottom = g.crop_box
    assert 0 <= left < right <= w + 1e-6 and 0 <= top < bottom <= h + 1e-6


def test_grid_view_equals_square_resize():
    img = _photo(97, 61)
    for patch, resolution in ((16, 120), (14, 225), (4, 112), (32, 448)):
        g, resized, view = core_patches.grid_view(img, patch, resolution)
        assert view.shape == (g.side, g.side, 3) and resized.shape[:2] == g.resized
        assert np.array_equal(view, to_uint8(square_resize(img, g.side)))


def test_policy_examples():
    g = core_patches.patch_grid(480, 640, 16, 224)  # a 4:3 landscape photo
    assert g.resized == (224, 299) and (g.crop_top, g.crop_left) == (0, 37) and g.grid == (14, 14)
    assert g.relative_attention_cost == pytest.approx(1.0)
    g = core_patches.patch_grid(640, 480, 14, 230)  # portrait, 230 px -> 224 px (16 patches of 14)
    assert g.side == 224 and g.resized == (299, 224) and g.crop_top == 37 and g.grid == (16, 16)
    g = core_patches.patch_grid(300, 300, 16, 448)
    assert g.num_patches == 784 and g.relative_attention_cost == pytest.approx(785**2 / 197**2)


@pytest.mark.parametrize("args", [(0, 10, 16, 224), (10, 10, 0, 224), (10, 10, 16, 0), (10, 10, 16, 5000)])
def test_bad_grid_arguments_raise(args):
    with pytest.raises(ValueError):
        core_patches.patch_grid(*args)


def test_patch_at_and_centre_round_trip():
    for grid in ((14, 14), (7, 7), (3, 5)):
        for r in range(grid[0]):
            for c in range(grid[1]):
                assert core_patches.pixel_to_patch(*core_patches.patch_center(r, c, grid), grid, 1.0) == (r, c)
                x, y = core_patches.patch_center(r, c, grid, 448)
                assert core_patches.pixel_to_patch(x, y, grid, 448) == (r, c)
    assert core_patches.pixel_to_patch(-3.0, 1.0, (4, 4), 1.0) == (3, 0)  # clamped into the grid
    with pytest.raises(ValueError, match="row in 0..13"):
        core_patches.check_patch(14, 0, (14, 14))


# ----------------------------------------------------------------------------- the token sequence


@pytest.mark.parametrize("patch", [4, 8, 14, 16, 32])
def test_token_strip_order_matches_patchify(patch):
    _, _, view = core_patches.grid_view(_photo(120, 90, seed=patch), patch, 224)
    x = torch.from_numpy(view).permute(2, 0, 1).unsqueeze(0).float()
    flat = patchify(x, patch)[0].to(torch.uint8).numpy()
    tokens = core_patches.token_patches(view, patch)
    assert tokens.shape == (flat.shape[0], patch, patch, 3)
    assert np.array_equal(tokens.reshape(len(tokens), -1), flat)
    # the drawn strip shows [CLS] and then exactly these patches, in this order
    strip, layout = token_strip(tokens, tile=patch, max_tokens=10_000, pad_top=26)
    assert layout.shown == layout.total == len(tokens) + 1
    for t in (1, 2, len(tokens) // 2, len(tokens)):
        y, x0 = layout.origin(t)
        assert np.array_equal(strip[y:y + patch, x0:x0 + patch], tokens[t - 1])
        assert layout.token_at(x0 + patch / 2, y + patch / 2) == t
    y, x0 = layout.origin(0)
    assert layout.token_at(x0 + 1, y + 1) == 0
    # the pixel vector of a patch is its patchify row, scaled to [0, 1]
    assert np.allclose(core_patches.pixel_vector(view, patch, 3), flat[3] / 255.0)


def test_long_sequences_are_cut_with_a_note():
    tokens = np.zeros((12544, 4, 4, 3), dtype=np.uint8)  # patch 4 at 448 px
    strip, layout = token_strip(tokens, max_tokens=392)
    assert layout.shown == 392 and layout.total == 12545
    assert strip.shape[1] == layout.label_width + layout.per_row * (layout.tile + layout.gap)


def test_patch_embedding_is_E_times_x(tiny_loaded, tiny_vit):
    view64 = to_uint8(square_resize(_photo(80, 64), 64))
    view160 = to_uint8(square_resize(_photo(200, 160), 160))
    for module, cfg, view in ((tiny_loaded.module, tiny_loaded.data_config, view64), (*tiny_vit, view160)):
        x = embedding_sequence.view_tensor(view, cfg, torch.device("cpu"))
        with torch.no_grad():
            conv = module.patch_embed.proj(x).flatten(2).transpose(1, 2)[0]  # (L, D) from the convolution
        for i in (0, 5, conv.shape[0] - 1):
            assert np.allclose(embedding_sequence.patch_embedding(module, cfg, view, i), conv[i].numpy(), atol=1e-5)
        e, b = embedding_sequence.projection_matrix(module)
        assert e.shape == (conv.shape[1], 16 * 16 * 3) and b.shape == (conv.shape[1],)


# ----------------------------------------------------------------------------- position embeddings


def test_similarity_of_a_patch_with_itself_is_one(tiny_loaded, tiny_vit):
    for module in (tiny_loaded.module, tiny_vit[0]):
        pos = embedding_sequence.position_embeddings(module)
        sims = core_pos_embed.similarity_grid(pos.patches, pos.grid)
        gh, gw = pos.grid
        diag = sims.reshape(gh * gw, gh * gw).diagonal()
        assert np.allclose(diag, 1.0, atol=1e-6)
        assert np.allclose(sims.reshape(gh * gw, -1), sims.reshape(gh * gw, -1).T, atol=1e-6)
        assert sims.min() >= -1.0 and sims.max() <= 1.0
        m = core_pos_embed.similarity_map(pos.patches, pos.grid, 1, 2)
        assert m[1, 2] == pytest.approx(1.0, abs=1e-6)
        assert np.allclose(m, sims[1, 2], atol=1e-6)


def test_sincos_maps_fall_off_with_distance(tiny_loaded):
    pos = embedding_sequence.position_embeddings(tiny_loaded.module)
    m = core_pos_embed.similarity_map(pos.patches, pos.grid, 0, 0)
    assert m[0, 0] > m[0, 1] > m[0, 3] and m[0, 0] > m[1, 0] > m[3, 0]


def test_prefix_tokens_are_counted(tiny_loaded, tiny_vit):
    assert embedding_sequence.position_embeddings(tiny_loaded.module).num_prefix == 1
    pos = embedding_sequence.position_embeddings(tiny_vit[0])
    assert pos.num_prefix == 1 and pos.grid == (10, 10) and pos.patches.shape == (100, 64)


def test_interpolated_embeddings_at_the_original_size_equal_the_originals(tiny_loaded, tiny_vit):
    for module in (tiny_loaded.module, tiny_vit[0]):
        pos = embedding_sequence.position_embeddings(module)
        same = core_pos_embed.interpolate_pos_embed(pos, pos.grid)
        assert torch.equal(same.full, pos.full)
        bigger = core_pos_embed.interpolate_pos_embed(pos, (pos.grid[0] + 3, pos.grid[1] + 5))  # non-square is fine
        assert bigger.full.shape == (1, pos.num_prefix + (pos.grid[0] + 3) * (pos.grid[1] + 5), pos.full.shape[2])
        assert torch.equal(bigger.full[:, : pos.num_prefix], pos.full[:, : pos.num_prefix])
        # a ViT at a new size: timm's own dynamic-size path resamples exactly the same way
        back = core_pos_embed.interpolate_pos_embed(bigger, pos.grid)
        assert back.full.shape == pos.full.shape


def test_interpolation_matches_timm_dynamic_img_size(tiny_vit):
    import timm

    module, cfg = tiny_vit
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        dyn = timm.create_model("test_vit", pretrained=False, dynamic_img_size=True).eval()
    dyn.load_state_dict(module.state_dict())
    view = to_uint8(square_resize(_photo(300, 240), 224))  # 14x14 grid instead of 10x10
    x = embedding_sequence.view_tensor(view, cfg, torch.device("cpu"))
    pos = core_pos_embed.interpolate_pos_embed(embedding_sequence.position_embeddings(module), (14, 14))
    with torch.no_grad():
        ours = embedding_sequence.encode(module, embedding_sequence.patch_tokens(module, x), pos)
        theirs = dyn.forward_features(x)
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_sincos_recomputed_at_the_same_grid_is_the_original(tiny_loaded):
    pos = embedding_sequence.position_embeddings(tiny_loaded.module)
    assert torch.allclose(core_pos_embed.sincos_at(pos, pos.grid).full, pos.full, atol=1e-6)


# ----------------------------------------------------------------------------- running the encoder


def test_encode_matches_the_models_own_forward(tiny_loaded, tiny_vit):
    mae = tiny_loaded.module
    x = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        theirs = mae.encode_tokens(mae.embed_patches(x), torch.arange(16))
    ours = embedding_sequence.encode(mae, embedding_sequence.patch_tokens(mae, x), embedding_sequence.position_embeddings(mae))
    assert torch.allclose(ours, theirs, atol=1e-6)
    vit, _ = tiny_vit
    x = torch.randn(1, 3, 160, 160, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        theirs = vit.forward_features(x)
    assert torch.allclose(embedding_sequence.encode(vit, embedding_sequence.patch_tokens(vit, x), embedding_sequence.position_embeddings(vit)), theirs, atol=1e-6)


@pytest.mark.parametrize("which", ["mae", "vit"])
def test_shuffle_equivariance(which, tiny_loaded, tiny_vit):
    if which == "mae":
        module, cfg, side = tiny_loaded.module, tiny_loaded.data_config, 64
    else:
        module, cfg = tiny_vit
        side = 160
    view = to_uint8(square_resize(_photo(side + 30, side, seed=3), side))
    res = embedding_shuffle.shuffle_demo(module, cfg, view, seed=7)
    length = (side // 16) ** 2
    assert sorted(res.perm.tolist()) == list(range(length))
    assert np.array_equal(res.perm[res.where], np.arange(length))
    assert (res.perm != np.arange(length)).any()
    # without position embeddings: every patch's output is the same wherever it sits
    assert res.max_diff_without < 1e-5 and res.prefix_diff_without < 1e-5
    # with them: the outputs change, clearly above float rounding
    assert res.max_diff_with > 1e-3
    assert res.max_diff_with > 100 * max(res.max_diff_without, 1e-8)
    # deterministic in the seed, independent of the global RNG
    torch.manual_seed(123)
    again = embedding_shuffle.shuffle_demo(module, cfg, view, seed=7)
    assert np.array_equal(again.perm, res.perm)


def test_identity_permutation_changes_nothing(tiny_loaded):
    view = to_uint8(square_resize(_photo(64, 64), 64))
    res = embedding_shuffle.shuffle_demo(tiny_loaded.module, tiny_loaded.data_config, view, perm=torch.arange(16))
    assert res.max_diff_with == 0.0 and res.max_diff_without == 0.0
    with pytest.raises(ValueError, match="permutation"):
        embedding_shuffle.shuffle_demo(tiny_loaded.module, tiny_loaded.data_config, view, perm=torch.zeros(16, dtype=torch.long))


def test_shuffled_view_moves_patches_as_the_permutation_says():
    view = to_uint8(square_resize(_photo(64, 64, seed=5), 64))
    perm = embedding_shuffle.random_permutation(16, 3).numpy()
    out = shuffled_view(view, 16, perm)
    assert np.array_equal(core_patches.token_patches(out, 16), core_patches.token_patches(view, 16)[perm])
    assert np.array_equal(shuffled_view(view, 16, np.arange(16)), view)


# ----------------------------------------------------------------------------- another resolution


def test_resized_mae_reconstructs_at_another_resolution(tiny_loaded, photo_path):
    model = tiny_loaded
    before = tiny_loaded.module.pos_embed.clone()
    for method in ("sincos", "bicubic"):
        bigger = embedding_resolution.resized_model(model, 96, method)
        assert bigger.module.config.img_size == 96 and bigger.module.pos_embed.shape == (1, 37, 32)
        shared = bigger.module.blocks[0].attn.qkv.weight, tiny_loaded.module.blocks[0].attn.qkv.weight
        assert shared[0].data_ptr() == shared[1].data_ptr()  # weights shared, not copied
        r = reconstruct(bigger, photo_path, 0.75, 0, "random")
        assert r.original.shape == (96, 96, 3) and r.mask.shape == (6, 6) and np.isfinite(r.masked_mse)
    assert torch.equal(tiny_loaded.module.pos_embed, before)  # the shared module is untouched
    same = embedding_resolution.resize_mae(tiny_loaded.module, 64, "bicubic")
    assert torch.equal(same.pos_embed, tiny_loaded.module.pos_embed)
    assert torch.equal(same.decoder_pos_embed, tiny_loaded.module.decoder_pos_embed)
    with pytest.raises(ValueError, match="multiple of the patch size"):
        embedding_resolution.resize_mae(tiny_loaded.module, 70)


def test_run_at_resolution(tiny_vit):
    module, cfg = tiny_vit
    model = _loaded(module, cfg)
    run = embedding_resolution.run_at_resolution(model, to_uint8(square_resize(_photo(300, 240), 224)))
    assert run.grid == (14, 14) and run.output_shape == (1, 197, 64)


# ----------------------------------------------------------------------------- models of the tab


def test_model_choices_and_keys():
    keys = [k for _, k in views_patches.model_choices()]
    assert "mae-tiny" in keys
    assert {"vit-base:random", "deit-small-distilled:random", "dino-small:random"} <= set(keys)
    assert not any(k.startswith("swin") for k in keys)
    with pytest.raises(ValueError, match="choose one of"):
        views_patches.load("swin-tiny")
    with pytest.raises(ValueError, match="choose one of"):
        views_patches.load("/etc/passwd")


def test_random_weights_model_is_seeded_and_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    m = models_loading.load_choice("deit-small-distilled:random")
    assert torch.equal(torch.random.get_rng_state(), state)
    assert m.random_init and not isinstance(m.module, MaskedAutoencoderViT) and m.grid == (14, 14)
    pos = embedding_sequence.position_embeddings(m.module)
    assert pos.num_prefix == 2  # class and distillation tokens
    assert models_loading.load_choice("deit-small-distilled:random").module is m.module  # built once, then shared
    # two prefix tokens with positions; a 112 px view (7x7 grid, positions resampled) keeps the test fast
    view = square_view(_photo(70, 50), 112)
    res = embedding_shuffle.shuffle_demo(m.module, m.data_config, view, seed=1)
    assert res.max_diff_without < 1e-5 and res.prefix_diff_without < 1e-5 and res.max_diff_with > 1e-3


def test_random_weights_depend_only_on_the_seed():
    a, b = _random_vit("test_vit", seed=0), _random_vit("test_vit", seed=0)
    assert torch.equal(a.pos_embed, b.pos_embed) and torch.equal(a.patch_embed.proj.weight, b.patch_embed.proj.weight)
    assert not torch.equal(a.pos_embed, _random_vit("test_vit", seed=1).pos_embed)


def test_real_mae_tiny_maps_are_sincos():
    m = models_loading.load_choice("mae-tiny")
    assert isinstance(m.module, MaskedAutoencoderViT) and not m.random_init and m.grid == (14, 14)
    pos = embedding_sequence.position_embeddings(m.module)
    # the embedded weights keep the fixed sin-cos table (stored in fp16)
    assert torch.allclose(core_pos_embed.sincos_at(pos, pos.grid).full.cpu(), pos.full.cpu(), atol=2e-3)


# ----------------------------------------------------------------------------- drawing and clicking


def test_overlay_layout_maps_clicks_back_to_patches():
    g, resized, _ = core_patches.grid_view(_photo(320, 200), 16, 224)
    img, layout = patch_grid_overlay(g, resized, selected=(2, 3))
    assert layout.scale == 2 and layout.side == 448 and layout.top == 0 and layout.left > 0
    assert img.shape[0] == 448 and img.shape[1] == 448 + 2 * layout.left
    assert layout.point(1, 10) is None  # in the cropped band
    fx, fy = layout.point(layout.left + 3 * 32 + 5, 2 * 32 + 5)
    assert core_patches.pixel_to_patch(fx, fy, g.grid, 1.0) == (2, 3)


def test_mosaic_layout_maps_clicks_back_to_tiles():
    sims = np.random.default_rng(0).uniform(-1, 1, (5, 5, 5, 5)).astype(np.float32)
    img, layout = similarity_mosaic(sims, selected=(1, 2), pad_top=26)
    assert img.dtype == np.uint8 and img.ndim == 3
    for r, c in ((0, 0), (1, 2), (4, 4)):
        y, x = layout.origin(r, c)
        assert layout.patch_at(x + 1, y + 1) == (r, c)
    assert layout.patch_at(2, 2) is None
