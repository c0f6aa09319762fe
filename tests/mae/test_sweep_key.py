"""The MAE sweep's cache key names the weights, not only the model's name: a random-weights call was served the
trained model's pixels, and a checkpoint rewritten on disk kept showing the old reconstructions."""

from __future__ import annotations

import argparse
import os

import numpy as np
import pytest
import torch

import vitviz
from vitviz.core.images import synthetic_image
from vitviz.mae.sweep import SweepCache, image_key, reconstruct_cached
from vitviz.models import loading

from ..models.local_fixtures import mae_state_dict


pytestmark = pytest.mark.usefixtures("no_own_models")


def test_random_weights_are_never_served_the_trained_models_pixels():
    cache = SweepCache(8)
    image = synthetic_image(224)
    trained = vitviz.load_model("mae-tiny")
    random = vitviz.load_model("mae-tiny", random_init=True)
    first, hit = reconstruct_cached(trained, image, 0.75, cache=cache)
    assert not hit
    second, hit = reconstruct_cached(random, image, 0.75, cache=cache)
    assert not hit
    alone = vitviz.reconstruct(random, image, mask_ratio=0.75, seed=0)
    assert np.abs(second.reconstruction.astype(int) - alone.reconstruction.astype(int)).max() <= 1
    assert not np.array_equal(first.reconstruction, second.reconstruction)


def _write(path, seed: int) -> None:  # noqa: ANN001
    sd = mae_state_dict(seed, d=64, depth=2, patch=8, grid=8, dd=32, ddepth=1)
    args = argparse.Namespace(model="mae_vit_mine_patch8", input_size=64, mask_ratio=0.75, norm_pix_loss=False)
    torch.save({"model": sd, "args": args}, path)


def test_a_checkpoint_rewritten_on_disk_gives_new_reconstructions(tmp_path):
    path = tmp_path / "checkpoint.pth"
    image = synthetic_image(64)
    cache = SweepCache(8)
    _write(path, 1)
    before, _ = reconstruct_cached(loading.open_model(path), image, 0.5, cache=cache)
    _write(path, 2)  # the same architecture, other weights (as after more training)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a later time, whatever the clock's grain
    model = loading.open_model(path)
    after, hit = reconstruct_cached(model, image, 0.5, cache=cache)
    assert not hit
    alone = vitviz.reconstruct(model, image, mask_ratio=0.5, seed=0)
    assert np.abs(after.reconstruction.astype(int) - alone.reconstruction.astype(int)).max() <= 1
    assert not np.array_equal(before.reconstruction, after.reconstruction)


def test_the_key_holds_the_weights_fingerprint_and_the_same_weights_share_it():
    from vitviz.mae.sweep import weights_fingerprint

    trained = vitviz.load_model("mae-tiny")
    again = vitviz.load_model("mae-tiny", kernels=trained.kernels)
    assert weights_fingerprint(trained) == weights_fingerprint(again)
    assert weights_fingerprint(trained) != weights_fingerprint(vitviz.load_model("mae-tiny", random_init=True))
    pixels = np.zeros((224, 224, 3), np.uint8)
    assert weights_fingerprint(trained) in image_key(trained, pixels, 0, "random")
