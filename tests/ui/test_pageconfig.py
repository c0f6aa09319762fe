"""The page configuration carries what the page reads; the API description stays whole (vitviz.ui.serve.pageconfig)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gradio_client.utils import value_is_file

from vitviz.plots.windows import attention_mask_figure
from vitviz.ui.serve.pageconfig import EVENT_DEFAULTS, slim


@pytest.fixture(scope="module")
def demo():  # noqa: ANN201
    from vitviz.ui import build_demo, serve

    return serve.install(build_demo())


def test_components_carry_no_api_schema_but_files_are_still_files(demo) -> None:  # noqa: ANN001
    config = slim(demo.get_config_file())
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

    config = slim(demo.get_config_file())
    props = next(c["props"] for c in config["components"] if c.get("props", {}).get("elem_id") == "explain-class")
    assert [list(c) for c in props["choices"]] == [["predicted class (top-1)", "predicted"]] and props["value"] == "predicted"
    server = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "explain-class")
    # ImageNet's 1000 classes and dinov2-small-lab8's 8: a class of either model is accepted
    assert len(server.choices) == 1 + len(ev.all_class_names()) == 1009 and server.preprocess("macaw") == "macaw"
    assert server.preprocess("bird") == "bird"
    # the tab's first computation (page load / tab opening) gives the page the full list
    picker = update_maps(str(photo_path), ev.default_model(ev.model_choices()), "predicted", "all").target
    assert len(picker["choices"]) == 1 + 5 + 995 and picker["value"] == "predicted"


def test_the_example_photos_send_the_page_only_their_thumbnails(demo) -> None:  # noqa: ANN001
    """Each tab's example dataset: no copy of the image box's props, each photo a URL only; the server's
    examples keep the whole files (a click loads the photo from them)."""
    config = demo.get_config_file()
    datasets = [c["props"] for c in config["components"] if c["type"] == "dataset"]
    assert len(datasets) >= 8
    for props in datasets:
        assert props["component_props"] == [{}] and props["headers"] == []
        assert all(list(cell) == ["url"] and cell["url"].endswith(".jpg") for row in props["samples"] for cell in row)
        assert _compact(props) < 1200
    server = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "mae-examples")
    assert all(str(row[0]).endswith(".jpg") for row in server.raw_samples)


#: Bytes the page configuration may take. It was 300 KB, then 310 KB for the checkpoint doctor's section (MAE
#: tab) and the photo's-own-shape controls (306 KB served). The eight tabs' example photos then lost 10.7 KB
#: (:func:`vitviz.ui.shared_image.light`) and the Ablate tab came in (about 17 KB): 312.4 KB served, 310.5 KB
#: built in public mode with every model. The configuration's ``layout`` is sent twice (also as
#: ``page[""].layout``, which the page reads), 8.8 KB that could go. The MAE tab's in-page path (its hidden
#: model-view panel and path line) and the readable label rules then made it 316.4 KB served.
PAGE_BUDGET = 320_000


def _compact(config: dict) -> int:
    """Bytes of the configuration as the page receives it (compact JSON, UTF-8)."""
    return len(json.dumps(config, default=str, separators=(",", ":"), ensure_ascii=False).encode())


def test_the_page_configuration_is_under_the_budget(demo) -> None:  # noqa: ANN001
    """Issue 32: the configuration the app builds (uncompressed, compact JSON)."""
    assert _compact(slim(demo.get_config_file())) < PAGE_BUDGET


def test_the_page_configuration_is_under_the_budget_in_public_mode_with_every_model(monkeypatch) -> None:  # noqa: ANN001
    """Issue 32: the largest configuration a host builds: public mode, the package's dinov2-small on (all 14 tour
    steps, every picker's models). The tour's steps travel in the cached page module, not in the configuration."""
    from vitviz.ui import build_demo, js, serve, tour
    from vitviz.views.tour import steps_json

    monkeypatch.setenv("VITVIZ_PUBLIC", "1")
    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = slim(serve.install(build_demo()).get_config_file())
    assert _compact(config) < PAGE_BUDGET, _compact(config)
    steps = tour.steps_here()
    assert len(steps) == len(tour.default_steps()) and steps[0].title not in json.dumps(config, default=str)
    assert json.dumps(steps[0].title)[1:-1] in js.read("tour", steps=json.loads(steps_json(steps)))


def test_the_served_page_configuration_is_under_the_budget_and_the_page_module_is_a_cached_file(app_url) -> None:  # noqa: ANN001
    """Issue 32: ``/config`` as ``python app.py`` serves it (uncompressed). It carried the page module's 35 KB
    of JavaScript as ``head`` (328 KB); the module is now a file the page's HTML names, kept by browsers."""
    import httpx

    from vitviz.ui import js

    config = httpx.get(app_url + "config", headers={"accept-encoding": "identity"}, timeout=120)
    assert config.status_code == 200 and len(config.content) < PAGE_BUDGET
    assert "window.vitviz = {" not in config.text and not config.json().get("head")
    page = httpx.get(app_url, timeout=120).text
    # in the head, parser-inserted: it runs before Gradio's module script (deferred until the page is parsed)
    assert page.count(js.module_tag()) == 1 and page.index(js.module_tag()) < page.index("</head>")
    module = httpx.get(app_url + "vitviz/" + js.module_file(), timeout=60)
    assert module.status_code == 200 and module.text == js.module()
    assert "immutable" in module.headers["cache-control"] and "javascript" in module.headers["content-type"]


def test_private_events_carry_no_name_and_both_clients_still_read_them(demo, app_url) -> None:  # noqa: ANN001
    from gradio_client import Client

    config = slim(demo.get_config_file())
    events = config["dependencies"]
    private = [e for e in events if e.get("api_name") is False]
    assert len(private) > 100 and not any("api_visibility" in e for e in private)
    named = {e["api_name"] for e in events if isinstance(e.get("api_name"), str)}
    assert {"reconstruct", "sweep", "explain"} <= named
    streams = [e for e in events if e.get("connection") == "stream"]
    assert all(e.get("connection") in (None, "stream") for e in events)
    assert streams  # the live camera's stream keeps its connection
    # gradio_client sees the same endpoints: the public ones valid, the private ones refused
    client = Client(app_url, verbose=False)
    endpoints = client.endpoints.values()
    assert {e.api_name for e in endpoints if e.is_valid and e.api_visibility == "public"} >= {"/reconstruct", "/sweep"}
    assert all(not e.is_valid for e in endpoints if e.api_name is False)


def test_markdown_props_at_the_page_defaults_are_left_out(demo) -> None:  # noqa: ANN001
    from vitviz.ui.serve.pageconfig import TYPE_PROP_DEFAULTS

    config = slim(demo.get_config_file())
    markdowns = [c["props"] for c in config["components"] if c["type"] == "markdown"]
    assert markdowns
    for props in markdowns:
        for key, default in TYPE_PROP_DEFAULTS["markdown"].items():
            assert props.get(key, not default) is not default
    assert all("latex_delimiters" in props for props in markdowns)  # its page default differs: kept
