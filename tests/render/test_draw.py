"""The one drawing toolkit (vitviz.render._draw): checks, cell expansion, outlines, panel rows, colour bars."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.core.patches import pixel_to_patch
from vitviz.render import _draw


def test_check_image_names_what_it_got():
    assert _draw.check_image(np.zeros((2, 3, 3), np.uint8)).shape == (2, 3, 3)
    for bad in (np.zeros((2, 3), np.uint8), np.zeros((2, 3, 4), np.uint8), np.zeros((2, 3, 3), np.float32)):
        with pytest.raises(ValueError, match="uint8"):
            _draw.check_image(bad)


@pytest.mark.parametrize("grid,size", [((14, 14), 448), ((4, 4), 64), ((7, 7), 100), ((3, 5), 90)])
def test_expand_draws_each_cell_where_a_click_finds_it(grid, size):
    cells = np.arange(grid[0] * grid[1]).reshape(grid)
    px = _draw.expand(cells, size)
    assert px.shape == (size, size)
    rng = np.random.default_rng(0)
    for x, y in rng.integers(0, size, (50, 2)):
        r, c = pixel_to_patch(x, y, grid, size)  # a click reports the pixel index
        assert px[y, x] == cells[r, c]  # drawing and clicking use the same mapping
    if size % grid[0] == 0 and grid[0] == grid[1]:
        assert np.array_equal(px, _draw.blocks(cells, size // grid[0]))


def test_outline_is_inside_the_box_and_clipped():
    img = np.zeros((20, 20, 3), np.uint8)
    out = _draw.outline(img, 5, 5, 6, 6, color=(255, 0, 0), thickness=2)
    red = out[..., 0] == 255
    assert red[5, 5:11].all() and red[10, 5:11].all() and red[5:11, 5].all() and not red[7:9, 7:9].any()
    assert not red[:5].any() and not red[11:].any() and not img.any()  # a copy, the input untouched
    edge = _draw.outline(img, 15, 15, 10, 10, thickness=1)  # partly outside: clipped, no error
    assert edge.shape == img.shape and edge[15, 15:].any()


def test_panel_rows_place_panels_with_titles():
    a, b = np.full((10, 20, 3), 50, np.uint8), np.full((30, 5, 3), 90, np.uint8)
    row = _draw.panel_row([("a", a), ("b", b)], gap=4, title_height=24)
    assert row.shape == (24 + 30, 20 + 4 + 5, 3)
    assert (row[24:34, :20] == 50).all() and (row[24:54, 24:29] == 90).all()
    same = _draw.label_row([("x", a), ("y", a)])
    assert same.shape == (22 + 10, 2 * 20 + 8, 3)
    with pytest.raises(ValueError):
        _draw.panel_row([])


def test_colormap_and_colorbar():
    c = _draw.colormap(np.array([0.0, 0.5, 1.0, np.nan]))
    assert c.shape == (4, 3) and np.allclose(c[0], _draw._VIRIDIS[0]) and np.allclose(c[2], _draw._VIRIDIS[-1])
    assert np.allclose(c[3], c[0])  # NaN maps to the bottom of the scale
    bar = _draw.colorbar(200, 0.0, 1.0, "cosine")
    assert bar.shape == (200, 56, 3) and bar.dtype == np.uint8
    assert not np.array_equal(bar[20, 8], bar[180, 8])  # a ramp, top differs from bottom


def test_text_never_draws_a_missing_glyph_box():
    """PIL's built-in font has no no-break space (nor "×", "→"): the export's "PSNR 16.2 dB" showed a box
    where the space was. A character the font lacks is drawn as its plain form."""
    band = np.full((24, 200, 3), 255, np.uint8)
    for size in (None, 11, 14):
        f = _draw.font(size)
        assert _draw.drawable("16.2\u00a0dB 3×3 → café", f) == "16.2 dB 3x3 -> cafe"
        assert _draw.drawable("±2% · ok", f) == "±2% · ok"  # glyphs the font has stay
    drawn = _draw.text(band, [(2, 2, "PSNR 16.2\u00a0dB")], 14, anchor="la", outlined=False, fill=(0, 0, 0))
    plain = _draw.text(band, [(2, 2, "PSNR 16.2 dB")], 14, anchor="la", outlined=False, fill=(0, 0, 0))
    assert np.array_equal(drawn, plain)
    titled = _draw.label_row([("3×3\u00a0px", np.zeros((8, 60, 3), np.uint8))])
    assert np.array_equal(titled, _draw.label_row([("3x3 px", np.zeros((8, 60, 3), np.uint8))]))
