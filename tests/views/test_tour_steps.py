"""The guided tour's steps as data (:mod:`vitviz.views.tour`), without Gradio."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vitviz.views import tour

TOUR_TOML = Path(__file__).resolve().parents[2] / "vitviz" / "ui" / "helptext" / "tour.toml"


def test_the_apps_steps_parse_and_travel_as_json():
    steps = tour.parse_steps(TOUR_TOML.read_text(encoding="utf-8"))
    assert len(steps) >= 10 and all(isinstance(s.ready, tuple) and len(s.ready) == 2 for s in steps)
    assert any(s.photo is None for s in steps) and any(s.photo == tour.PHOTO for s in steps)
    walked = json.loads(tour.steps_json(steps))
    assert [w["title"] for w in walked] == [s.title for s in steps]
    assert tour.available(tuple(s for s in steps if not s.needs)) == tuple(s for s in steps if not s.needs)


def test_a_step_naming_a_missing_tab_is_refused_with_its_title():
    steps = tour.parse_steps('[[step]]\ntab = "nowhere"\ntitle = "Lost"\nnotice = "n"\noutput = "x"\n'
                             'ready = ["x", "y"]\nphoto = false\n')
    assert steps[0].photo is None and steps[0].controls == ()
    with pytest.raises(ValueError, match="tour step 1 \\('Lost'\\) opens tab 'nowhere'"):
        tour.check(steps, ("mae", "patches"))


def test_the_tour_and_live_panel_rooms_import_without_gradio():
    code = ("import sys; import vitviz.views.tour, vitviz.views.live_panels; "
            "print('gradio' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip().splitlines()[-1] == "False"
