"""The README's code examples run as written (offline, against a local app), and so do docs/api.md's; the README
stays short, with the two commands on its first screen and the Spaces header naming the hub models the app loads."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, re.S)
API_DOC = (ROOT / "docs" / "api.md").read_text()
API_BLOCKS = re.findall(r"```(\w+)\n(.*?)```", API_DOC, re.S)


def test_readme_has_spaces_header_and_the_two_commands():
    assert README.startswith("---\n") and "sdk: gradio" in README and "app_file: app.py" in README
    assert ("pip install -r requirements.txt && pip install --no-deps -r requirements-nodeps.txt && pip install -e . "
            "&& python app.py") in README
    assert "python3 -m venv" in README and "Python 3.11" in README and "build machine" not in README
    assert "python -m pip install -q --no-deps -r requirements-nodeps.txt" in (ROOT / "tests" / "setup.sh").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    test_cmd = "bash tests/setup.sh && python -m pytest -q tests"
    assert test_cmd in README and test_cmd in ci


def _anywhere() -> dict:
    """The environment of a run outside the checkout: vitviz importable as if installed (no cwd-relative paths)."""
    import os

    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


@pytest.mark.parametrize("blocks", [BLOCKS, API_BLOCKS], ids=["README", "docs/api.md"])
def test_python_api_example_runs(tmp_path, blocks):
    """The example runs from any directory (no path relative to the checkout)."""
    code = next(body for lang, body in blocks if lang == "python" and "vitviz.load_model" in body)
    assert "assets/" not in code
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_anywhere(), capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    assert "[4, 16, 64, 256]" in p.stdout


def test_cli_example_runs_from_any_directory(tmp_path):
    """The CLI lines name bundled examples, not assets/examples/... files that exist only in the checkout."""
    block = next(body for lang, body in BLOCKS if lang == "bash" and "python -m vitviz models" in body)
    assert "assets/" not in block
    line = next(ln for ln in block.replace("\\\n", " ").splitlines() if "vitviz reconstruct" in ln)
    args = line.split("#")[0].split()[3:]
    p = subprocess.run([sys.executable, "-m", "vitviz", *args], cwd=tmp_path, env=_anywhere(), capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "panels.png").is_file()


def test_gradio_client_example_runs(app_url, tmp_path):
    code = next(body for lang, body in BLOCKS if lang == "python" and "gradio_client" in body)
    code = code.replace("http://127.0.0.1:7860/", app_url) + "\nassert 'of 196 tokens' in metrics\n"
    # its own temp folder: gradio_client leaves an empty folder there per downloaded file (tools.appserver)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("blocks", [BLOCKS, API_BLOCKS], ids=["README", "docs/api.md"])
def test_cli_examples_parse(blocks):
    from vitviz.cli import build_parser

    block = next(body for lang, body in blocks if lang == "bash" and "python -m vitviz models" in body)
    for line in block.replace("\\\n", " ").splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("python -m vitviz"):
            build_parser().parse_args(line.split()[3:])


def test_readme_is_short_with_the_two_commands_on_its_first_screen():
    lines = README.splitlines()
    assert len(lines) <= 300
    first_screen = "\n".join(lines[:60])
    assert "pip install -e . && python app.py" in first_screen and "python -m pytest -q tests" in first_screen
    for section in ("## What each tab teaches", "## Your own checkpoint", "## Deploying"):
        assert section in README
    from vitviz.ui.app import PURPOSES  # every tab has its line, the Pretraining tab included
    assert len(re.findall(r"^- \*\*[^*]+\*\*: ", README.split("## What each tab teaches")[1].split("\n## ")[0],
                          re.M)) == len(PURPOSES)


def test_spaces_header_lists_the_hub_models_the_app_loads():
    from vitviz.models.registry import MODELS

    header = README.split("---")[1]
    listed = re.findall(r"^  - (\S+)$", header.split("models:\n", 1)[1], re.M)
    hub = {w.repo_id for spec in MODELS.values() for w in spec.sources if getattr(w, "repo_id", None)}
    assert sorted(listed) == sorted(hub)
