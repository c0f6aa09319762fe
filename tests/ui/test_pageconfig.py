"""The page configuration carries what the page reads; the API description stays whole (vitviz.ui.serve.pageconfig)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gradio_client.utils import value_is_file

from vitviz.plots.windows import attention_mask_figure
from vitviz.ui.serve.pageconfig import EVENT_DEFAULTS


@pytest.fixture(scope="module")
def demo():  # noqa: ANN201
    from vitviz.ui import build_demo, serve

    return serve.install(build_demo())


def test_components_carry_no_api_schema_but_files_are_still_files(demo) -> None:  # noqa: ANN001
    config = demo.get_config_file()
    by_id = {c["id"]: c for c in config["components"]}
    for component in config["components"]:
        assert not {"api_info_as_input", "api_info_as_output", "example_inputs"} & set(component)
        assert "preserved_by_key" not in component.get("props", {})
    # gradio_client still learns which inputs of a public endpoint are files (it uploads them)
    reconstruct = next(fn for fn in demo.fns.values() if fn.api_name == "reconstruct")
    kinds = [value_is_file(by_id[b._id].get("api_info", {})) for b in reconstruct.inputs]
    assert kinds[0] is True and not any(kinds[1:])
    for event in config["dependencies"]:
        assert not any(k in event and event[k] == v and type(event[k]) is type(v) for k, v in EVENT_DEFAULTS.items())


def test_the_api_description_keeps_every_schema(demo) -> None:  # noqa: ANN001
    info = demo.get_api_info()
    image = info["named_endpoints"]["/reconstruct"]["parameters"][0]
    assert image["type"]["properties"]["path"]  # Gradio's full ImageData schema
    assert image["python_type"]["type"] == "filepath"
    assert image["example_input"]  # example inputs come from the components themselves


def test_the_swin_mask_figure_is_small_and_prints_plain_ints() -> None:
    a = 49
    blocked = np.zeros((a, a), dtype=bool)
    blocked[:20, 20:] = True
    positions = np.stack(np.meshgrid(np.arange(7, dtype=np.int64), np.arange(7, dtype=np.int64), indexing="ij"),
                         -1).reshape(-1, 2) + 24
    regions = np.repeat(np.arange(7) % 9, 7)
    text = attention_mask_figure(blocked, regions, positions, (7, 7), query_index=3).to_json()
    assert "np.int64" not in text and "token (24, 25)" in text
    # one label per row and per column, not one string per cell: the figure grows with A, not A*A
    fig = json.loads(text)["data"][0]
    assert len(fig["x"]) == len(fig["y"]) == a and "text" not in fig
