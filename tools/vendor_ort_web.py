"""Vendor ONNX Runtime Web (the npm package, pinned) into ``vitviz/web/vendor``.

Takes the package with ``npm pack onnxruntime-web@VERSION`` from the npm registry (npm checks
the tarball's integrity) and copies only what the page needs for the WASM backend:

    ort.wasm.min.mjs               the JS API, WASM backend only (ES module)
    ort-wasm-simd-threaded.mjs     the Emscripten loader of the runtime
    ort-wasm-simd-threaded.wasm    the runtime: SIMD; multi-threaded when the page is
                                   cross-origin isolated (COOP/COEP), single-threaded otherwise

Since 1.19 ONNX Runtime Web ships one SIMD+threads WASM that also runs with one thread, so there is
no separate non-threaded file to take. It writes ``manifest.json`` (version, licence, registry
integrity, each file's size and sha256) and ``LICENSE.txt`` beside them; tests/web/test_vendor.py
checks the files against the manifest.

Usage: ``python tools/vendor_ort_web.py [--version 1.31.1]`` (needs ``npm`` and the npm registry).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "vitviz" / "web" / "vendor"
VERSION = "1.31.1"
FILES = ("ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm")

# The package declares "license": "MIT" and ships no licence file; its JS headers say
# "Copyright (c) Microsoft Corporation ... Licensed under the MIT License". This is the MIT text
# of microsoft/onnxruntime's LICENSE with that copyright line.
MIT = """MIT License

Copyright (c) Microsoft Corporation

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


def vendor(version: str = VERSION, out: Path = VENDOR) -> dict:
    """Download, unpack and copy the files; return the manifest written to ``out/manifest.json``."""
    with tempfile.TemporaryDirectory() as tmp:
        packed = subprocess.run(["npm", "pack", f"onnxruntime-web@{version}", "--json"], cwd=tmp, check=True,
                                capture_output=True, text=True)
        info = json.loads(packed.stdout)[0]
        with tarfile.open(Path(tmp) / info["filename"]) as tar:
            tar.extractall(tmp, filter="data")
        pkg = Path(tmp) / "package"
        meta = json.loads((pkg / "package.json").read_text())
        if meta.get("license") != "MIT" or meta.get("version") != version:
            raise SystemExit(f"unexpected package: version {meta.get('version')}, licence {meta.get('license')}")
        out.mkdir(parents=True, exist_ok=True)
        for old in out.iterdir():
            old.unlink()
        files = {}
        for name in FILES:
            shutil.copyfile(pkg / "dist" / name, out / name)
            data = (out / name).read_bytes()
            files[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    manifest = {"package": "onnxruntime-web", "version": version, "license": "MIT",
                "license_file": "LICENSE.txt", "source": f"npm pack onnxruntime-web@{version} (registry.npmjs.org)",
                "integrity": info.get("integrity"), "files": files,
                "total_bytes": sum(f["bytes"] for f in files.values())}
    (out / "LICENSE.txt").write_text(MIT)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default=VERSION)
    args = ap.parse_args(argv)
    manifest = vendor(args.version)
    for name, f in manifest["files"].items():
        print(f"{f['bytes']:>10}  {name}")
    print(f"{manifest['total_bytes']:>10}  total (onnxruntime-web {manifest['version']}, {manifest['license']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
