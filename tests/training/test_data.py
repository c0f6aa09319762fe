"""Gathering helpers: the held-out leak check, composites and the atomic crop file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from vitviz.training.composite import composite_crops
from vitviz.training.data import Photo, heldout_leaks, save_atomic


def _photo(path: Path, array: np.ndarray) -> Photo:
    Image.fromarray(array).save(path)
    return Photo(str(path), "pkg", "1", path.name, "CC0", array.shape[1], array.shape[0])


def test_heldout_leaks_finds_copies_and_mirrors_but_not_other_photos(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    held = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    other = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    h = _photo(tmp_path / "held.png", held)
    copy = _photo(tmp_path / "copy.png", held.copy())
    mirror = _photo(tmp_path / "mirror.png", held[:, ::-1].copy())
    unrelated = _photo(tmp_path / "other.png", other)
    assert heldout_leaks([unrelated], [h]) == []
    assert sorted(t for _, t in heldout_leaks([copy, unrelated, mirror], [h])) == ["copy.png", "mirror.png"]


def test_composites_are_seeded_uint8_squares(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    bg = tmp_path / "bg.png"
    Image.fromarray(rng.integers(0, 256, (80, 120, 3), dtype=np.uint8)).save(bg)
    stamp = np.zeros((40, 30, 4), dtype=np.uint8)
    stamp[..., 0] = 255
    stamp[5:35, 5:25, 3] = 255  # an opaque red block with a transparent frame
    st = tmp_path / "stamp.png"
    Image.fromarray(stamp, "RGBA").save(st)
    a = composite_crops([bg], [st], 3, 32, seed=7)
    b = composite_crops([bg], [st], 3, 32, seed=7)
    assert a.shape == (3, 32, 32, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b)
    assert ((a[..., 0] == 255) & (a[..., 1] == 0) & (a[..., 2] == 0)).any()  # the stamp is on it
    assert composite_crops([], [st], 3, 32, seed=0).shape == (0, 32, 32, 3)


def test_save_atomic_replaces_the_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "crops.npy"
    save_atomic(target, np.zeros((2, 4, 4, 3), dtype=np.uint8))
    save_atomic(target, np.ones((3, 4, 4, 3), dtype=np.uint8))
    loaded = np.load(target)
    assert loaded.shape == (3, 4, 4, 3) and int(loaded.min()) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["crops.npy"]
