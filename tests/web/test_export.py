"""``python -m vitviz export-web DIR`` writes a self-contained folder (no browser: tests/web/test_static_page.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vitviz.web.export import export_web
from vitviz.web.graph import graph_metadata

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    export_web(out, seeds=3)
    return out


def test_the_folder_holds_the_page_runtime_model_examples_and_licences(folder):
    for name in ("index.html", "mae_page.js", "mae_core.js", "page.css", "sw.js", "mae-tiny.onnx", "masks.json",
                 "config.json", "files.json", "vendor/ort.wasm.min.mjs", "vendor/ort-wasm-simd-threaded.wasm",
                 "vendor/ort-wasm-simd-threaded.mjs", "vendor/LICENSE.txt", "vendor/manifest.json",
                 "examples/README.md", "examples/chelsea.jpg"):
        assert (folder / name).is_file(), name
    listed = json.loads((folder / "files.json").read_text())  # itself included
    on_disk = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert sorted(listed) == on_disk
    config = json.loads((folder / "config.json").read_text())
    for ex in config["examples"]:
        assert (folder / ex["file"]).is_file() and ex["file"].split("/")[-1] in (folder / "examples/README.md").read_text()
    assert config["examples"][0]["title"] == "chelsea"


def test_the_page_config_is_the_graph_s(folder):
    config = json.loads((folder / "config.json").read_text())
    meta = graph_metadata(folder / config["model"])
    assert str(config["size"]) == meta["vitviz.input_size"] and str(config["patch"]) == meta["vitviz.patch_size"]
    assert ",".join(map(str, config["mean"])) == meta["vitviz.mean"]
    assert ",".join(map(str, config["std"])) == meta["vitviz.std"]
    tables = json.loads((folder / "masks.json").read_text())
    assert tables["seeds"] == 3 and len(tables["random"]) == len(tables["block"]) == 3


def test_the_page_names_no_address_outside_the_folder(folder):
    for name in ("index.html", "mae_page.js", "mae_core.js", "page.css", "sw.js"):
        text = (folder / name).read_text()
        assert not re.search(r"https?://|[\"'(]//[a-z]", text), name  # no absolute or protocol-relative address


def test_cli_writes_the_folder_and_refuses_a_file(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("x")
    p = subprocess.run([sys.executable, "-m", "vitviz", "export-web", str(target)], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 1 and "not a folder" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "vitviz", "export-web", "--help"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and "static page" in p.stdout
