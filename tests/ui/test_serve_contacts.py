"""Every contact of vitviz.ui.serve with Gradio's and Starlette's internals, checked against the installed
Gradio: each test fails when Gradio changes the behaviour a patch relies on (then re-check the patch)."""

from __future__ import annotations

import inspect
import re

import gradio as gr
import pytest

from vitviz.ui import serve


def _source(obj) -> str:  # noqa: ANN001
    return inspect.getsource(inspect.unwrap(obj))


def test_an_untested_gradio_is_refused_with_a_sentence() -> None:
    serve.check_gradio(gr.__version__)  # the installed one is tested
    with pytest.raises(serve.UntestedGradio, match=r"tested with Gradio 6\.31\.x, and Gradio 7\.0\.0 is installed"):
        serve.check_gradio("7.0.0")
    with pytest.raises(serve.UntestedGradio):
        serve.check_gradio("6.30.2")


def test_the_app_extra_admits_the_tested_gradio() -> None:
    """Gradio is the ``app`` extra (a range of minors); :func:`serve.check_gradio` refuses, with a sentence, a
    minor whose internals were not checked, while any contact with them remains."""
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("gradio")]
    (spec,) = [d for d in project["optional-dependencies"]["app"] if d.startswith("gradio")]
    low, high = re.fullmatch(r"gradio>=(\d+)\.(\d+),<(\d+)", spec).groups()[:2], spec.rsplit("<", 1)[1]
    for a, b in serve.TESTED_GRADIO:
        assert (int(low[0]), int(low[1])) <= (a, b) and a < int(high)


def test_nothing_is_installed_on_import_or_by_build_demo() -> None:
    import subprocess
    import sys

    code = ("import gradio.processing_utils as pu, gradio.queueing as q; orig = (pu.save_pil_to_cache, q.Queue.push); "
            "from vitviz.ui import build_demo; build_demo(); "
            "print(pu.save_pil_to_cache is orig[0] and q.Queue.push is orig[1])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "True"


def test_image_cache_contact() -> None:
    """image_cache replaces ``processing_utils.save_pil_to_cache(img, cache_dir, name, format)``, which Gradio's
    image postprocessing calls through the module (so the replacement is seen); it hashes with ``hash_bytes``."""
    from gradio import processing_utils as pu

    params = list(inspect.signature(inspect.unwrap(pu.save_pil_to_cache)).parameters)
    assert params[:4] == ["img", "cache_dir", "name", "format"]
    assert callable(pu.hash_bytes) and callable(pu.encode_pil_to_bytes) and callable(pu.get_pil_metadata)
    assert "processing_utils.save_pil_to_cache(" in _source(gr.Image.postprocess) or \
        "save_pil_to_cache(" in inspect.getsource(pu)


def test_inputs_contact() -> None:
    """inputs wraps ``preprocess(self, payload)`` of these classes; Gradio calls it per input before a handler."""
    for name in ("Number", "Slider", "Dropdown", "Radio", "Image"):
        cls = getattr(gr, name)
        assert list(inspect.signature(inspect.unwrap(cls.preprocess)).parameters)[:2] == ["self", "payload"], name
    assert hasattr(gr.Error(""), "print_exception")


def test_sessions_contact() -> None:
    """sessions replaces four ``SessionState`` methods; Gradio's own ``__init__`` builds the per-session
    configuration copy (``config_values``) that vitviz drops, and it still sets the attributes vitviz sets."""
    from gradio.state_holder import SessionState

    own = _source(SessionState.__init__) if SessionState.__init__.__module__ == "gradio.state_holder" else ""
    from vitviz.ui.serve import sessions

    if not sessions._INSTALLED:
        assert "config_values" in own and "blocks_config" in own and "_state_ttl" in own
    for name in ("__setitem__", "_update_config", "_update_value_in_config", "__getitem__"):
        assert hasattr(SessionState, name), name


def test_queue_contact() -> None:
    """limits wraps ``Queue.push(self, body, request, username)`` and reads the queue's internals: groups in
    ``event_queue_per_concurrency_id`` (``EventQueue(concurrency_id, limit)`` with ``.queue`` a list picked
    from its head), ``active_jobs``, ``event_ids_to_events``; events carry ``concurrency_id``, ``session_hash``."""
    from gradio import queueing

    push = inspect.unwrap(queueing.Queue.push)
    assert list(inspect.signature(push).parameters) == ["self", "body", "request", "username"]
    eq = queueing.EventQueue("x", 3)
    assert eq.queue == [] and eq.concurrency_limit == 3 and eq.concurrency_id == "x"
    source = inspect.getsource(queueing.Queue)
    for name in ("event_queue_per_concurrency_id", "active_jobs", "event_ids_to_events", "sleep_when_free",
                 "progress_update_sleep_when_free", "ANAYLTICS_CACHE_FREQUENCY", "first_event = event_queue.queue[0]"):
        assert name in source, name
    assert "self.max_size is not None and len(self) >= self.max_size" in inspect.getsource(push)
    assert {"concurrency_id", "session_hash"} <= set(inspect.signature(queueing.Event.__init__).parameters) | {
        "concurrency_id"} and "self.concurrency_id = fn.concurrency_id" in inspect.getsource(queueing.Event)


def test_turns_contact() -> None:
    """turns replaces ``Queue.get_events(self)``, which returns ``(events, batch, concurrency_id)`` of the first
    waiting events of a group with a free slot and removes them; ``start_processing`` then counts the slot."""
    from gradio import queueing

    get_events = inspect.unwrap(queueing.Queue.get_events)
    assert list(inspect.signature(get_events).parameters) == ["self"]
    source = inspect.getsource(get_events)
    for text in ("event_queue.current_concurrency < event_queue.concurrency_limit", "event_queue.queue.remove(event)",
                 "return events, batch, concurrency_id"):
        assert text in source, text
    start = inspect.getsource(queueing.Queue.start_processing)
    assert "events, batch, concurrency_id = event_batch" in start and "event_queue.current_concurrency += 1" in start


def test_pageconfig_contact() -> None:
    """pageconfig wraps ``Blocks.get_config_file(self)`` and ``Blocks.get_api_info(self)``; the API description
    is built from ``self.config``; ``gradio_client.utils.value_is_file`` reads an ``api_info`` schema."""
    from gradio.blocks import Blocks
    from gradio_client.utils import value_is_file

    from vitviz.ui.serve.pageconfig import FILE_SCHEMA

    assert list(inspect.signature(inspect.unwrap(Blocks.get_config_file)).parameters) == ["self"]
    assert "self.config" in _source(Blocks.get_api_info)
    assert value_is_file(FILE_SCHEMA)


def test_http_contacts() -> None:
    """http sets ``FileResponse.chunk_size``; its door knows Gradio's routes and the upload field name."""
    from gradio import route_utils, routes
    from starlette.responses import FileResponse

    assert isinstance(FileResponse.chunk_size, int)
    source = inspect.getsource(routes)
    for route in ('"/upload"', '"/config"', '"/info"', '"/queue/join"'):
        assert route in source, route
    # Gradio keeps the parts named "files"; a part is a file when its Content-Disposition (parsed by
    # parse_options_header, so any case and quoting) has a filename: the door parses the same way.
    assert 'form.getlist("files")' in inspect.getsource(route_utils.upload_fn)
    parser = inspect.getsource(route_utils.GradioMultiPartParser)
    assert "parse_options_header" in parser and 'b"filename" in options' in parser


def test_files_contact() -> None:
    """files registers a set with ``Blocks.temp_file_sets``, which Gradio's cache cleaner empties; the cache
    folder is ``gradio.utils.get_upload_folder()``."""
    from gradio.utils import get_upload_folder

    with gr.Blocks() as demo:
        pass
    assert isinstance(demo.temp_file_sets, list) and isinstance(get_upload_folder(), str)
    assert hasattr(demo, "state_session_capacity")


def test_errors_contact() -> None:
    """errors wraps ``Blocks.process_api`` (async), which runs ``validate_inputs`` and ``preprocess_data``
    before the handler; the ``/run/`` route answers an exception with HTTP 500 and ``error_payload``."""
    from gradio import routes
    from gradio.blocks import Blocks

    assert inspect.iscoroutinefunction(inspect.unwrap(Blocks.process_api))
    assert "preprocess_data" in _source(Blocks.process_api)
    assert "status_code=500" in inspect.getsource(routes)


def test_the_launch_self_check_is_what_frontend_false_skips() -> None:
    """``serve.launch_without_self_check`` passes ``_frontend=False``: in the installed Gradio that flag
    guards only the HEAD check of the local URL, whose failure stops the start."""
    launch = _source(gr.Blocks.launch)
    assert "_frontend" in inspect.signature(gr.Blocks.launch).parameters
    uses = [line.strip() for line in launch.splitlines() if "_frontend" in line and "_frontend:" not in line]
    assert uses == ["if _frontend and not networking.url_ok(self.local_url) and not self.share:"], uses
    assert serve.launch_without_self_check() == {"_frontend": False}


def test_image_array_contact(tmp_path) -> None:
    """image_cache.save_array calls ``processing_utils.save_img_array_to_cache(arr, cache_dir, format)``, which
    reaches ``save_pil_to_cache`` through the module, so the replacement writer is the one used."""
    import numpy as np
    from gradio import processing_utils as pu

    from vitviz.ui.serve import image_cache

    params = list(inspect.signature(inspect.unwrap(pu.save_img_array_to_cache)).parameters)
    assert params == ["arr", "cache_dir", "format"]
    assert "return save_pil_to_cache(" in _source(pu.save_img_array_to_cache)
    path = image_cache.save_array(np.zeros((4, 4, 3), np.uint8), str(tmp_path))
    assert path.endswith(".png") and str(tmp_path) in path


def test_examples_contact() -> None:
    """examples chains onto ``gr.Examples.load_input_event``, the dataset's click that Gradio creates inside a
    Blocks (without cached examples) to put a clicked example in the input box."""
    from vitviz.ui.serve.examples import after_example_click

    with gr.Blocks() as demo:
        box = gr.Image(type="filepath")
        examples = gr.Examples(examples=[["a.png"]], inputs=box)
        clicks = [fn for fn in demo.fns.values() if any(t[0] == examples.dataset._id for t in fn.targets)]
        assert examples.load_input_event is not None and len(clicks) == 1
        assert clicks[0].targets[0][1] == "click"
        before = len(demo.fns)
        after_example_click(examples, fn=None, js="() => 1", queue=False)
        assert len(demo.fns) == before + 1


def test_live_frames_contact() -> None:
    """frames answers a stream's next frame beside Gradio's own route (``POST /stream/{event_id}``, which sets
    ``event.data`` and wakes the queue's loop): it reads a streaming event's ``fn`` (``connection``, ``inputs``,
    ``fn``), ``session_hash``, ``closed`` and ``request``, the queue's ``event_ids_to_events`` and
    ``active_jobs``, a session's ``gr.State`` values (``Blocks.state_holder``: ``in`` and ``[session]``, then
    ``[block id]``), and names the event in ``gradio.context.LocalContext`` (read by serve.threads); a stream
    event's loop waits ``fn.time_limit or 30`` seconds for its next frame (the page's keep-alive)."""
    from gradio import context, queueing, routes, state_holder

    assert '@router.post("/stream/{event_id}")' in inspect.getsource(routes)
    event_source = inspect.getsource(queueing.Event)
    for name in ("self.session_hash", "self.fn = fn", "self.request = request", "self.closed = False"):
        assert name in event_source, name
    assert 'self.fn.connection == "stream"' in event_source
    assert "fn.time_limit or 30" in inspect.getsource(queueing.Queue.process_events)
    assert {"__contains__", "__getitem__"} <= set(vars(state_holder.StateHolder))
    assert "block.stateful" in inspect.getsource(state_holder.SessionState.__getitem__)
    assert {"blocks", "event_id"} <= set(vars(context.LocalContext))


def test_courtesy_contact() -> None:
    """courtesy reads, at every module's forward, the event its thread runs (``gradio.context.LocalContext``:
    ``blocks`` and ``event_id``, set for the handler's thread; the event by ``Queue.event_ids_to_events``, its
    id ``Event._id``) and the queue's running events (``active_jobs``); torch calls a global forward pre-hook
    with ``(module, args)``."""
    import torch
    from gradio import context, queueing

    assert {"blocks", "event_id"} <= set(vars(context.LocalContext))
    assert "self._id = uuid.uuid4().hex" in inspect.getsource(queueing.Event.__init__)
    source = inspect.getsource(queueing.Queue)
    assert "self.event_ids_to_events[event._id] = event" in source and "self.active_jobs" in source
    from gradio import utils

    assert "LocalContext.event_id.set(event_id)" in inspect.getsource(utils)  # in the handler's thread
    calls = []
    handle = torch.nn.modules.module.register_module_forward_pre_hook(lambda m, a: calls.append(type(m).__name__))
    try:
        torch.nn.Sequential(torch.nn.Linear(2, 2))(torch.ones(1, 2))
    finally:
        handle.remove()
    assert calls == ["Sequential", "Linear"]
