"""The server's side of painting the MAE mask (:mod:`vitviz.views.mae_paint`), without Gradio."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vitviz.assets import example_images
from vitviz.views import mae_paint as mp
from vitviz.views.common import NoImage

CONTROLS = ("mae-tiny", 0.75, 0, "random")


def test_the_pages_request_is_a_tick_or_else_a_stroke():
    assert mp.request_kind('{"kind": "tick", "n": 3}') == "tick"
    for other in ('{"kind": "stroke"}', "", None, "not json", "[1, 2]", '{"kind": 5}'):
        assert mp.request_kind(other) == "stroke", other


def test_a_tick_starts_from_the_slider_stop_and_an_untick_keeps_the_mask():
    photo = example_images()[0]
    stop = mp.stop_mask(*CONTROLS)
    ticked = mp.after_request('{"kind": "tick"}', None, None, photo, *CONTROLS, paint=True)
    assert ticked.paint and np.array_equal(np.asarray(ticked.painted), stop)
    kept = [[True, False], [False, False]]
    assert mp.after_request('{"kind": "tick"}', None, kept, photo, *CONTROLS, paint=False) == mp.Stroke(kept, False)
    assert mp.after_request('{"kind": "tick"}', None, kept, None, *CONTROLS, paint=True) == mp.Stroke(kept, True)


def test_a_stroke_outside_paint_mode_paints_on_the_stop_on_screen():
    photo = example_images()[0]
    points = [[0.02, 0.02], [0.5, 0.5]]
    done = mp.after_request('{"kind": "stroke"}', json.dumps({"points": points}), None, photo, *CONTROLS, paint=False)
    assert done.paint
    assert np.array_equal(np.asarray(done.painted), mp.paint_stroke(mp.stop_mask(*CONTROLS), points))
    same = mp.after_request(None, "not json", None, photo, *CONTROLS, paint=False)
    assert np.array_equal(np.asarray(same.painted), mp.stop_mask(*CONTROLS))  # a malformed stroke paints nothing
    with pytest.raises(NoImage):
        mp.after_request(None, json.dumps({"points": points}), None, None, *CONTROLS, paint=False)
