"""Write the static page: a self-contained folder that any static file server serves.

``python -m vitviz export-web DIR`` writes::

    DIR/index.html, page.css, mae_core.js, mae_page.js   the page (vitviz/web/static)
    DIR/sw.js                                            service worker: offline after the first visit
    DIR/mae_tab.js                                       the app's MAE tab computed in the page (same core)
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
PAGE_FILES = ("index.html", "page.css", "mae_core.js", "mae_page.js", "sw.js", "mae_tab.js")


def _package_folder(name: str) -> Path:
    return Path(str(resources.files("vitviz.web") / name))


def site_files(seeds: int | None = None) -> dict[str, Path | bytes]:
    """Every file of the static page: its path in the folder -> the file to copy, or the bytes to write.

    One list for :func:`export_web` and for the app's own ``/in-browser/`` route
    (:mod:`vitviz.ui.serve.in_browser`).
    """
    from ..core.images import DataConfig

    static = _package_folder("static")
    files: dict[str, Path | bytes] = {name: static / name for name in PAGE_FILES}
    for f in sorted(_package_folder("vendor").iterdir()):
        if f.is_file():
            files[f"vendor/{f.name}"] = f
    files[GRAPH_FILE] = graph_file()
    shown = []
    for f in sorted((assets_dir() / "examples").iterdir()):
        if f.suffix.lower() in (".jpg", ".png", ".md"):
            files[f"examples/{f.name}"] = f
            if f.suffix.lower() != ".md":
                shown.append({"title": f.stem, "file": f"examples/{f.name}"})
    shown.sort(key=lambda e: e["title"] != "chelsea")  # the app's default photo first
    tables = mask_tables(seeds=seeds) if seeds else mask_tables()
    files["masks.json"] = json.dumps(tables, separators=(",", ":")).encode()
    cfg = DataConfig()
    config = {"model": GRAPH_FILE, "name": WEB_MODEL, "size": cfg.input_size, "patch": 16,
              "mean": list(cfg.mean), "std": list(cfg.std), "examples": shown}
    files["config.json"] = json.dumps(config, indent=1).encode()
    files["files.json"] = json.dumps(sorted([*files, "files.json"]), indent=0).encode()
    return files


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
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} exists and is not a folder; give a folder to write the page into")
    files = site_files(seeds)
    for name, source in files.items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, bytes):
            target.write_bytes(source)
        else:
            shutil.copyfile(source, target)
    return sorted(Path(f) for f in files)
