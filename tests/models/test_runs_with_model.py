"""A function marked ``runs_with_model`` (model calls, then work on their results) is sent to a dispatch whole, and
runs here, outside any installed runner, when nothing is dispatched."""

from __future__ import annotations

from vitviz.models import runner
from vitviz.models.runner import runs_model, runs_with_model

SEEN: list[tuple[str, bool]] = []


@runs_model
def forward(x: int) -> int:
    """Stands in for a model's forward pass."""
    SEEN.append(("forward", runner.inside()))
    return x + 1


@runs_with_model
def drawn(x: int) -> str:
    """Stands in for a view: a model call, then drawing from its result."""
    y = forward(x)
    SEEN.append(("draw", runner.inside()))
    return f"drawn {y}"


def test_a_dispatch_receives_the_whole_function_and_the_work_runs_inside_it(sent_calls):
    SEEN.clear()
    assert drawn(1) == "drawn 2"
    assert sent_calls == ["drawn"]  # the model call inside it is not sent on its own
    assert SEEN == [("forward", True), ("draw", True)]


def test_without_a_dispatch_only_the_model_calls_go_through_the_runner():
    ran: list[str] = []

    def lease(execute):  # a host's runner, as ZeroGPU's decorator: only model calls take its lease
        def leased(fn, args, kwargs):
            ran.append(fn.__name__)
            return execute(fn, args, kwargs)
        return leased

    SEEN.clear()
    runner.install(lease)
    try:
        assert drawn(1) == "drawn 2"
    finally:
        runner.install(None)
    assert ran == ["forward"]
    assert SEEN == [("forward", True), ("draw", False)]


def test_with_nothing_installed_it_is_a_plain_call():
    SEEN.clear()
    assert drawn(4) == "drawn 5"
    assert SEEN == [("forward", False), ("draw", False)]
