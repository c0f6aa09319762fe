import io

import numpy as np
import pytest
from PIL import Image

from vitviz import ImageError, load_image
from vitviz.core.images import square_resize


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def test_sources_agree(photo_path):
    a = load_image(photo_path)
    b = load_image(photo_path.read_bytes())
    c = load_image(Image.open(photo_path))
    d = load_image(np.asarray(a))
    assert a.mode == "RGB"
    for other in (b, c, d):
        assert np.array_equal(np.asarray(a), np.asarray(other))


def test_rgba_composited_on_grey():
    img = Image.new("RGBA", (4, 4), (255, 0, 0, 0))
    out = np.asarray(load_image(_png(img)))
    assert np.all(out == 128)


@pytest.mark.parametrize("data", [b"", b"not an image at all", b"PK\x03\x04zipfile"])
def test_garbage_gives_image_error(data):
    with pytest.raises(ImageError):
        load_image(data)


def test_truncated_png_gives_image_error(photo_path):
    data = _png(Image.open(photo_path))
    with pytest.raises(ImageError, match="truncated|corrupt"):
        load_image(data[: len(data) // 2])


def test_missing_path():
    with pytest.raises(ImageError, match="no readable file"):
        load_image("/nonexistent/cat.png")


def test_tiny_image_upscaled():
    out = square_resize(load_image(_png(Image.new("RGB", (1, 1), (10, 200, 30)))), 224)
    assert out.size == (224, 224)
    assert np.all(np.asarray(out) == [10, 200, 30])


def test_square_resize_centre_crops_shorter_side():
    img = Image.new("RGB", (400, 200))
    img.paste((255, 0, 0), (0, 0, 100, 200))  # left quarter red: cropped away
    out = np.asarray(square_resize(img, 100))
    assert out.shape == (100, 100, 3)
    assert out[:, 2:-2].max() < 10


def test_one_decode_per_content_whatever_the_path(photo_path, tmp_path, monkeypatch):
    """Issue 27 item 5: the image's content is its key, so a copy under another path (a second
    upload of the same photo) is not decoded again, and a rewritten file is."""
    from vitviz.core import decode, handle

    calls = []
    real = decode.to_rgb
    monkeypatch.setattr(decode, "to_rgb", lambda im: calls.append(1) or real(im))
    handle._DECODED.clear()
    handle._IDENTITY.clear()
    copy = tmp_path / "same.jpg"
    copy.write_bytes(photo_path.read_bytes())
    a, b = load_image(photo_path), load_image(copy)
    assert len(calls) == 1 and np.array_equal(np.asarray(a), np.asarray(b))
    assert handle.file_digest(copy) == handle.file_digest(photo_path) == handle.bytes_digest(copy.read_bytes())
    copy.write_bytes(_png(Image.new("RGB", (5, 5), (1, 2, 3))))
    assert np.asarray(load_image(copy))[0, 0].tolist() == [1, 2, 3] and len(calls) == 2


def test_pixels_digest_depends_on_content_shape_and_dtype():
    from vitviz.core.images import pixels_digest

    a = np.zeros((4, 4, 3), dtype=np.uint8)
    assert pixels_digest(a) == pixels_digest(a.copy())
    b = a.copy()
    b[0, 0, 0] = 1
    assert len({pixels_digest(a), pixels_digest(b), pixels_digest(a.reshape(4, 12)),
                pixels_digest(a.astype(np.int8))}) == 4
