"""Issue 30: a live stream's next frames outside Gradio's queue (vitviz.ui.serve.frames), with fake queue
objects: only a running stream's frames are computed, by the handler's declared fast path, with its inputs
(a gr.State's from the session); one frame of a stream computes at a time and of those arriving meanwhile
only the newest waits. The browser test (tests/ui/test_mae_live.py) runs the route in the app."""

from __future__ import annotations

import asyncio
import json
import threading
from types import SimpleNamespace

from vitviz.ui.serve import frames, limits, threads


def _app(path, stateful_value=None, running=True, closed=False, time_limit=None):  # noqa: ANN001, ANN202
    """A fake app whose queue runs one streaming event ``e1`` of session ``s1`` (inputs: picture, ratio, state)."""
    @frames.fast(path)
    def handler(*args):  # noqa: ANN002, ANN202 - Gradio's own handler, not called here
        return args

    inputs = [SimpleNamespace(stateful=False, _id=1), SimpleNamespace(stateful=False, _id=2),
              SimpleNamespace(stateful=True, _id=3, value=None)]
    fn = SimpleNamespace(connection="stream", inputs=inputs, fn=handler, time_limit=time_limit)
    event = SimpleNamespace(fn=fn, session_hash="s1", closed=closed, request="the join's request",
                            concurrency_id=limits.LIVE)
    queue = SimpleNamespace(event_ids_to_events={"e1": event}, active_jobs=[[event]] if running else [None])
    holder = {"s1": {3: stateful_value}}
    blocks = SimpleNamespace(_queue=queue, state_holder=holder)
    return SimpleNamespace(get_blocks=lambda: blocks)


def _body(*data) -> bytes:  # noqa: ANN002
    return json.dumps({"data": list(data), "session_hash": "s1"}).encode()


def test_a_running_streams_frame_is_computed_by_its_fast_path_with_its_inputs():
    seen = {}

    def path(values, request):  # noqa: ANN001, ANN202
        seen.update(values=values, session=request.session_hash, request=request.request,
                    group=threads.current_group())
        return {"line": "done"}, [b"one", b"two!"]

    status, headers, body = asyncio.run(frames.frame(_app(path, stateful_value=[[True]]), "e1", _body("pic", 0.5, None)))
    assert status == 200 and seen["values"] == ["pic", 0.5, [[True]]]  # the state from the session, not the page
    assert seen["session"] == "s1" and seen["request"] == "the join's request"
    assert seen["group"] == limits.LIVE  # the model call knows it is a live frame (serve.threads)
    sizes = [int(n) for n in dict(headers)[b"x-vitviz-parts"].split(b",")]
    assert json.loads(body[:sizes[0]]) == {"line": "done"} and body[sizes[0]:] == b"onetwo!" and sizes[1:] == [3, 4]


def test_no_frame_is_computed_for_a_stream_gradio_is_not_running():
    calls = []

    def path(values, request):  # noqa: ANN001, ANN202
        calls.append(values)
        return {}, []

    for app, event_id in ((_app(path), "nope"), (_app(path, running=False), "e1"), (_app(path, closed=True), "e1")):
        status, _, body = asyncio.run(frames.frame(app, event_id, _body("pic", 0.5, None)))
        assert status == 410 and json.loads(body) == {"stop": frames.NOT_RUNNING}
    status, _, body = asyncio.run(frames.frame(_app(path), "e1", b"not json"))
    assert status == 400 and "3 input values" in json.loads(body)["error"]
    assert calls == []


def test_frames_arriving_while_one_computes_are_dropped_but_the_newest():
    started, release, done = threading.Event(), threading.Event(), []

    def path(values, request):  # noqa: ANN001, ANN202
        started.set()
        assert release.wait(30)
        done.append(values[0])
        return {}, [b"x"]

    app = _app(path)

    async def run() -> list:
        first = asyncio.create_task(frames.frame(app, "e1", _body("f1", 0.5, None)))
        while not started.is_set():
            await asyncio.sleep(0.01)
        later = [asyncio.create_task(frames.frame(app, "e1", _body(f"f{i}", 0.5, None))) for i in (2, 3, 4)]
        await asyncio.sleep(0.05)
        release.set()
        return [r[0] for r in await asyncio.gather(first, *later)]

    assert asyncio.run(run()) == [200, 204, 204, 200]
    assert done == ["f1", "f4"]  # the first, then only the newest of those that waited


def test_the_route_is_capped_as_gradios_next_frame_is():
    from vitviz.ui.serve import http

    path = "/gradio_api/vitviz-live/stream/0123456789abcdef0123456789abcdef"
    assert frames.PATH.search(path) and http.STREAM_CHUNK.search(path)  # VITVIZ_MAX_FRAME, not a larger body


def test_a_run_stops_at_its_time_limit_across_the_streams_gradio_opens_one_after_another(monkeypatch):
    """Gradio's webcam opens a new stream event by itself when one ends at its time limit: the route counts
    the limit from the run's first frame, across events that follow one another within REJOIN_S."""
    monkeypatch.setattr(frames, "_RUNS", {})
    assert not any(frames.over_time("s1", 60, 100.0 + t) for t in range(61))  # a frame a second for 60 s
    assert frames.over_time("s1", 60, 161.0 + frames.REJOIN_S - 1)  # still one run: the gaps were short
    assert not frames.over_time("s1", 60, 161.0 + 3 * frames.REJOIN_S)  # after a pause, a new run
    assert not frames.over_time("s2", None, 1e9)  # no limit (a local app)
    app = _app(lambda values, request: ({}, []), time_limit=60)  # noqa: ARG005
    frames._RUNS["s1"] = [0.0, 1e12]  # a run that began long ago and goes on
    status, _, body = asyncio.run(frames.frame(app, "e1", _body("pic", 0.5, None)))
    assert status == 410 and json.loads(body) == {"stop": frames.TIMED_OUT.format(limit=60), "ended": True}
