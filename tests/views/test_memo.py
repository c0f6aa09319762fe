"""memo_view (vitviz.views.memo): default views are computed once and shared; anything uncertain is recomputed."""

import os

import pytest

from vitviz.views.memo import memo_view


def test_outputs_are_reused_for_equal_arguments_and_bounded():
    calls = []

    @memo_view(maxsize=2)
    def view(a, b, point):  # noqa: ANN001, ANN202
        calls.append((a, b))
        return [a, b, point]

    first = view("x", 1.0, {"r": 1, "c": 2})
    assert view("x", 1.0, {"c": 2, "r": 1}) == first and len(calls) == 1  # dicts keyed by content
    view("y", 1.0, None)
    view("z", 1.0, None)  # evicts ("x", ...)
    view("x", 1.0, {"r": 1, "c": 2})
    assert len(calls) == 4


def test_image_files_are_keyed_by_content_identity(tmp_path):
    calls = []

    @memo_view()
    def view(path):  # noqa: ANN001, ANN202
        calls.append(path)
        return open(path).read()

    f = tmp_path / "img.png"
    f.write_text("one")
    assert view(str(f)) == "one" and view(str(f)) == "one" and len(calls) == 1
    f.write_text("two!")  # a new file under the same name (other size and time)
    os.utime(f, ns=(1, 1))
    assert view(str(f)) == "two!" and len(calls) == 2
    twin = tmp_path / "upload-again.png"  # the same photo uploaded again: another path, same content
    twin.write_text("two!")
    assert view(str(twin)) == "two!" and len(calls) == 2


def test_errors_and_unknown_arguments_are_not_cached():
    calls = []

    @memo_view()
    def view(x):  # noqa: ANN001, ANN202
        calls.append(x)
        if x == "bad":
            raise ValueError("bad input")
        return object()

    with pytest.raises(ValueError):
        view("bad")
    with pytest.raises(ValueError):
        view("bad")
    thing = object()
    assert view(thing) is not view(thing) and calls.count(thing) == 2


def test_memo_view_keeps_update_values():
    """Gradio pops "value" out of an update dict (``gr.update(...)``) it sends; the cached one must keep it."""

    @memo_view()
    def view(x: int) -> tuple:
        return x, {"__type__": "update", "value": f"v{x}", "visible": True}

    first = view(1)
    first[1].pop("value")  # what gradio.blocks.postprocess_update_dict does
    again = view(1)
    assert again[1]["value"] == "v1" and again[0] == 1
