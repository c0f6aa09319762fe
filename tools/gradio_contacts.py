"""Lines of ``vitviz/`` that name Gradio's or Starlette's internals, or assign to their attributes.

``python tools/gradio_contacts.py`` prints each such line (``path:line: why``) and their count;
``tests/ui/test_serve_contacts.py`` holds the count to :data:`LIMIT` (each remaining line is a named contact
with a test of its own). A line counts when it

* imports a module of gradio, gradio_client or starlette outside their public surface (:data:`PUBLIC_MODULES`),
  or reaches one as an attribute (``gr.processing_utils``, ``gr.state_holder``, ...);
* reads or writes an attribute Gradio keeps for itself: a name of :data:`INTERNAL_NAMES` (the queue's state,
  an app's event table, per-session state, the page configuration's builders, patched methods), or any
  ``_name`` on an object other than ``self``/``cls``;
* assigns to an attribute of a class or module imported from gradio or starlette (``FileResponse.chunk_size = ...``);
* declares a contact (``Contact(...)``, :mod:`vitviz.ui.serve.contacts`: each replaces or reads one attribute);
* names one of :data:`INTERNAL_NAMES` in a string (``"process_api"``), except public keywords and common words.

It reads the files as text (``ast``); it imports nothing.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

#: The most lines of ``vitviz/`` that may name internals (issue 47).
LIMIT = 5
#: Modules whose names are public API (a listener's keywords, middleware, request/response types).
PUBLIC_MODULES = ("gradio", "gradio_client", "starlette.middleware", "starlette.middleware.gzip", "starlette.types",
                  "starlette.requests", "starlette.responses", "fastapi")
#: Roots of the packages whose internals are counted.
WATCHED = ("gradio", "gradio_client", "starlette")
#: Attribute names of Gradio's (and Starlette's) own state and machinery.
INTERNAL_NAMES = frozenset({
    "fns", "event_ids_to_events", "active_jobs", "event_queue_per_concurrency_id", "state_holder", "temp_file_sets",
    "default_config", "blocks_config", "config_values", "state_data", "process_api", "get_config_file",
    "get_api_info", "load_input_event", "sleep_when_free", "progress_update_sleep_when_free",
    "ANAYLTICS_CACHE_FREQUENCY", "chunk_size", "LocalContext", "save_pil_to_cache", "save_img_array_to_cache",
    "get_upload_folder", "get_blocks", "queueing", "processing_utils", "route_utils", "routes", "context", "utils",
    "state_session_capacity", "concurrency_id", "concurrency_limit", "get_events", "push", "preprocess",
    "SessionState", "api_visibility", "max_size", "iterators", "pending_streams", "value_is_file",
})
#: Of :data:`INTERNAL_NAMES`, those counted only when assigned to (reading them is public: a listener's keywords
#: come back as attributes, a component's ``preprocess`` is documented).
ASSIGNED_ONLY = frozenset({"concurrency_id", "concurrency_limit", "preprocess", "api_visibility", "max_size",
                           "state_session_capacity", "push", "utils", "context", "routes"})


def _public(module: str) -> bool:
    return module in PUBLIC_MODULES or not module.startswith(WATCHED)


def contacts(source: str) -> dict[int, str]:
    """``{line: why}`` of the lines of ``source`` (a Python module) that name internals."""
    tree = ast.parse(source)
    found: dict[int, str] = {}
    imported: set[str] = set()  # local names bound to something imported from a watched package
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(WATCHED):
                    imported.add((alias.asname or alias.name).split(".")[0])
                if not _public(alias.name):
                    found[node.lineno] = f"imports {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(WATCHED):
                imported.update(a.asname or a.name for a in node.names)
            if not _public(node.module):
                found[node.lineno] = f"imports from {node.module}"
            elif node.module in ("gradio", "gradio_client") and any(a.name in INTERNAL_NAMES - ASSIGNED_ONLY
                                                                    for a in node.names):
                found[node.lineno] = f"imports an internal module of {node.module}"
    stores = {id(t) for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
              for t in (node.targets if isinstance(node, ast.Assign) else [node.target])}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        stored = id(node) in stores
        base = node.value.id if isinstance(node.value, ast.Name) else None
        name = node.attr
        private = name.startswith("_") and not name.startswith("__") and base not in ("self", "cls")
        if name in INTERNAL_NAMES and (stored or name not in ASSIGNED_ONLY):
            found.setdefault(node.lineno, f"{'assigns' if stored else 'names'} .{name}")
        elif private and base not in (None,) and base in imported:
            found.setdefault(node.lineno, f"names {base}.{name}")
        elif private and base is None:
            found.setdefault(node.lineno, f"names ._{name.lstrip('_')} of an object")
        elif private and base not in imported and name in ("_queue", "_id", "_frontend"):
            found.setdefault(node.lineno, f"names .{name}")
        elif stored and base in imported:
            found.setdefault(node.lineno, f"assigns {base}.{name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg and node.arg.startswith("_") or (
                isinstance(node, ast.Constant) and node.value in ("_frontend",)):
            found.setdefault(node.lineno, "passes a private keyword")  # launch's _frontend
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "getattr", "hasattr", "setattr") and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            name = node.args[1].value
            if isinstance(name, str) and (name in INTERNAL_NAMES or name.startswith("_") and not name.startswith("__")):
                found.setdefault(node.lineno, f"{node.func.id}(..., {name!r})")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Contact":
            found[node.lineno] = "a named contact (vitviz.ui.serve.contacts)"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in INTERNAL_NAMES - ASSIGNED_ONLY - {
                "fns", "iterators"}:
            found.setdefault(node.lineno, f"names {node.value!r}")  # an attribute named by a string
    return found


def watched(source: str) -> bool:
    """True when ``source`` imports gradio, gradio_client or starlette (only such a module can touch them)."""
    return any(isinstance(n, ast.Import) and any(a.name.startswith(WATCHED) for a in n.names)
               or isinstance(n, ast.ImportFrom) and (n.module or "").startswith(WATCHED)
               for n in ast.walk(ast.parse(source)))


def scan(root: str | Path = "vitviz") -> list[tuple[str, int, str]]:
    """``(path, line, why)`` of every contact line of the Python files below ``root``."""
    out = []
    for path in sorted(Path(root).rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if not watched(source) and "ui" not in path.parts:  # vitviz/ui/ is the only home of Gradio code
            continue
        for line, why in sorted(contacts(source).items()):
            out.append((str(path), line, why))
    return out


def main(root: str = "vitviz") -> int:
    """Print every contact line and the count; exit status 1 above :data:`LIMIT`."""
    found = scan(root)
    for path, line, why in found:
        print(f"{path}:{line}: {why}")
    print(f"{len(found)} lines name Gradio/Starlette internals (limit {LIMIT})")
    return int(len(found) > LIMIT)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
