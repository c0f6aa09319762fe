"""Every odd file and bad parameter gets a result or a clear error; nothing crashes."""

import math

import numpy as np
import pytest

import vitviz
from vitviz import ImageError, load_image
from vitviz.mae.reconstruct import reconstruct
from tools.corpus import corpus

CORPUS = corpus()


@pytest.mark.parametrize("name,data,ok", CORPUS, ids=[c[0] for c in CORPUS])
def test_load_image_corpus(name, data, ok, tmp_path):
    path = tmp_path / name
    path.write_bytes(data)
    if ok:
        img = load_image(path)
        assert img.mode == "RGB" and min(img.size) >= 1
        assert load_image(data).size == img.size
    else:
        with pytest.raises(ImageError) as info:
            load_image(path)
        assert len(str(info.value)) > 10 and "Traceback" not in str(info.value)


def test_exif_rotation_applied():
    data = dict((n, d) for n, d, _ in CORPUS)["rotated_exif.jpg"]
    assert load_image(data).size == (64, 96)


def test_animated_gif_first_frame():
    data = dict((n, d) for n, d, _ in CORPUS)["animated.gif"]
    arr = np.asarray(load_image(data))
    assert not np.all(arr == [255, 0, 0])  # the first frame is the photo, not the red frame


def test_sixteen_bit_and_float_scaled():
    data = dict((n, d) for n, d, _ in CORPUS)
    deep = np.asarray(load_image(data["deep_I16.png"]))
    grey = np.asarray(load_image(data["grey_L.png"]))
    assert np.abs(deep.astype(int) - grey.astype(int)).max() <= 1
    flt = np.asarray(load_image(data["float_F.tiff"]))
    assert np.abs(flt.astype(int) - grey.astype(int)).max() <= 1


@pytest.mark.parametrize("name,data,ok", [c for c in CORPUS if c[2]], ids=[c[0] for c in CORPUS if c[2]])
def test_every_readable_file_reconstructs(name, data, ok, tiny_loaded):
    r = reconstruct(tiny_loaded, data, mask_ratio=0.5, seed=0)
    assert r.reconstruction.shape == (64, 64, 3)
    assert math.isfinite(r.masked_mse)


@pytest.mark.parametrize("kwargs,match", [
    (dict(mask_ratio=math.nan), "mask ratio"),
    (dict(mask_ratio=-0.1), "mask ratio"),
    (dict(mask_ratio=0.96), "mask ratio"),
    (dict(seed=-5), "seed"),
    (dict(seed=2**70), "seed"),
    (dict(pattern="spiral"), "pattern"),
    (dict(mask=np.zeros((5, 5), bool)), "4x4"),
])
def test_bad_parameters(tiny_loaded, photo_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        reconstruct(tiny_loaded, photo_path, **kwargs)


@pytest.mark.parametrize("name", ["https://example.com/x.pth", "hf-hub:timm/x", "no-such-model"])
def test_model_names_only_from_registry(name):
    with pytest.raises(ValueError, match="unknown model"):
        vitviz.load_model(name)


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd"])
def test_a_path_that_is_no_checkpoint_fails_with_a_sentence(name):
    # vitviz.load_model(PATH) opens your own checkpoint (issue 31); a file that is none is refused
    with pytest.raises(vitviz.ModelUnavailable, match="cannot read|holds|layout|not a"):
        vitviz.load_model(name)
