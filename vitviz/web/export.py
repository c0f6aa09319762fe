"""Write the static page: a self-contained folder that any static file server serves.

``python -m vitviz export-web DIR`` writes::

    DIR/index.html, page.css, mae_core.js, mae_page.js   the page (vitviz/web/static)
    DIR/sw.js                                            service worker: offline after the first visit
    DIR/vendor/                                          ONNX Runtime Web (JS, WASM, licence, manifest)
    DIR/mae-tiny.onnx                                    the graph (assets/models, tools/export_onnx.py)
    DIR/masks.json                                       hiding orders of seeds 0..99 (vitviz.web.graph)
    DIR/config.json                                      sizes, mean/std, the example photos
    DIR/examples/                                        the example photos and their licences (README.md)
    DIR/files.json                                       every file above, for the service worker

No Python runs when the page is served; every request stays inside the folder.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

from ..assets import assets_dir
from .graph import GRAPH_FILE, WEB_MODEL, graph_file, mask_tables

#: The page's own files, copied from the package data ``vitviz/web/static``.
PAGE_FILES = ("index.html", "page.css", "mae_core.js", "mae_page.js", "sw.js")


def _package_folder(name: str) -> Path:
    return Path(str(resources.files("vitviz.web") / name))


def export_web(out: Path | str, seeds: int | None = None) -> list[Path]:
    """Write the static page into ``out`` (created; existing files of the same names are replaced).

    Args:
        out: the folder to write.
        seeds: how many seeds' masks the page carries (default :data:`vitviz.web.graph.SEEDS`).

    Returns:
        The files written, relative to ``out``, sorted.

    Raises:
        ValueError: ``out`` exists and is not a folder.
    """
    from ..core.images import DataConfig

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} exists and is not a folder; give a folder to write the page into")
    out.mkdir(parents=True, exist_ok=True)
    static = _package_folder("static")
    for name in PAGE_FILES:
        shutil.copyfile(static / name, out / name)
    vendor = out / "vendor"
    vendor.mkdir(exist_ok=True)
    for f in _package_folder("vendor").iterdir():
        if f.is_file():
            shutil.copyfile(f, vendor / f.name)
    shutil.copyfile(graph_file(), out / GRAPH_FILE)
    examples = out / "examples"
    examples.mkdir(exist_ok=True)
    shown = []
    for f in sorted((assets_dir() / "examples").iterdir()):
        if f.suffix.lower() in (".jpg", ".png", ".md"):
            shutil.copyfile(f, examples / f.name)
            if f.suffix.lower() != ".md":
                shown.append({"title": f.stem, "file": f"examples/{f.name}"})
    shown.sort(key=lambda e: e["title"] != "chelsea")  # the app's default photo first
    tables = mask_tables(seeds=seeds) if seeds else mask_tables()
    (out / "masks.json").write_text(json.dumps(tables, separators=(",", ":")))
    cfg = DataConfig()
    config = {"model": GRAPH_FILE, "name": WEB_MODEL, "size": cfg.input_size, "patch": 16,
              "mean": list(cfg.mean), "std": list(cfg.std), "examples": shown}
    (out / "config.json").write_text(json.dumps(config, indent=1))
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and p.name != "files.json")
    (out / "files.json").write_text(json.dumps(files, indent=0))
    return sorted(Path(f) for f in [*files, "files.json"])
