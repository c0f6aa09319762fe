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


def test_the_class_picker_sends_its_1000_classes_with_its_first_update_not_in_the_page(demo, photo_path) -> None:  # noqa: ANN001
    """Issue 32: the page configuration is under 300 KB; the Explain class picker's 1,001 choices (27 KB)
    are not in it, yet the server's component keeps them all, so a picked class is still accepted."""
    from vitviz.ui.explain_tab import update_maps
    from vitviz.views import explain as ev

    config = demo.get_config_file()
    props = next(c["props"] for c in config["components"] if c.get("props", {}).get("elem_id") == "explain-class")
    assert [list(c) for c in props["choices"]] == [["predicted class (top-1)", "predicted"]] and props["value"] == "predicted"
    server = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "explain-class")
    assert len(server.choices) == 1001 and server.preprocess("macaw") == "macaw"
    # the tab's first computation (page load / tab opening) gives the page the full list
    *_, picker = update_maps(str(photo_path), ev.default_model(ev.model_choices()), "predicted", "all")
    assert len(picker["choices"]) == 1 + 5 + 995 and picker["value"] == "predicted"
