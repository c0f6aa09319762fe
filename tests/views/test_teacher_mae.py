"""Issue 15 items 3, 12, 13 as data: paint strokes, ratio 0, exports that show what the screen shows."""

from __future__ import annotations

import json

import numpy as np

from vitviz.views import mae as mv
from vitviz.views import mae_paint


def _centre(i: int, j: int, n: int = 14) -> tuple[float, float]:
    return (j + 0.5) / n, (i + 0.5) / n


def test_paint_stroke_hides_every_patch_crossed_and_the_first_patch_decides():
    mask = np.zeros((14, 14), dtype=bool)
    row = [_centre(3, j) for j in range(2, 9)]
    out = mae_paint.paint_stroke(mask, row)
    assert out[3, 2:9].all() and out.sum() == 7
    assert not mask.any()  # a new array
    back = mae_paint.paint_stroke(out, row[::2])  # starts on a hidden patch: shows what it crosses
    assert back.sum() == 3 and not back[3, 2] and back[3, 3]
    assert mae_paint.paint_stroke(out, []).sum() == 7
    assert mae_paint.paint_stroke(out, [(float("nan"), 0.5), ("x", 1), (2.0, 0.5), (0.5,)]).sum() == 7
    full = mae_paint.paint_stroke(mask, [_centre(i, j) for i in range(14) for j in range(14)])
    assert full.sum() == 195  # one patch always stays visible
    assert "146 of 196" in mae_paint.painted_label(np.arange(196).reshape(14, 14) < 146)


def test_painting_shows_the_mask_on_the_original(tiny_loaded, photo_path):
    from vitviz.mae.reconstruct import reconstruct

    r = reconstruct(tiny_loaded, str(photo_path), 0.5, 0, "random")
    plain, painted = mv.panels(r).original, mv.panels(r, painting=True).original
    i, j = np.argwhere(r.mask)[0]
    k, m = np.argwhere(~r.mask)[0]
    p = r.patch_size
    assert painted[i * p + 4: (i + 1) * p - 4, j * p + 4: (j + 1) * p - 4].mean() < \
        plain[i * p + 4: (i + 1) * p - 4, j * p + 4: (j + 1) * p - 4].mean()
    assert np.array_equal(painted[k * p + 2: (k + 1) * p - 2, m * p + 2: (m + 1) * p - 2],
                          plain[k * p + 2: (k + 1) * p - 2, m * p + 2: (m + 1) * p - 2])


def test_nothing_hidden_at_ratio_zero(tiny_loaded, photo_path):
    from vitviz.mae.reconstruct import reconstruct

    r = reconstruct(tiny_loaded, str(photo_path), 0.0, 0, "random")
    text = mv.metrics_markdown(mv.metrics(tiny_loaded, r))
    assert "nothing is hidden" in text and "fewer encoder FLOPs" not in text and "PSNR" not in text
    err = mv.panels(r).error
    assert err.std() > 0  # words on the panel, not a flat grey square with a 0..1 colour bar


def test_export_shows_what_the_screen_shows(tiny_loaded, photo_path):
    from vitviz.mae.reconstruct import reconstruct

    r = reconstruct(tiny_loaded, str(photo_path), 0.75, 0, "random")
    m = mv.metrics(tiny_loaded, r)
    p = mv.panels(r)
    bare = mv.export_png(r)
    png = mv.export_png(r, metrics=[mv.metrics_text(m)])
    assert bare.shape[1] >= 4 * r.original.shape[1] + p.error.shape[1]  # the error colour bar is kept
    assert png.shape[0] > bare.shape[0] and png.shape[1] == bare.shape[1]  # a metrics band under the panels
    assert "**" not in mv.metrics_text(m) and "hidden-patch MSE" in mv.metrics_text(m)
    controls = {"model": "mae-tiny", "compare": None, "mask_ratio": 0.75, "seed": 0, "pattern": "random",
                "painted": False}
    text = mv.export_json(mv.export_record("chelsea.jpg", controls, r.mask, [m]))
    data = json.loads(text)
    assert data["image"] == "chelsea.jpg" and data["controls"] == controls
    rows = data["mask"]["rows"]
    assert len(rows) == r.mask.shape[0] and all(set(s) <= {"0", "1"} and len(s) == r.mask.shape[1] for s in rows)
    assert sum(s.count("1") for s in rows) == int(r.mask.sum()) == data["mask"]["hidden"]
    assert len(text.splitlines()) < 80  # a person can read it (the mask was one number per line)


def test_export_writes_the_psnr_unit_as_the_screen_does(tiny_loaded, photo_path):
    """The metrics keep "dB" beside its number with a no-break space; the exported PNG draws it as a space
    (the export font has no glyph for it: "16.2☐dB")."""
    from vitviz.mae.reconstruct import reconstruct

    r = reconstruct(tiny_loaded, str(photo_path), 0.75, 0, "random")
    line = mv.metrics_text(mv.metrics(tiny_loaded, r))
    assert "\u00a0dB" in line
    assert np.array_equal(mv.export_png(r, metrics=[line]), mv.export_png(r, metrics=[line.replace("\u00a0", " ")]))


def test_a_painted_mask_sent_by_the_page_is_checked():
    """The painted mask is a component the page writes (any visitor can send anything): rows of true/false values
    or a clear message; off while not painting."""
    import pytest

    assert mae_paint.painted_mask(False, "anything") is None and mae_paint.painted_mask(True, None) is None
    good = mae_paint.painted_mask(True, [[True, False], [False, False]])
    assert good.dtype == bool and good.shape == (2, 2)
    for bad in ("abc", [[True], [True, False]], [1, 0], {"a": 1}, [["x", "y"]], []):
        with pytest.raises(ValueError, match="rows of true/false"):
            mae_paint.painted_mask(True, bad)
