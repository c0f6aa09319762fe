"""The Features tab's probes are fitted where the model's tokens are computed: with model workers, in the worker."""

from __future__ import annotations

import numpy as np

from vitviz.models import runner
from vitviz.models.loading import load_choice
from vitviz.views import features as v


def test_probes_are_fitted_inside_the_sent_call(photo_path, sent_calls, where_run):
    model = load_choice("mae-tiny")
    fitted_inside = where_run(v, "_by_layer")
    v._PROBES.clear()
    there, there_control = v.probe_tables(model, str(photo_path))
    assert sent_calls == ["probe_tables"] and fitted_inside == [True]  # the tokens' calls are not sent on their own
    runner.install_dispatch(None)
    v._PROBES.clear()
    here, here_control = v.probe_tables(model, str(photo_path))
    assert fitted_inside == [True, False]
    assert np.array_equal(here.r2, there.r2) and np.array_equal(here_control.r2, there_control.r2)
    assert here.layers == there.layers and here.targets == there.targets
