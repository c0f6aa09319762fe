"""The mae-tiny v2 recipe pieces: gradient loss, decoder growth, augmentation, Qt bundles."""

from __future__ import annotations

import dataclasses
import struct
import zlib

import pytest
import torch

from vitviz.models.mae import MAEConfig, MaskedAutoencoderViT
from vitviz.training.qt_resources import iter_rcc
from vitviz.training.recipe import augment, gradient_loss, grow_decoder, hidden_pixels, positional_head

SMALL = MAEConfig(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2,
                  decoder_embed_dim=32, decoder_depth=1, decoder_num_heads=2)


def test_gradient_loss_is_zero_for_the_target_and_counts_only_pairs_touching_hidden_pixels() -> None:
    g = torch.Generator().manual_seed(0)
    target = torch.rand(2, 3, 16, 16, generator=g)
    hidden = torch.zeros(2, 4, dtype=torch.bool)
    hidden[:, 0] = True
    hpx = hidden_pixels(hidden, 8, (2, 2))
    assert hpx.shape == (2, 1, 16, 16) and int(hpx.sum()) == 2 * 64
    assert float(gradient_loss(target, target, hpx)) == 0.0
    pred = target.clone()
    pred[:, :, 8:, 8:] += 5.0  # only a visible patch differs: pasted back, so no loss
    assert float(gradient_loss(pred, target, hpx)) == 0.0
    flat = target.clone()
    flat[:, :, :8, :8] = target[:, :, :8, :8].mean()  # a flat hidden tile costs something
    assert float(gradient_loss(flat, target, hpx)) > 0.0


def test_seam_only_gradient_loss_ignores_slopes_inside_a_patch() -> None:
    target = torch.zeros(1, 1, 16, 16)
    hidden = torch.ones(1, 4, dtype=torch.bool)
    hpx = hidden_pixels(hidden, 8, (2, 2))
    inside = target.clone()
    inside[..., 2:6, 2:6] = 1.0  # a bump well inside the top-left patch
    assert float(gradient_loss(inside, target, hpx, patch=8, inside_weight=0.0)) == 0.0
    assert float(gradient_loss(inside, target, hpx, patch=8, inside_weight=1.0)) > 0.0
    seam = target.clone()
    seam[..., :, :8] = 1.0  # a jump between the left and right patches
    # Only the 16 horizontal pairs across column 8 differ, by 1 each; weights: 16*15*2 pairs in all,
    # of which 16*1 (vertical seam) + 16*1 (horizontal seam) weigh 1 when inside_weight is 0.
    assert float(gradient_loss(seam, target, hpx, patch=8, inside_weight=0.0)) == pytest.approx(16 / 32)


def test_grown_decoder_computes_what_the_shallow_one_did() -> None:
    torch.manual_seed(0)
    shallow = MaskedAutoencoderViT(SMALL).eval()
    deep = MaskedAutoencoderViT(dataclasses.replace(SMALL, decoder_depth=3)).eval()
    assert grow_decoder(deep, shallow.state_dict()) == 2
    x = torch.randn(1, 3, 32, 32)
    ids = torch.tensor([[0, 5, 10]])
    with torch.inference_mode():
        assert torch.allclose(deep(x, ids), shallow(x, ids), atol=1e-5)


def test_grow_decoder_refuses_weights_of_another_architecture() -> None:
    other = MaskedAutoencoderViT(dataclasses.replace(SMALL, embed_dim=48)).state_dict()
    with pytest.raises(ValueError, match="do not fit"):
        grow_decoder(MaskedAutoencoderViT(SMALL), other)


def test_augment_keeps_range_and_shape() -> None:
    g = torch.Generator().manual_seed(1)
    batch = torch.randint(0, 256, (3, 40, 40, 3), dtype=torch.uint8, generator=g)
    out = augment(batch, 32, g, area_min=0.2, jitter=0.3)
    assert out.shape == (3, 3, 32, 32)
    assert float(out.min()) >= 0.0 and float(out.max()) <= 1.0


def _rcc(files: dict[str, bytes], compress: set[str]) -> bytes:
    """A version-2 Qt resource bundle with one folder level (root -> files)."""
    names = b""
    name_off = {}
    for n in files:
        name_off[n] = len(names)
        names += struct.pack(">HI", len(n), 0) + n.encode("utf-16-be")
    data = b""
    data_off = {}
    for n, c in files.items():
        payload = struct.pack(">I", len(c)) + zlib.compress(c) if n in compress else c
        data_off[n] = len(data)
        data += struct.pack(">I", len(payload)) + payload
    tree = struct.pack(">IHII", 0, 2, len(files), 1) + b"\0" * 8
    for n in files:
        tree += struct.pack(">IHHHI", name_off[n], 1 if n in compress else 0, 0, 0, data_off[n]) + b"\0" * 8
    header = 20
    return (b"qres" + struct.pack(">IIII", 2, header, header + len(tree), header + len(tree) + len(data))
            + tree + data + names)


def test_iter_rcc_reads_plain_and_zlib_files() -> None:
    files = {"a.webp": b"plain bytes", "b.png": b"zz" * 100}
    assert dict(iter_rcc(_rcc(files, {"b.png"}))) == {"/a.webp": files["a.webp"], "/b.png": files["b.png"]}
    with pytest.raises(ValueError, match="qres"):
        list(iter_rcc(b"not a bundle"))


def test_positional_head_attends_by_distance_on_a_flat_image() -> None:
    """On an image with one colour everywhere, tokens differ only by position: the head's
    attention from a patch must fall as the grid distance grows (it is local)."""
    from vitviz.explain.capture import capture_blocks
    from vitviz.models.registry import MAE_TINY_CONFIG

    model = MaskedAutoencoderViT(MAE_TINY_CONFIG).eval()
    positional_head(model, 0, 1, 2.0)
    gh, gw = MAE_TINY_CONFIG.grid
    imgs = torch.full((1, 3, MAE_TINY_CONFIG.img_size, MAE_TINY_CONFIG.img_size), 0.3)
    ids_keep = torch.arange(gh * gw)[None]
    attn, _ = capture_blocks(model.blocks[:1], lambda: model.forward_encoder(imgs, ids_keep))
    row = attn[0, 0, 1, 1 + 7 * gw + 7, 1:].view(gh, gw)  # head 1, from patch (7, 7)
    ys, xs = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    dist = ((ys - 7) ** 2 + (xs - 7) ** 2).float().sqrt()
    near, far = row[dist <= 1.5].mean(), row[dist >= 5].mean()
    assert row.argmax() == 7 * gw + 7
    assert near > 4 * far
    qkv = model.blocks[0].attn.qkv.weight
    d, hd = qkv.shape[1], qkv.shape[1] // model.blocks[0].attn.num_heads
    assert torch.equal(qkv[hd : 2 * hd], qkv[d + hd : d + 2 * hd])  # queries and keys read the same rows
