"""The image cache writer: exact PNGs, atomic files, and no re-encoding of pixels already written."""

import numpy as np
from PIL import Image

from vitviz.cache import LRU
from vitviz.ui.serve import contacts, image_cache


def _img(seed: int) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (32, 48, 3), dtype=np.uint8))


def test_png_outputs_are_lossless_and_memoised(tmp_path, monkeypatch):
    calls = []
    real = image_cache.encode
    monkeypatch.setattr(image_cache, "encode", lambda img, fmt: calls.append(fmt) or real(img, fmt))
    monkeypatch.setattr(image_cache, "_MEMO", LRU(8))
    a = image_cache.save_pil(_img(0), str(tmp_path), format="png")
    assert np.array_equal(np.asarray(Image.open(a)), np.asarray(_img(0)))
    again = image_cache.save_pil(_img(0), str(tmp_path), format="png")
    assert again == a and len(calls) == 1  # same pixels: the file is reused, nothing encoded
    b = image_cache.save_pil(_img(1), str(tmp_path), format="png")
    assert b != a and len(calls) == 2
    # A file removed by Gradio's cache cleaner is written again, not served missing.
    import os

    os.remove(a)
    c = image_cache.save_pil(_img(0), str(tmp_path), format="png")
    assert os.path.exists(c) and len(calls) == 3
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()]  # no staging files left behind


def test_memo_is_bounded_and_keyed_by_format():
    memo = LRU(2)
    for k in "abc":
        memo.put(k, k)
    assert memo.get("a") is None and memo.get("c") == "c"
    img = _img(2)
    assert image_cache.pixel_key(img, "/x", "image", "png") != image_cache.pixel_key(img, "/x", "image", "webp")
    img.info["comment"] = "metadata"
    assert image_cache.pixel_key(img, "/x", "image", "png") is None


def test_scrub_payload_encodes_every_cached_stop_once(tmp_path, monkeypatch, photo_path):
    """After a sweep, the panels of every stop are written and packed for the page; showing a
    stop from the server then encodes nothing."""
    import json
    from pathlib import Path

    from gradio.processing_utils import save_img_array_to_cache

    from vitviz import load_model
    from vitviz.views import mae as mae_view
    from vitviz.mae.sweep import STOPS, SweepCache, reconstruct_cached, sweep
    from vitviz.ui import mae_tab

    cache = SweepCache(4)
    monkeypatch.setattr("vitviz.mae.sweep.CACHE", cache)
    monkeypatch.setattr(mae_view, "reconstruct_cached",
                        lambda *a, **k: reconstruct_cached(*a, cache=cache, **k))
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))
    monkeypatch.setattr(image_cache, "_MEMO", LRU(4096))
    monkeypatch.setattr(mae_tab, "_PAYLOADS", LRU(256))
    contacts.install()
    model = load_model("mae-tiny")
    sweep(model, photo_path, 0, "random", cache=cache)
    payload = json.loads(mae_tab.scrub_payload(str(photo_path), "mae-tiny", 0, "random"))
    assert len(list(tmp_path.rglob("image.png"))) >= 3 * len(STOPS)
    assert sorted(payload["stops"]) == [f"{r:.2f}" for r in STOPS] and Path(payload["pack"]).is_file()
    calls = []
    monkeypatch.setattr(image_cache, "encode", lambda img, fmt: calls.append(fmt))
    r, hit = reconstruct_cached(model, photo_path, 0.4, 0, "random", cache=cache)
    assert hit
    p = mae_view.panels(r)
    for panel in (p.masked, p.reconstruction, p.pasted, p.error):
        assert save_img_array_to_cache(panel, cache_dir=str(tmp_path), format="png")
    assert calls == []
    # A second payload of the same sweep (the next visitor) does no work at all.
    looked_up = []
    monkeypatch.setattr(mae_view, "reconstruct_cached", lambda *a, **k: looked_up.append(a))
    assert json.loads(mae_tab.scrub_payload(str(photo_path), "mae-tiny", 0, "random")) == payload
    assert looked_up == []
