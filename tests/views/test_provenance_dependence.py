"""The provenance panel says how much its map depends on the photo, as measured (issue 33, item 18)."""

from __future__ import annotations

import numpy as np

from vitviz.assets import example_images
from vitviz.views import provenance as pv


def test_dependence_is_measured_on_the_other_example_photos_and_stated() -> None:
    ex = example_images()
    view = None
    for rc in [(7, 7), (7, 8), (6, 7), (5, 5), (3, 4), (9, 9)]:
        view = pv.patch_view(ex[0], "mae-tiny", 0.75, 0, "random", None, rc)
        if view.summary is not None:
            break
    assert view is not None and view.summary is not None
    dep = view.summary["image_dependence"]
    assert dep["photos"] == len(ex) - 1 == len(dep["visible"])  # the photo itself is skipped
    r = np.asarray(dep["r"])
    assert len(r) == len(ex) - 1 and np.all((r >= -1) & (r <= 1))
    assert f"r = {r.mean():.3f} on average" in view.text
    assert ("by **position**" in view.text) == (r.mean() >= 0.9)


def test_no_sentence_when_nothing_could_be_correlated() -> None:
    assert pv.dependence_sentence({"photos": 0, "r": [], "visible": []}, 0.4) == ""
