"""Cost classes (vitviz.ui.serve.costs): declared with each handler, read when a request is queued."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import gradio as gr
import pytest

from vitviz.ui.serve import costs, limits
from vitviz.ui.serve.costs import Cost, cost, model_cost


@pytest.fixture(scope="module")
def demo():  # noqa: ANN201
    from vitviz.ui import build_demo, serve

    return serve.install(build_demo())


def _by_name(demo, name: str):  # noqa: ANN001, ANN202
    # by the handler's own name: serve.mcp renames public handlers after their endpoints (a wrapper)
    found = [fn for fn in demo.fns.values() if getattr(inspect.unwrap(fn.fn), "__name__", "") == name]
    assert found, name
    return found[0]


def test_every_queued_event_of_the_app_declares_its_cost(demo) -> None:  # noqa: ANN001
    undeclared = sorted({f"{fn.fn.__module__}.{fn.fn.__qualname__}" for fn in demo.fns.values()
                         if fn.fn is not None and fn.queue is not False and costs.declared(fn.fn) is None})
    assert undeclared == []


def test_an_undeclared_handler_is_heavy() -> None:
    def anything(x: float) -> float:
        return x

    assert costs.fixed(anything) is Cost.HEAVY
    assert costs.resolve(anything, [gr.Number()], [1]) is Cost.HEAVY
    with gr.Blocks() as demo:
        n = gr.Number()
        gr.Button().click(anything, n, n)
    demo.queue()
    limits.apply(demo)
    assert {fn.concurrency_id for fn in demo.fns.values()} == {limits.HEAVY}


def test_probes_explanations_curves_sweeps_are_heavy(demo) -> None:  # noqa: ANN001
    for name in ("layer_probes", "explain", "update_curves", "first_curves", "run_sweep", "page_sweep", "scrub_payload", "export",
                 "measure_attention"):
        assert _by_name(demo, name).concurrency_id == limits.HEAVY, name
    # Row 1 of issue 32: the Features tab's page-side update_all runs the layer probes.
    features_update = [fn for fn in demo.fns.values() if getattr(fn.fn, "__module__", "") == "vitviz.ui.features_tab"
                       and inspect.unwrap(fn.fn).__name__ == "update_all"]
    assert features_update and all(fn.concurrency_id == limits.HEAVY for fn in features_update)
    for fn in features_update:  # whatever the inputs, it stays heavy
        assert limits.queue_group(fn, [None, "vit-base:random", 1, False, 0, 0, None]) == limits.HEAVY


def test_a_view_is_heavy_until_its_model_is_in_memory(demo) -> None:  # noqa: ANN001
    from vitviz.models.loading import is_loaded, load_choice

    fn = _by_name(demo, "update_maps")
    choice = fn.inputs[1].value
    data = [None, choice, None, fn.inputs[3].value]
    if not is_loaded(choice):
        assert limits.queue_group(fn, data) == limits.HEAVY
    load_choice(choice)
    assert is_loaded(choice)
    assert limits.queue_group(fn, data) == limits.VIEW
    # a value that is not one of the picker's choices is not read: heavy (fail-safe)
    assert limits.queue_group(fn, [None, choice + "x", None, None]) == limits.HEAVY


def test_the_cost_is_never_taken_from_the_function_name_or_stray_values(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    @cost(Cost.VIEW)
    def run_sweep(x: float) -> float:  # the name of a heavy function long ago: the declaration wins
        return x

    @cost(Cost.HEAVY)
    def sweep(x: float, model: str) -> float:
        return x

    with gr.Blocks() as demo:
        n = gr.Number()
        picker = gr.Dropdown(["mae-tiny", "mae-large"], value="mae-tiny")
        gr.Button().click(run_sweep, n, n)
        gr.Button().click(sweep, [n, picker], n)
    demo.queue()
    limits.apply(demo)
    view_fn, heavy_fn = list(demo.fns.values())
    assert view_fn.concurrency_id == limits.VIEW
    # row 3 of issue 32: a trailing "mae-large" (or one at any undeclared position) moves nothing
    assert limits.queue_group(heavy_fn, [1, "mae-tiny", "mae-large"]) == limits.HEAVY
    assert limits.queue_group(heavy_fn, [1, "mae-large"]) == limits.HEAVY  # not a declared model input
    assert limits.queue_group(view_fn, [1, "mae-large"]) == limits.VIEW


def test_only_a_declared_model_input_answers_at_once(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    @cost(model_cost(1, base=Cost.HEAVY))
    def compare(x: float, model: str) -> float:
        return x

    with gr.Blocks() as demo:
        n = gr.Number()
        picker = gr.Dropdown(["mae-tiny", "mae-large"], value="mae-tiny")
        gr.Button().click(compare, [n, picker], n)
    demo.queue()
    limits.apply(demo)
    fn = next(iter(demo.fns.values()))
    assert limits.queue_group(fn, [1, "mae-large"]) == limits.INSTANT
    assert limits.queue_group(fn, ["mae-large", "mae-tiny"]) != limits.INSTANT
    assert limits.queue_group(fn, [1, "mae-large:random"]) == limits.HEAVY  # random weights: built, heavy


def test_checked_inputs_keep_only_values_the_component_accepts() -> None:
    slider, number, pick, box = gr.Slider(1, 8, step=1), gr.Number(), gr.Dropdown(["a", "b"]), gr.Checkbox()
    assert costs.checked_inputs([slider, number, pick, box], [3, 1e300, "a", True]) == [3, 1e300, "a", True]
    assert costs.checked_inputs([slider, number, pick, box], [99, float("inf"), "c", "yes"]) == [None] * 4
    assert costs.checked_inputs([slider, number], [2]) == [2, None]  # too few values: None
    assert costs.checked_inputs([slider], [2, "mae-large"]) == [2]  # extra values are never seen


def test_a_broken_declaration_is_heavy() -> None:
    @cost(lambda values: 1 / 0)
    def broken(x: float) -> float:
        return x

    @cost(lambda values: "view")
    def wrong_type(x: float) -> float:
        return x

    assert costs.resolve(broken, [gr.Number()], [1]) is Cost.HEAVY
    assert costs.resolve(wrong_type, [gr.Number()], [1]) is Cost.HEAVY
    with pytest.raises(TypeError):
        cost("heavy")


def test_a_live_stream_has_its_own_slots_and_never_takes_a_views(demo, monkeypatch) -> None:  # noqa: ANN001
    from vitviz import settings

    fn = _by_name(demo, "live_step")
    assert costs.fixed(fn.fn) is Cost.LIVE
    assert fn.concurrency_id == limits.LIVE and fn.connection == "stream"
    assert fn.concurrency_limit == settings.live_limits()[0]
    assert limits.queue_group(fn, [None, "mae-tiny", 0.75, 0, "random", False, False, None, ""]) == limits.LIVE
    video = _by_name(demo, "play_video")  # an uploaded video's playback: the same class, slots and rules
    assert costs.fixed(video.fn) is Cost.LIVE and video.concurrency_id == limits.LIVE
    assert video.concurrency_limit == settings.live_limits()[0]
    monkeypatch.setenv("VITVIZ_PUBLIC", "1")
    assert settings.live_limits() == (1, 60)
    monkeypatch.setenv("VITVIZ_LIVE_SECONDS", "0")
    monkeypatch.setenv("VITVIZ_LIVE_STREAMS", "3")
    assert settings.live_limits() == (3, None)
    monkeypatch.setenv("VITVIZ_PUBLIC", "0")
    monkeypatch.delenv("VITVIZ_LIVE_SECONDS")
    monkeypatch.delenv("VITVIZ_LIVE_STREAMS")
    assert settings.live_limits() == (2, None)


def test_a_request_moved_to_the_view_group_runs_within_the_groups_limit(monkeypatch) -> None:
    """Row 2: every view's cost is computed (a model not yet in memory is heavy), so each is sorted into the
    view group when queued, and that group was created without a limit: 30 calls of five flooding addresses
    ran at once beside the visitor's. It now has ``VITVIZ_CONCURRENCY`` slots, however it is first created."""
    from gradio import queueing

    monkeypatch.setenv("VITVIZ_CONCURRENCY", "2")

    @cost(lambda values: Cost.VIEW)
    def view(x: float) -> float:
        return x

    with gr.Blocks() as demo:
        n = gr.Number()
        gr.Button().click(view, n, n)
    demo.queue()
    limits.apply(demo)
    fn = next(iter(demo.fns.values()))
    assert fn.concurrency_id == limits.HEAVY  # sorted again when each request is queued
    heavy = queueing.EventQueue(limits.HEAVY, 1)
    queue = SimpleNamespace(blocks=demo, active_jobs=[], event_queue_per_concurrency_id={limits.HEAVY: heavy})
    for i in range(6):
        event = SimpleNamespace(concurrency_id=limits.HEAVY, fn=fn, vitviz_address=f"10.0.0.{i}", session_hash="s")
        queue.event_queue_per_concurrency_id[limits.HEAVY].queue.append(event)
        limits._move(queue, event, limits.queue_group(fn, [1]))
    views = queue.event_queue_per_concurrency_id[limits.VIEW]
    assert views.concurrency_limit == 2 and len(views.queue) == 6
    started = []
    while (picked := queueing.Queue.get_events(queue)) is not None:  # the installed choice of what starts
        started += picked[0]
        queue.event_queue_per_concurrency_id[picked[2]].current_concurrency += 1
    assert len(started) == 2
