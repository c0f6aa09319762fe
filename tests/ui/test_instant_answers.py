"""A request for a model that cannot be had here is answered while the expensive group is busy (vitviz.ui.serve.limits),
and only the declared model input of the handler can send it there."""

from __future__ import annotations

import threading

import gradio as gr
import pytest

from tools.appserver import free_port
from vitviz.models.loading import load_choice
from vitviz.ui.serve import limits
from vitviz.ui.serve.costs import Cost, cost, model_cost
from vitviz.ui.common import user_errors


def test_unavailable_model_is_recognised_without_the_network(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert limits.unavailable("mae-large")
    assert not limits.unavailable("mae-tiny")  # embedded: always here
    assert not limits.unavailable("mae-large:random")  # random weights need no file
    assert not any(limits.unavailable(v) for v in ("no such model", "x" * 10_000, 3, None))


def test_an_unavailable_model_is_answered_while_the_heavy_group_is_busy(monkeypatch) -> None:
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("VITVIZ_HEAVY_CONCURRENCY", "1")
    started, release = threading.Event(), threading.Event()

    @cost(Cost.HEAVY)
    def run_sweep(x: float) -> float:  # the expensive group: holds its one slot until released
        started.set()
        release.wait(timeout=600)
        return x

    @cost(model_cost(0, base=Cost.HEAVY))
    @user_errors
    def compare(model: str) -> str:  # the expensive group too; fails in vitviz's own check for mae-large
        return load_choice(model).name

    with gr.Blocks(analytics_enabled=False) as demo:
        number, out, text = gr.Number(), gr.Number(), gr.Textbox()
        name = gr.Dropdown(["mae-tiny", "mae-large"], value="mae-tiny")
        gr.Button().click(run_sweep, number, out, api_name="run_sweep")
        gr.Button().click(compare, name, text, api_name="compare")
    demo.queue(default_concurrency_limit=2)
    limits.apply(demo)
    assert {fn.concurrency_id for fn in demo.fns.values()} == {limits.HEAVY}
    port = free_port()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True)
    try:
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        busy = client.submit(1.0, api_name="/run_sweep")
        assert started.wait(timeout=120)
        answer = client.submit("mae-large", api_name="/compare")
        # the answer arrives while the heavy group's only slot is still taken
        with pytest.raises(AppError, match=r"mae-large is unavailable.*HF_HUB_OFFLINE"):
            answer.result(timeout=120)
        assert not busy.done()
        release.set()
        assert busy.result(timeout=120) == 1.0
    finally:
        release.set()
        demo.close()
