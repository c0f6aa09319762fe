"""The few named contacts of vitviz.ui.serve with Gradio's internals (vitviz.ui.serve.contacts), each checked
against the installed Gradio by what it does; the count of lines of vitviz/ that name internals
(tools/gradio_contacts.py); the Gradio range the server takes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import gradio as gr
import pytest

from vitviz.ui import serve
from vitviz.ui.serve import contacts

ROOT = Path(__file__).resolve().parents[2]


def test_at_most_five_lines_of_vitviz_name_gradios_internals_each_a_named_contact():
    from tools.gradio_contacts import LIMIT, scan

    found = scan(ROOT / "vitviz")
    assert len(found) <= LIMIT == 5, found
    assert len(contacts.CONTACTS) == len(found)
    assert all(path.endswith("serve/contacts.py") for path, _, _ in found), found


def test_the_counter_sees_what_it_counts():
    from tools.gradio_contacts import contacts as lines

    source = ("import gradio as gr\nfrom gradio.queueing import Queue\nq = demo._queue\nQueue.push = f\n"
              "demo.fns[1].concurrency_id = 'x'\nblocks.state_holder\nx = gr.Button\n")
    assert sorted(lines(source)) == [2, 3, 4, 5, 6]


def test_gradio_in_the_app_extras_range_is_taken_and_others_refused_with_a_sentence():
    import tomllib

    serve.check_gradio(gr.__version__)
    serve.check_gradio("6.99.0")
    for version in ("7.0.0", "6.30.2", "nonsense"):
        with pytest.raises(serve.UntestedGradio, match=r"takes Gradio >=6\.31,<7"):
            serve.check_gradio(version)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("gradio")]
    (spec,) = [d for d in project["optional-dependencies"]["app"] if d.startswith("gradio")]
    assert spec == f"gradio{serve.GRADIO_RANGE}"


def test_nothing_is_installed_on_import_or_by_build_demo():
    code = ("import gradio as gr; orig = (gr.processing_utils.save_pil_to_cache, gr.Blocks.process_api); "
            "from vitviz.ui import build_demo; build_demo(); "
            "print(gr.processing_utils.save_pil_to_cache is orig[0] and gr.Blocks.process_api is orig[1])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "True"


def test_each_contact_says_why_and_what_gradio_would_need_and_is_replaced_once():
    contacts.install()
    contacts.install()
    for contact in contacts.CONTACTS:
        assert contact.why and contact.gradio_change
        for owner in contact.owners if contact.make is not None else ():
            current = getattr(contacts.resolve(owner), contact.attribute)
            assert getattr(current, "__wrapped__", None) is not None, (owner, contact.attribute)
            assert getattr(current.__wrapped__, "__wrapped__", None) is None  # not wrapped twice


def test_the_image_writer_is_the_one_gradio_uses_for_an_output_image(tmp_path):
    """An Image output written through Gradio's postprocessing lands, once and whole, where the writer puts it."""
    import numpy as np

    contacts.install()
    image = gr.Image(type="numpy", format="png")
    first = image.postprocess(np.full((8, 8, 3), 7, np.uint8))
    again = image.postprocess(np.full((8, 8, 3), 7, np.uint8))
    assert first.path == again.path and Path(first.path).is_file() and first.path.endswith(".png")
    from vitviz.ui.serve import files

    assert first.path in files.WRITTEN


def test_a_failure_in_gradios_own_steps_becomes_a_sentence():
    contacts.install()
    with gr.Blocks() as demo:
        box = gr.Number()
        gr.Button().click(lambda x: x, [box, box], box)  # two inputs, one parameter: Gradio's own step fails
    demo.queue()
    fn = next(iter(demo.fns.values()))
    with pytest.raises(gr.Error) as raised:
        asyncio.run(demo.process_api(fn, [1], None))
    assert raised.value.print_exception is False and "This request has" in str(raised.value.message)


def test_bad_inputs_are_sentences_before_gradios_preprocessing():
    contacts.install()
    with pytest.raises(gr.Error, match="expected a number"):
        gr.Number(label="seed").preprocess("abc")
    with pytest.raises(gr.Error, match="finite"):
        gr.Slider(0, 1, label="ratio").preprocess(float("nan"))
    with pytest.raises(gr.Error, match="not one of the choices"):
        gr.Dropdown(["a"], label="model").preprocess("z" * 1000)
    assert gr.Number(precision=0).preprocess(1.5) == 1.5  # the handler names "whole numbers only"


def test_a_new_session_copies_no_block_configuration_and_keeps_state():
    contacts.install()
    with gr.Blocks() as demo:
        gr.Textbox("x" * 100_000)
        state = gr.State([0])
    holder = gr.state_holder.StateHolder()
    holder.set_blocks(demo)
    session = holder["s1"]
    session[state._id] = [5]
    assert holder["s1"][state._id] == [5]
    assert not [k for k, v in vars(session).items() if isinstance(v, dict) and len(v) > 5]  # no per-block copies


def test_an_example_click_is_chained_after_gradios_own():
    from vitviz.ui.serve.examples import after_example_click

    with gr.Blocks() as demo:
        box = gr.Image(type="filepath")
        examples = gr.Examples(examples=[["a.png"]], inputs=box)
        before = len(demo.fns)
        after_example_click(examples, fn=None, js="() => 1", queue=False)
        assert len(demo.fns) == before + 1
    assert getattr(examples, contacts.EXAMPLE_CLICK.attribute) is not None

