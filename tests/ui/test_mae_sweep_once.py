"""A new sweep on the MAE tab draws its chart and thumbnails once (they are most of a cached sweep's time, and in
the served app they are drawn in the app's own process, beside every other visitor's requests)."""

from __future__ import annotations

from vitviz.ui import mae_tab
from vitviz.views import mae as mae_view


def test_a_new_sweep_draws_its_chart_and_thumbnails_once(monkeypatch, photo_path):
    drawn = {"figure": 0, "thumbnails": 0}
    figure, thumbnails = mae_view.sweep_figure, mae_view.thumbnails

    def counted_figure(*args, **kwargs):
        drawn["figure"] += 1
        return figure(*args, **kwargs)

    def counted_thumbnails(*args, **kwargs):
        drawn["thumbnails"] += 1
        return thumbnails(*args, **kwargs)

    monkeypatch.setattr(mae_view, "sweep_figure", counted_figure)
    monkeypatch.setattr(mae_view, "thumbnails", counted_thumbnails)
    # a seed no other test sweeps: nothing of this sweep is cached yet
    out = mae_tab.run_sweep(str(photo_path), "mae-tiny", 12345, "random", progress=lambda *a, **k: None)
    assert out.chart is not None and len(out.thumbs) > 0
    assert drawn == {"figure": 1, "thumbnails": 1}
