"""``python app.py --model NAME=PATH`` (issue 31): each file read before the app is built; a bad one, or
any --model on a public host, stops the start with a sentence (exit 2)."""

from __future__ import annotations

import argparse

import pytest
import torch

from vitviz.ui.starter import build_parser, start_options

from ..models.local_fixtures import vit_state_dict


pytestmark = pytest.mark.usefixtures("no_own_models")


def _file(tmp_path):
    path = tmp_path / "deit.pth"
    torch.save({"model": vit_state_dict(0, d=128, depth=1, patch=16, grid=2, classes=3, dist=True),
                "args": argparse.Namespace(model="deit_mine")}, path)
    return path


def test_models_are_registered_and_described(tmp_path, capsys, monkeypatch):
    import os

    path = _file(tmp_path)
    assert start_options(["--model", f"mine={path}", "--mcp"]) == {"mcp_server": True}
    assert os.environ["VITVIZ_MODELS"] == f"mine={path}"
    assert f"your checkpoint mine: {path} -> deit" in capsys.readouterr().err
    from vitviz.views.attention import model_choices

    assert (f"mine (your checkpoint: {path})", "mine") in model_choices()
    assert "--model NAME=PATH" in build_parser().format_help()


@pytest.mark.parametrize("problem", ["missing", "foreign", "public", "taken"])
def test_a_bad_model_stops_the_start_with_a_sentence(tmp_path, capsys, monkeypatch, problem):
    path = _file(tmp_path)
    value = f"mine={path}"
    if problem == "missing":
        value, sentence = f"mine={tmp_path / 'nope.pth'}", "No such file"
    elif problem == "foreign":
        torch.save({"conv1.weight": torch.zeros(2, 3, 3, 3)}, path)
        sentence = "fits no layout vitviz knows"
    elif problem == "public":
        monkeypatch.setenv("VITVIZ_PUBLIC", "1")
        sentence = "a public host never loads checkpoints from its own disk"
    else:
        value, sentence = f"mae-tiny={path}", "mae-tiny is the name of a registered model"
    with pytest.raises(SystemExit) as exit_:
        start_options(["--model", value])
    assert exit_.value.code == 2
    assert sentence in capsys.readouterr().err
    import os

    assert "VITVIZ_MODELS" not in os.environ
