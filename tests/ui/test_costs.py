"""Cost classes (vitviz.models.costs): declared with each handler, given to Gradio when its event is registered
(concurrency_id and concurrency_limit), and resolved per call for the model calls (vitviz.models.threads, serve.model_workers)."""

from __future__ import annotations

import inspect

import gradio as gr
import pytest

from vitviz.ui.binder import Binder
from vitviz.models import costs
from vitviz.ui.serve import limits
from vitviz.models.costs import Cost, cost, model_cost


@pytest.fixture(scope="module")
def demo():  # noqa: ANN201
    from vitviz.ui import build_demo, serve

    return serve.install(build_demo())


def _by_name(demo, name: str):  # noqa: ANN001, ANN202
    found = [fn for fn in demo.fns.values() if getattr(inspect.unwrap(fn.fn), "__name__", "") == name]
    assert found, name
    return found


def test_every_queued_event_of_the_app_declares_its_cost_and_is_registered_in_its_group(demo) -> None:  # noqa: ANN001
    queued = [fn for fn in demo.fns.values() if fn.fn is not None and fn.queue is not False]
    undeclared = sorted({f"{fn.fn.__module__}.{fn.fn.__qualname__}" for fn in queued if costs.declared(fn.fn) is None})
    assert undeclared == []
    limit = costs.limits()
    for fn in queued:
        c = costs.registered(fn.fn)
        if fn.concurrency_id == "vitviz-measure":  # the timing measurement: alone, its own group of one
            continue
        assert (fn.concurrency_id, fn.concurrency_limit) == (costs.GROUPS[c], limit[c]), fn.fn


def test_an_undeclared_handler_is_heavy() -> None:
    def anything(x: float) -> float:
        return x

    assert costs.registered(anything) is Cost.HEAVY and costs.resolve(anything, [1]) is Cost.HEAVY
    with gr.Blocks() as demo:
        ui = Binder()
        ui.x = gr.Number()
        gr.Button().click(**ui.bind(anything, "x", inputs=["x"]))
    assert {fn.concurrency_id for fn in demo.fns.values()} == {limits.HEAVY}


def test_probes_explanations_curves_sweeps_are_heavy(demo) -> None:  # noqa: ANN001
    for name in ("layer_probes", "explain", "update_curves", "first_curves", "run_sweep", "page_sweep", "scrub_payload",
                 "export"):
        assert all(fn.concurrency_id == limits.HEAVY for fn in _by_name(demo, name)), name


def test_a_view_runs_as_heavy_until_its_model_is_in_memory(monkeypatch) -> None:
    from vitviz.models import loading

    monkeypatch.setattr(loading, "CACHE", type(loading.CACHE)(4, budgeted=False))  # mae-tiny not in memory

    @cost(model_cost(1))
    def view(image: object, model: str) -> Cost:
        return costs.current()

    assert costs.registered(view) is Cost.VIEW  # its event is registered as a view
    with costs.running(view, [None, "mae-tiny"]):
        assert costs.current() is Cost.HEAVY  # the load is heavy: in one process, a heavy call's share of the cores
        assert costs.current_work() is Cost.VIEW  # the work is a view's: worker processes load it in the view worker
    loading.load_choice("mae-tiny")
    with costs.running(view, [None, "mae-tiny"]):
        assert costs.current() is Cost.VIEW and costs.current_work() is Cost.VIEW
    with costs.running(view, [None, 3]):
        assert costs.current() is Cost.HEAVY and costs.current_work() is Cost.VIEW  # not a picker's value: fail-safe
    assert costs.current() is Cost.VIEW  # outside a call


def test_the_work_of_a_heavy_declaration_is_heavy() -> None:
    @cost(lambda values: Cost.HEAVY if values[0] else Cost.VIEW)  # e.g. a photo at its own shape past a size
    def view(big: bool) -> None: ...

    with costs.running(view, [True]):
        assert costs.current() is Cost.HEAVY and costs.current_work() is Cost.HEAVY
    with costs.as_class(Cost.LIVE):
        assert costs.current_work() is Cost.LIVE


def test_a_binder_handler_runs_as_its_resolved_class() -> None:
    @cost(model_cost(0))
    def view(model: str) -> str:
        return costs.current().value

    with gr.Blocks():
        ui = Binder()
        ui.model, ui.out = gr.Textbox(), gr.Textbox()
        wired = ui.bind(view, "out")
    assert wired["fn"]("no-such-model") == "heavy"


def test_a_fixed_class_holds_for_a_generator_and_however_the_handler_is_wired() -> None:
    @cost(Cost.LIVE)
    def frames(n: int):  # noqa: ANN202
        for _ in range(n):
            yield costs.current()

    assert inspect.isgeneratorfunction(frames) and list(frames(2)) == [Cost.LIVE, Cost.LIVE]
    assert costs.declared(frames) is Cost.LIVE and costs.current() is Cost.VIEW


def test_a_broken_declaration_is_heavy() -> None:
    @cost(lambda values: 1 / 0)
    def broken(x: float) -> float:
        return x

    @cost(lambda values: "view")
    def wrong_type(x: float) -> float:
        return x

    assert costs.resolve(broken, [1]) is Cost.HEAVY and costs.resolve(wrong_type, [1]) is Cost.HEAVY


def test_a_live_stream_has_its_own_slots_and_never_takes_a_views(demo) -> None:  # noqa: ANN001
    for fn in _by_name(demo, "live_step") + _by_name(demo, "play_video"):
        assert costs.declared(fn.fn) is Cost.LIVE and fn.concurrency_id == limits.LIVE
