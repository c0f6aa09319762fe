"""The vendored ONNX Runtime Web files are the ones its manifest records, pinned, MIT, shipped as package data."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "vitviz" / "web" / "vendor"


def test_manifest_matches_the_files():
    manifest = json.loads((VENDOR / "manifest.json").read_text())
    assert manifest["package"] == "onnxruntime-web" and manifest["license"] == "MIT"
    assert manifest["version"].count(".") == 2 and manifest["version"][0].isdigit()  # an exact, pinned version
    assert set(manifest["files"]) == {"ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"}
    for name, f in manifest["files"].items():
        data = (VENDOR / name).read_bytes()
        assert len(data) == f["bytes"] and hashlib.sha256(data).hexdigest() == f["sha256"], name
    assert manifest["total_bytes"] == sum(f["bytes"] for f in manifest["files"].values())
    assert f"ONNX Runtime Web v{manifest['version']}" in (VENDOR / "ort.wasm.min.mjs").read_text()[:300]
    assert "MIT License" in (VENDOR / manifest["license_file"]).read_text()
    assert sorted(p.name for p in VENDOR.iterdir()) == sorted([*manifest["files"], "manifest.json", "LICENSE.txt"])


def test_the_vendor_script_pins_the_recorded_version():
    from tools.vendor_ort_web import FILES, VERSION

    manifest = json.loads((VENDOR / "manifest.json").read_text())
    assert VERSION == manifest["version"] and set(FILES) == set(manifest["files"])


def test_pyproject_ships_the_page_and_the_graph():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert cfg["package-data"]["vitviz.web"] == ["static/*", "vendor/*"]
    assert "models/*.onnx" in cfg["package-data"]["vitviz._assets"]
