"""The MAE tab's page listeners report each problem once, in words (issue 15 items 5-7).

A non-image upload, a removed image, a negative or fractional seed: the view shows one
warning toast and the message where the numbers were, with the panels cleared (no
"Error" badges above stale numbers, no broken panels); the sweep beside it stays silent.
The message for a non-image file is the CLI's.
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr
import pytest

from vitviz.ui import mae_tab
from vitviz.views.mae import NO_COMPARE

ROOT = Path(__file__).resolve().parents[2]
PHOTO = str(ROOT / "assets" / "examples" / "chelsea.jpg")


@pytest.fixture()
def toasts(monkeypatch) -> list[str]:
    shown: list[str] = []
    monkeypatch.setattr(gr, "Warning", lambda message, *a, **k: shown.append(message))
    return shown


def _view(image, seed=0):  # noqa: ANN001
    return mae_tab.update_view(mae_tab.Controls(image, "mae-tiny", 0.75, seed, "random", False, None,
                                                NO_COMPARE))


@pytest.mark.parametrize("case", ["not an image", "no image", "negative seed", "fractional seed"])
def test_one_message_per_problem_and_no_stale_panels(tmp_path, toasts, case):
    image, seed, expected = PHOTO, 0, ""
    if case == "not an image":
        image = str(tmp_path / "notes.png")
        Path(image).write_text("text renamed .png")
        expected = "not an image in a format vitviz can read"
    elif case == "no image":
        image, expected = None, "Drop an image first"
    elif case == "negative seed":
        seed, expected = -3, "whole number"
    else:
        seed, expected = 1.5, "whole number"
    out = _view(image, seed)  # never raises: no "Error" badges on the panels
    # the old panels do not stay
    assert (out.original, out.masked, out.reconstruction, out.pasted, out.error) == (None,) * 5
    assert expected in out.metrics and not out.metrics.startswith("Error")
    # one toast; none for an empty box (cleared, or emptied by a refused upload, whose refusal was the message):
    # the line where the numbers were says it
    shown = 0 if case == "no image" else 1
    assert len(toasts) == shown and all(expected in t for t in toasts)
    sweep = mae_tab.page_sweep(image, "mae-tiny", seed, "random", progress=lambda *a, **k: None)
    assert sweep == mae_tab.Sweep(None, [], None) and len(toasts) == shown  # the sweep beside it stays silent


def test_the_page_says_what_the_cli_says(tmp_path, toasts, capsys):
    from vitviz.cli import main

    bad = tmp_path / "notes.png"
    bad.write_text("text renamed .png")
    assert main(["reconstruct", str(bad), "--out", str(tmp_path / "out")]) == 1
    cli = capsys.readouterr().err.strip().removeprefix("error: ")
    _view(str(bad))
    assert cli and cli in toasts[0]


def test_a_whole_number_box_passes_fractions_to_the_handler_unrounded():
    from vitviz.ui.serve import contacts

    contacts.install()
    seed = gr.Number(value=0, precision=0, label="Seed")
    assert seed.preprocess(1.5) == 1.5  # Gradio alone rounded it to 2 and used seed 2
    assert seed.preprocess(2) == 2
    with pytest.raises(gr.Error, match="expected a number"):
        seed.preprocess("1")


def test_a_good_view_still_works(toasts):
    out = _view(PHOTO)
    assert out.original is not None and "MSE" in out.metrics and toasts == []
