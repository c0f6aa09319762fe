"""A live stream's next frames outside Gradio's queue (vitviz.ui.serve.frames): only a session whose stream Gradio
runs (its handler called lately) gets frames computed, by the handler's declared fast path, with its inputs (a
gr.State's from Gradio's last call); one frame of a stream computes at a time and of those arriving meanwhile only
the newest waits. The browser test (tests/ui/test_mae_live.py) runs the route in the app."""

from __future__ import annotations

import asyncio
import json
import threading
from types import SimpleNamespace

import pytest

from vitviz.models import costs
from vitviz.ui.serve import frames, http


@pytest.fixture(autouse=True)
def fresh(monkeypatch):  # noqa: ANN001, ANN201
    monkeypatch.setattr(frames, "_STREAMS", {})
    monkeypatch.setattr(frames, "_RUNS", {})


def _opened(path, state=None, session="s1"):  # noqa: ANN001, ANN202
    """Gradio calls the stream's handler once (its first frame): the session's stream runs."""
    @frames.fast(path)
    def handler(picture, ratio, kept, request):  # noqa: ANN001, ANN202
        return picture

    handler("first", 0.5, state, SimpleNamespace(session_hash=session, request="the join's request"))
    return handler


def _body(*data, session="s1") -> bytes:  # noqa: ANN002
    return json.dumps({"data": list(data), "session_hash": session}).encode()


def test_a_running_streams_frame_is_computed_by_its_fast_path_with_its_inputs():
    seen = {}

    def path(values, request):  # noqa: ANN001, ANN202
        seen.update(values=values, session=request.session_hash, request=request.request, cost=costs.current())
        return {"line": "done"}, [b"one", b"two!"]

    _opened(path, state=[[True]])
    status, headers, body = asyncio.run(frames.frame(_body("pic", 0.7, None)))
    assert status == 200 and seen["values"] == ["pic", 0.7, [[True]]]  # the state from Gradio's call, not the page
    assert seen["session"] == "s1" and seen["request"] == "the join's request"
    assert seen["cost"] is costs.Cost.LIVE  # the model call knows it is a live frame
    sizes = [int(n) for n in dict(headers)[b"x-vitviz-parts"].split(b",")]
    assert json.loads(body[:sizes[0]]) == {"line": "done"} and body[sizes[0]:] == b"onetwo!" and sizes[1:] == [3, 4]


def test_no_frame_is_computed_for_a_stream_gradio_is_not_running(monkeypatch):
    calls = []

    def path(values, request):  # noqa: ANN001, ANN202
        calls.append(values)
        return {}, []

    for body in (_body("pic", 0.5, None), _body("pic", 0.5, None, session="other"), b"not json"):
        status, _, answer = asyncio.run(frames.frame(body))
        assert status == 410 and json.loads(answer) == {"stop": frames.NOT_RUNNING}
    _opened(path)
    status, _, answer = asyncio.run(frames.frame(_body("pic")))
    assert status == 400 and "3 input values" in json.loads(answer)["error"]
    monkeypatch.setattr(frames, "KEEP_S", -1.0)  # Gradio has not called the handler lately: the stream ended
    status, _, _ = asyncio.run(frames.frame(_body("pic", 0.5, None)))
    assert status == 410 and calls == []


def test_frames_arriving_while_one_computes_are_dropped_but_the_newest():
    started, release, done = threading.Event(), threading.Event(), []

    def path(values, request):  # noqa: ANN001, ANN202
        started.set()
        assert release.wait(30)
        done.append(values[0])
        return {}, [b"x"]

    _opened(path)

    async def run() -> list:
        first = asyncio.create_task(frames.frame(_body("f1", 0.5, None)))
        while not started.is_set():
            await asyncio.sleep(0.01)
        later = [asyncio.create_task(frames.frame(_body(f"f{i}", 0.5, None))) for i in (2, 3, 4)]
        await asyncio.sleep(0.05)
        release.set()
        return [r[0] for r in await asyncio.gather(first, *later)]

    assert asyncio.run(run()) == [200, 204, 204, 200]
    assert done == ["f1", "f4"]  # the first, then only the newest of those that waited


def test_the_route_is_capped_as_gradios_next_frame_is():
    path = "/gradio_api/vitviz-live/stream/0123456789abcdef0123456789abcdef"
    assert frames.PATH.search(path) and http.STREAM_CHUNK.search(path)  # VITVIZ_MAX_FRAME, not a larger body


def test_a_run_stops_at_its_time_limit_across_the_streams_gradio_opens_one_after_another(monkeypatch):
    """Gradio's webcam opens a new stream event by itself when one ends at its time limit: the route counts
    the limit from the run's first frame, across events that follow one another within REJOIN_S."""
    assert not any(frames.over_time("s1", 60, 100.0 + t) for t in range(61))  # a frame a second for 60 s
    assert frames.over_time("s1", 60, 161.0 + frames.REJOIN_S - 1)  # still one run: the gaps were short
    assert not frames.over_time("s1", 60, 161.0 + 3 * frames.REJOIN_S)  # after a pause, a new run
    assert not frames.over_time("s2", None, 1e9)  # no limit (a local app)
    monkeypatch.setattr(frames.settings, "live_limits", lambda: (2, 60))
    _opened(lambda values, request: ({}, []))  # noqa: ARG005
    frames._RUNS["s1"] = [0.0, 1e12]  # a run that began long ago and goes on
    status, _, body = asyncio.run(frames.frame(_body("pic", 0.5, None)))
    assert status == 410 and json.loads(body) == {"stop": frames.TIMED_OUT.format(limit=60), "ended": True}
