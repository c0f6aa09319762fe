"""The browser code is real files (vitviz/ui/js): read by name, placeholders filled, none left in Python."""

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from vitviz.ui import js

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "vitviz" / "ui" / "js"
SCRIPTS = sorted(p.stem for p in FOLDER.glob("*.js"))


def test_read_drops_the_header_and_fills_placeholders():
    code = js.read("url_tab", tab="swin")
    assert not code.startswith("//") and '"swin"' in code and "__TAB__" not in code
    assert js.read("image_publish", tab="mae", clear=True).count("true") == 1
    with pytest.raises(ValueError, match="needs values"):
        js.read("url_tab")
    with pytest.raises(ValueError, match="no placeholder"):
        js.read("url_mask", tab="mae")
    with pytest.raises(FileNotFoundError):
        js.read("no_such_script")
    with pytest.raises(ValueError):
        js.read("../app")


def test_page_goes_in_the_head_and_starts_once_loaded():
    options = js.page()
    assert options["head"].startswith("<script>") and options["head"].rstrip().endswith("</script>")
    assert "window.vitviz = {" in options["head"] and "vitviz.start()" in options["js"]
    assert options["head"].count("</script>") == 1  # the module itself never closes the tag


def test_one_owner_of_the_browser_state_and_no_polls():
    """Every script talks to window.vitviz (set once, by page.js); none keeps a timer that never stops."""
    for name in SCRIPTS:
        text = (FOLDER / f"{name}.js").read_text()
        assert "__vitviz" not in text and "setInterval" not in text, name
        assert ("window.vitviz = " in text) == (name == "page"), name


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_every_script_parses(tmp_path):
    """Event handlers are function expressions, js_on_load scripts function bodies, page.js and its part tour.js
    scripts."""
    bodies = {"mae_paint", "mae_pick", "heads_clicks", "attention_goto", "ablate_goto", "mae_live_rate",
              "mae_live_inpage"}
    for name in SCRIPTS:
        code = re.sub(r"__[A-Z][A-Z0-9_]*__", "null", js._source(name))
        if name in bodies:
            code = "function f(element, trigger, props, server, upload, watch) {\n" + code + "\n}"
        elif name not in ("page", "tour"):
            code = "const f = (\n" + code + "\n);"
        path = tmp_path / f"{name}.js"
        path.write_text(code)
        run = subprocess.run(["node", "--check", str(path)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, f"{name}.js: {run.stderr}"


def test_no_javascript_in_python_strings():
    """No string constant of vitviz/ui looks like browser code (arrow functions, document, window)."""
    looks_like_js = re.compile(r"=>|\bdocument\.|\bwindow\.|addEventListener|querySelector")
    found = []
    for path in sorted((ROOT / "vitviz" / "ui").rglob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if id(node) not in docstrings and isinstance(node, ast.Constant) and isinstance(node.value, str) and looks_like_js.search(node.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found
