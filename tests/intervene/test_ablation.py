"""Head and token ablation: nothing changed is the plain forward bit for bit; every head of a layer zeroed
is that layer without its attention branch; dropped tokens are tokens removed from the sequence; mean
ablation reads a cached mean over the example photos, never the photo itself."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vitviz
from vitviz.assets import example_images
from vitviz.core.images import model_input, square_view
from vitviz.intervene import ablation, means
from vitviz.intervene.ablation import ablate, rank_heads
from vitviz.intervene.hooks import Change, intervening, recording_inputs
from vitviz.intervene.subject import subject_of


def _plain_logits(model, view) -> np.ndarray:
    with torch.inference_mode():
        return model.module(model_input(view, model.data_config))[0].numpy()


@pytest.mark.parametrize("name", ["vit", "deit"])
def test_nothing_ablated_is_the_plain_forward_bit_for_bit(name, request, image):
    model = request.getfixturevalue(name)
    ab = ablate(model, image)
    assert np.array_equal(ab.after.logits, _plain_logits(model, image))
    assert np.array_equal(ab.before.logits, ab.after.logits)
    assert ab.effect() == 0.0 and ab.heads == () and ab.tokens == ()


def test_nothing_ablated_is_the_plain_reconstruction_bit_for_bit(mae, photo_path):
    ab = ablate(mae, photo_path)
    r = vitviz.reconstruct(mae, photo_path, mask_ratio=0.75, seed=0)
    assert np.array_equal(ab.after.reconstruction.reconstruction, r.reconstruction)
    assert ab.after.hidden_error == r.masked_mse == ab.before.hidden_error


def _without_attention_branch(module, x: torch.Tensor, layer: int) -> np.ndarray:
    """A timm ViT's logits with block ``layer``'s attention branch removed (its MLP branch kept)."""
    with torch.inference_mode():
        t = module.norm_pre(module._pos_embed(module.patch_embed(x)))
        for i, blk in enumerate(module.blocks):
            t = t + blk.drop_path2(blk.ls2(blk.mlp(blk.norm2(t)))) if i == layer else blk(t)
        return module.forward_head(module.norm(t))[0].numpy()


@pytest.mark.parametrize("name", ["vit", "deit"])
@pytest.mark.parametrize("layer", [0, 2])
def test_every_head_of_a_layer_zeroed_removes_its_attention_branch(name, layer, request, image):
    model = request.getfixturevalue(name)
    heads = [(layer, h) for h in range(model.module.blocks[0].attn.num_heads)]
    ab = ablate(model, image, heads=heads)
    expected = _without_attention_branch(model.module, model_input(image, model.data_config), layer)
    np.testing.assert_allclose(ab.after.logits, expected, rtol=0, atol=1e-5)
    assert not np.allclose(ab.after.logits, ab.before.logits, atol=1e-4)  # the branch mattered


def test_every_head_zeroed_in_the_mae_encoder_removes_its_attention_branch(mae, photo_path):
    subject = subject_of(mae)
    view = square_view(photo_path, mae.input_size)
    x = model_input(view, mae.data_config)
    module, ids, layer = mae.module, subject.ids(), 3
    change = Change(tuple((layer, h) for h in range(subject.num_heads)))
    with torch.inference_mode():
        with intervening(subject.blocks, change):
            got = module.encode_tokens(module.embed_patches(x), ids)
        t = module.embed_patches(x)
        t = torch.cat([module.cls_token + module.pos_embed[:, :1], t[:, ids]], dim=1)
        for i, blk in enumerate(module.blocks):
            t = t + blk.mlp(blk.norm2(t)) if i == layer else blk(t)
        expected = module.norm(t)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)


def test_one_head_zeroed_has_its_slice_zeroed_and_its_share_of_the_bias_removed(vit, image):
    subject = subject_of(vit)
    x = model_input(image, vit.data_config)
    attn = vit.module.blocks[1].attn
    seen: list[torch.Tensor] = []
    hook = attn.proj_drop.register_forward_pre_hook(lambda _m, inp: seen.append(inp[0].clone()))
    try:
        with torch.inference_mode(), intervening(subject.blocks, Change(((1, 2),))):
            with recording_inputs(subject.blocks) as (heads, _):
                vit.module(x)
    finally:
        hook.remove()
    d = attn.head_dim
    z = heads[1][0]  # what attn.proj received (pre-hooks run in order: the change first)
    assert torch.count_nonzero(z[..., 2 * d:3 * d]) == 0 and torch.count_nonzero(z[..., :d]) > 0
    expected = torch.nn.functional.linear(z, attn.proj.weight, attn.proj.bias) - attn.proj.bias / attn.num_heads
    torch.testing.assert_close(seen[0], expected, rtol=1e-5, atol=1e-5)


def test_dropped_tokens_are_tokens_removed_from_the_sequence(vit, image):
    patches = [(0, 0), (3, 5), (13, 13)]
    ab = ablate(vit, image, tokens=patches)
    lay = ab.after.attention.layout
    idx = [lay.resolve(p) for p in patches]
    assert ab.tokens == tuple(sorted(idx)) and ab.token_names[0] == "patch (row 0, col 0)"
    assert np.all(ab.after.attention.attentions[:, :, :, idx] == 0)  # nobody reads them, in any block
    module = vit.module
    keep = [i for i in range(lay.num_tokens) if i not in idx]
    with torch.inference_mode():
        t = module.norm_pre(module._pos_embed(module.patch_embed(model_input(image, vit.data_config))))
        expected = module.forward_head(module.norm(module.blocks(t[:, keep])))[0].numpy()
    np.testing.assert_allclose(ab.after.logits, expected, rtol=0, atol=1e-5)


def test_named_tokens_and_errors(deit, image):
    ab = ablate(deit, image, tokens=["dist", "cls", 5])
    assert ab.tokens == (0, 1, 5) and ab.token_names[:2] == ("class token", "distillation token")
    with pytest.raises(ValueError, match="no register token|its prefix tokens: cls, dist"):
        ablate(deit, image, tokens=["reg0"])
    with pytest.raises(ValueError, match=r"layers are 0\.\.2 and heads 0\.\.2"):
        ablate(deit, image, heads=[(3, 0)])
    with pytest.raises(ValueError, match="choose one of zero, mean"):
        ablate(deit, image, mode="half")


def test_high_norm_tokens_are_the_ones_the_norms_view_marks(vit, image):
    ab = ablate(vit, image, tokens=["high-norm"])
    marked = ab.before.norms.outliers[1:].any(axis=0)
    assert ab.tokens == tuple(int(i) + 1 for i in np.flatnonzero(marked))


def test_mean_ablation_reads_a_cached_mean_over_the_example_photos_never_the_photo(vit, image, monkeypatch):
    photos_seen: list[tuple[str, ...]] = []
    real = means.compute_means

    def spy(model, mask, photos):
        photos_seen.append(photos)
        return real(model, mask, photos)

    monkeypatch.setattr(means, "compute_means", spy)
    means.CACHE.evict(lambda k, v: True)
    other = np.random.default_rng(8).integers(0, 256, (224, 224, 3), dtype=np.uint8)
    subject = subject_of(vit)
    got = []
    for view in (image, other):
        ref = means.reference_means(subject)
        with torch.inference_mode(), intervening(subject.blocks, Change(((2, 1),), mode="mean", means=ref)):
            with recording_inputs(subject.blocks) as (heads, _):
                vit.module(model_input(view, vit.data_config))
        got.append(heads[2][0][0])
    assert len(photos_seen) == 1 and photos_seen[0] == tuple(example_images()) and len(photos_seen[0]) >= 2
    d = vit.module.blocks[2].attn.head_dim
    cached = means.reference_means(subject).heads[2]
    for z in got:  # the head's slice is the cached mean, whatever the photo
        torch.testing.assert_close(z[:, d:2 * d], cached[:, d:2 * d], rtol=0, atol=0)
    assert not torch.equal(got[0][:, :d], got[1][:, :d])  # the other heads still see each photo
    ab = ablate(vit, image, heads=[(2, 1)], mode="mean")
    assert len(photos_seen) == 1 and ab.mode == "mean" and not np.array_equal(ab.after.logits, ab.before.logits)


def test_mean_ablation_of_a_token_holds_it_at_its_mean_at_every_block(vit, image):
    subject = subject_of(vit)
    ref = means.reference_means(subject)
    with torch.inference_mode(), intervening(subject.blocks, Change(tokens=(0, 7), mode="mean", means=ref)):
        with recording_inputs(subject.blocks) as (_, tokens):
            vit.module(model_input(image, vit.data_config))
    for i, t in enumerate(tokens):
        torch.testing.assert_close(t[0][0, [0, 7]], ref.tokens[i][[0, 7]], rtol=0, atol=0)


def test_hooks_are_removed_and_other_threads_untouched(vit, image):
    import threading

    subject = subject_of(vit)
    plain = _plain_logits(vit, image)
    other: list[np.ndarray] = []
    with intervening(subject.blocks, Change(((0, 0), (1, 1)), tokens=(3,))):
        t = threading.Thread(target=lambda: other.append(_plain_logits(vit, image)))
        t.start()
        t.join()
    assert np.array_equal(other[0], plain)
    assert np.array_equal(_plain_logits(vit, image), plain)
    for blk in vit.module.blocks:
        for mod in (blk, blk.attn, blk.attn.proj, blk.attn.proj_drop):
            assert not mod._forward_pre_hooks and not mod._forward_pre_hooks_with_kwargs


def test_mae_outcomes_and_head_ranking(mae, photo_path):
    ab = ablate(mae, photo_path, heads=[(7, 0), (7, 1), (7, 2)])
    assert ab.kind == "mae" and ab.after.hidden_error != ab.before.hidden_error
    assert ab.effect() == pytest.approx(ab.after.hidden_error - ab.before.hidden_error)
    steps: list[float] = []
    r = rank_heads(mae, photo_path, layers=7, progress=lambda f, _m: steps.append(f))
    assert [(row[0], row[1]) for row in r.rows] != [] and len(r.rows) == 3 and steps[-1] == 1.0
    assert [row[2] for row in r.rows] == sorted((row[2] for row in r.rows), reverse=True)
    layer, head, effect = r.rows[0]
    assert effect == pytest.approx(ablate(mae, photo_path, heads=[(layer, head)]).effect(), abs=1e-9)


def test_classifier_ranking_sorts_by_the_size_of_the_change(vit, image):
    r = rank_heads(vit, image, layers=[0, 2])
    assert len(r.rows) == 6 and {row[0] for row in r.rows} == {0, 2}
    sizes = [abs(row[2]) for row in r.rows]
    assert sizes == sorted(sizes, reverse=True)
    layer, head, effect = r.rows[0]
    ab = ablate(vit, image, heads=[(layer, head)])
    assert effect == pytest.approx(ab.effect(), abs=1e-9) and r.target == ab.top(1)[0][0]
    assert rank_heads(vit, image, layers=[0, 2]) is r  # cached


def test_backbone_outcome_is_the_class_token_feature(backbone, image):
    ab = ablate(backbone, image, heads=[(2, 0)])
    assert ab.kind == "backbone" and ab.before.logits is None and ab.top() == []
    a, b = ab.before.feature, ab.after.feature
    assert ab.effect() == pytest.approx(1 - a @ b / np.linalg.norm(a) / np.linalg.norm(b), abs=1e-6)
    assert "cosine distance" in ab.summary()


def test_cls_attention_and_rollout_change_with_the_ablation(vit, image):
    ab = ablate(vit, image, heads=[(0, h) for h in range(3)] + [(1, 0)])
    for o in (ab.before, ab.after):
        assert o.cls_attention().shape == (14, 14) and o.rollout().sum() == pytest.approx(1.0)
        assert o.norms.norms.shape == (4, 197)
    assert not np.allclose(ab.before.rollout(), ab.after.rollout())


def test_lab8_mammal_heads(lab8, photo_path):
    ab = ablate(lab8, photo_path, heads=[(11, 0)])
    assert ab.classes[ab.target()] == "mammal" and ab.top(1)[0][0] == "mammal"
    assert "mammal" in ab.summary()


def test_swin_is_refused_with_a_sentence(image):
    from vitviz.models.loading import load_model

    with pytest.raises(ValueError, match="cannot be ablated here"):
        ablate(load_model("swin-tiny", device="cpu", random_init=True), image)
