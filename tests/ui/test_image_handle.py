"""A new photo on the Attention tab is read, hashed, decoded and resized to the model's view once, however
many handlers ask for it by path (the view's cache key, the query view, the views beside it, the sliders);
a file rewritten in place is read again.

The counts are taken where any implementation must pass: reads of the upload's path (``Path.read_bytes``),
BLAKE2b hashes of its bytes, ``PIL.Image.open`` of its content, and resizes of the full-size photo.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vitviz.ui import attention_tab as at


def _photo(path: Path, size: tuple[int, int], seed: int) -> bytes:
    """Write a noise PNG of ``size`` (w, h) to ``path``; its bytes."""
    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(buf, format="PNG")
    path.write_bytes(buf.getvalue())
    return buf.getvalue()


class Counts:
    """Reads, hashes, decodes and full-size resizes of one upload (its path, its bytes, its size)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
        self.path, self.content, self.size = path, b"", (0, 0)
        self.reads = self.hashes = self.decodes = self.resizes = 0
        read_bytes, blake2b, image_open, resize = Path.read_bytes, hashlib.blake2b, Image.open, Image.Image.resize

        def counting_read(p: Path) -> bytes:
            if Path(p).resolve() == self.path.resolve():
                self.reads += 1
            return read_bytes(p)

        def counting_hash(data: bytes = b"", *args: object, **kwargs: object):  # noqa: ANN202 - as blake2b
            if isinstance(data, (bytes, bytearray, memoryview)) and bytes(data) == self.content:
                self.hashes += 1
            return blake2b(data, *args, **kwargs)

        def counting_open(fp: object, *args: object, **kwargs: object) -> Image.Image:
            if isinstance(fp, io.BytesIO) and fp.getvalue() == self.content or str(fp) == str(self.path):
                self.decodes += 1
            return image_open(fp, *args, **kwargs)

        def counting_resize(img: Image.Image, *args: object, **kwargs: object) -> Image.Image:
            if img.size == self.size:
                self.resizes += 1
            return resize(img, *args, **kwargs)

        monkeypatch.setattr(Path, "read_bytes", counting_read)
        monkeypatch.setattr(hashlib, "blake2b", counting_hash)
        monkeypatch.setattr(Image, "open", counting_open)
        monkeypatch.setattr(Image.Image, "resize", counting_resize)

    def upload(self, size: tuple[int, int], seed: int) -> None:
        """The photo's content becomes a new one of ``size``, written at the same path."""
        self.content, self.size = _photo(self.path, size, seed), size

    def totals(self) -> tuple[int, int, int, int]:
        return self.reads, self.hashes, self.decodes, self.resizes


def _controls(path: Path, **changes: object) -> at.Controls:
    base = dict(image=str(path), model="mae-tiny", part="encoder", mask_ratio=0.0, seed=0, layer=1, query="patch",
                row=7, col=7, mass=False, head_fusion="mean", discard_ratio=0.0)
    return at.Controls(**{**base, **changes})  # type: ignore[arg-type]


def test_attention_tab_reads_hashes_decodes_and_resizes_a_new_photo_once(tmp_path, monkeypatch):
    path = tmp_path / "upload.png"
    counts = Counts(monkeypatch, path)
    counts.upload((317, 229), seed=1)
    views = at.update_all(_controls(path))  # what the page runs for a new photo
    at.head_query(str(path), "mae-tiny", "encoder", 0.0, 0, 2, "patch", 7, 7, 0)  # the layer slider
    at.update_all(_controls(path, mask_ratio=0.5))  # the masking-ratio slider: a new capture, the same view
    at.rollout(str(path), "mae-tiny", "encoder", 0.0, 0, "max", 0.2)  # the discard slider
    assert counts.totals() == (1, 1, 1, 1)
    assert views.overlay.shape[2] == 3

    counts.upload((211, 307), seed=2)  # the same path rewritten: another photo, read again
    changed = at.update_all(_controls(path))
    assert counts.totals() == (2, 2, 2, 2)
    assert not np.array_equal(changed.overlay, views.overlay)


def test_a_rewritten_file_is_read_again_and_its_old_view_is_not_served(tmp_path):
    from vitviz.core.handle import file_digest
    from vitviz.core.images import image_size, square_view

    path = tmp_path / "photo.png"
    first = _photo(path, (64, 48), seed=3)
    a, size_a, digest_a = square_view(path, 32), image_size(path), file_digest(path)
    second = _photo(path, (50, 70), seed=4)
    assert first != second
    b, size_b, digest_b = square_view(path, 32), image_size(path), file_digest(path)
    assert (size_a, size_b) == ((64, 48), (50, 70)) and digest_a != digest_b
    assert not np.array_equal(a, b)
    assert np.array_equal(b, square_view(second, 32))  # the same content as bytes: the same view
    with pytest.raises(ValueError):  # the view is shared: nobody can change it for the next caller
        b += 1
