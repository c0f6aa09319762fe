import numpy as np
import torch

from vitviz.core.masking import mask_to_ids, random_mask
from vitviz.models.mae import MAEConfig, MaskedAutoencoderViT
from vitviz.core.pos_embed import sincos_pos_embed

OFFICIAL_TOP_LEVEL = {
    "cls_token", "pos_embed", "mask_token", "decoder_pos_embed", "patch_embed.proj.weight", "patch_embed.proj.bias",
    "norm.weight", "norm.bias", "decoder_embed.weight", "decoder_embed.bias", "decoder_norm.weight",
    "decoder_norm.bias", "decoder_pred.weight", "decoder_pred.bias",
}
BLOCK_SUFFIXES = {
    f"{m}.{w}" for m in ("norm1", "attn.qkv", "attn.proj", "norm2", "mlp.fc1", "mlp.fc2") for w in ("weight", "bias")
}


def test_state_dict_uses_official_key_names():
    cfg = MAEConfig()  # ViT-B/16 with the 512x8 decoder
    keys = set(MaskedAutoencoderViT(cfg).state_dict())
    expected = set(OFFICIAL_TOP_LEVEL)
    expected |= {f"blocks.{i}.{s}" for i in range(12) for s in BLOCK_SUFFIXES}
    expected |= {f"decoder_blocks.{j}.{s}" for j in range(8) for s in BLOCK_SUFFIXES}
    assert keys == expected


def test_encoder_sees_only_visible_tokens(tiny_config):
    model = MaskedAutoencoderViT(tiny_config).eval()
    mask = random_mask(tiny_config.grid, 0.75, seed=0)
    ids = mask_to_ids(mask)
    seen = []
    handles = [b.register_forward_pre_hook(lambda m, a: seen.append(a[0].shape)) for b in model.blocks]
    dec_seen = []
    handles += [b.register_forward_pre_hook(lambda m, a: dec_seen.append(a[0].shape)) for b in model.decoder_blocks]
    with torch.inference_mode():
        pred = model(torch.randn(1, 3, 64, 64), ids.unsqueeze(0))
    for h in handles:
        h.remove()
    assert all(s[1] == 1 + ids.numel() for s in seen) and len(seen) == tiny_config.depth
    assert all(s[1] == 1 + tiny_config.num_patches for s in dec_seen)
    assert pred.shape == (1, tiny_config.num_patches, 16 * 16 * 3)


def test_encoder_output_independent_of_hidden_pixels(tiny_config):
    """Changing hidden pixels must not change anything the encoder produces."""
    model = MaskedAutoencoderViT(tiny_config).eval()
    mask = random_mask(tiny_config.grid, 0.5, seed=1)
    ids = mask_to_ids(mask).unsqueeze(0)
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    y = x.clone()
    hidden_px = mask.repeat_interleave(16, 0).repeat_interleave(16, 1)
    y[:, :, hidden_px] = 5.0
    with torch.inference_mode():
        assert torch.equal(model.forward_encoder(x, ids), model.forward_encoder(y, ids))


def test_sincos_matches_reference_layout():
    emb = sincos_pos_embed(8, (2, 3), cls_token=True)
    assert emb.shape == (7, 8)
    assert np.all(emb[0] == 0)
    # first half encodes the column (w), second half the row (h), as in the MAE reference
    assert np.allclose(emb[1 + 1, :4], [np.sin(1), np.sin(1 / 100), np.cos(1), np.cos(1 / 100)], atol=1e-6)
    assert np.allclose(emb[1 + 3, 4:], [np.sin(1), np.sin(1 / 100), np.cos(1), np.cos(1 / 100)], atol=1e-6)
