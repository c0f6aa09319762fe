"""The CLI's ablate and logit-lens commands, on the embedded mae-tiny (offline) and a bad head."""

from __future__ import annotations

import json

import pytest

from vitviz.cli import main
from vitviz.intervene.commands import parse_heads, parse_tokens


def test_parsers():
    assert parse_heads("11.0, 11:3") == [(11, 0), (11, 3)]
    assert parse_tokens("cls,high-norm,3:5,17") == ["cls", "high-norm", (3, 5), 17]
    with pytest.raises(ValueError, match="LAYER.HEAD"):
        parse_heads("11")


def test_ablate_command_prints_before_after_and_a_ranking(tmp_path, capsys):
    out = tmp_path / "ab.json"
    assert main(["ablate", "chelsea", "--model", "mae-tiny", "--heads-off", "7.0,7.1", "--rank", "7",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "layer 7 head 0, layer 7 head 1 zeroed" in text and "error on the hidden patches" in text
    data = json.loads(out.read_text())
    assert data["heads"] == [[7, 0], [7, 1]] and len(data["ranking"]["rows"]) == 3
    assert data["hidden_error"]["after"] - data["hidden_error"]["before"] == pytest.approx(data["effect"])


def test_logit_lens_command_on_an_mae(tmp_path, capsys):
    out = tmp_path / "lens.json"
    assert main(["logit-lens", "chelsea", "--model", "mae-tiny", "--json", str(out)]) == 0
    assert "decoder layer 3  hidden-patch MSE" in capsys.readouterr().out
    assert len(json.loads(out.read_text())["hidden_error"]) == 4


def test_a_head_that_does_not_exist_is_a_user_error(capsys):
    assert main(["ablate", "chelsea", "--model", "mae-tiny", "--heads-off", "9.0"]) == 1
    assert "layers are 0..7 and heads 0..2" in capsys.readouterr().err
