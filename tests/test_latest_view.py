"""A view request superseded by a newer one from the same browser tab leaves the screen alone."""

from types import SimpleNamespace

import gradio as gr

from vitviz.ui import mae_tab
from vitviz.ui.common import LatestCall


def test_latest_call_tickets_are_per_session_and_bounded():
    latest = LatestCall(capacity=2)
    a1 = latest.begin("a")
    b1 = latest.begin("b")
    assert not latest.superseded("a", a1) and not latest.superseded("b", b1)
    a2 = latest.begin("a")
    assert latest.superseded("a", a1) and not latest.superseded("a", a2) and not latest.superseded("b", b1)
    assert not latest.superseded(None, latest.begin(None))  # API calls are never dropped
    latest.begin("c")  # evicts the least recent session ("b")
    assert len(latest._newest) == 2 and "b" not in latest._newest


def test_a_stale_view_returns_skips_and_the_newest_its_panels(monkeypatch, photo_path):
    monkeypatch.setattr(mae_tab, "LATEST_VIEW", LatestCall())
    request = SimpleNamespace(session_hash="tab-1")
    args = (str(photo_path), "mae-tiny", 0.5, 0, "random", False, None, mae_tab.NO_COMPARE)
    real = mae_tab._view

    def slow_view(*a):  # noqa: ANN002, ANN202 - a newer request arrives while this one computes
        out = real(*a)
        mae_tab.LATEST_VIEW.begin("tab-1")
        return out

    monkeypatch.setattr(mae_tab, "_view", slow_view)
    stale = mae_tab.update_view(*args, request=request)
    assert len(stale) == 12 and all(x == gr.skip() for x in stale)
    monkeypatch.setattr(mae_tab, "_view", real)
    fresh = mae_tab.update_view(*args, request=request)
    assert fresh[1].shape == (224, 224, 3) and "(98 hidden)" in fresh[5]
    other = mae_tab.update_view(*args, request=SimpleNamespace(session_hash="tab-2"))
    assert "(98 hidden)" in other[5]
