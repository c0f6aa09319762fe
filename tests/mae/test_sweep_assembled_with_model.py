"""A sweep's panels are assembled in the call that predicts them: with model workers, in the worker."""

from __future__ import annotations

from vitviz.mae import reconstruct as rec
from vitviz.mae.sweep import sweep
from vitviz.models import runner
from vitviz.models.loading import load_model


def test_panels_are_assembled_inside_the_sent_call(photo_path, sent_calls, where_run):
    model = load_model("mae-tiny")
    assembled_inside = where_run(rec, "assemble_stops")
    there = sweep(model, photo_path, seed=7, ratios=(0.25, 0.5, 0.75), cache=None)
    assert sent_calls == ["predict_stops"] and assembled_inside == [True]
    runner.install_dispatch(None)
    here = sweep(model, photo_path, seed=7, ratios=(0.25, 0.5, 0.75), cache=None)
    assert assembled_inside == [True, False]
    for a, b in zip(here.results, there.results):
        assert a.pasted.tobytes() == b.pasted.tobytes() and a.masked.tobytes() == b.masked.tobytes()
        assert a.masked_mse == b.masked_mse and a.error_map.tobytes() == b.error_map.tobytes()
