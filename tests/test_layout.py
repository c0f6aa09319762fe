"""The package's architecture, checked: imports point one way, no cycles, small modules,
no gradio outside the UI, no public name shadowing a submodule, training outside the runtime.

The rooms and their order (docs/architecture.md):
core -> models -> {mae, explain, embedding, compute} -> {render, plots} -> views -> ui (cli beside ui).
"""

from __future__ import annotations

import ast
import re
import importlib
import importlib.util
import pkgutil
from pathlib import Path

import pytest

import vitviz

ROOT = Path(vitviz.__file__).resolve().parent
#: Rank of each room: a module may import only rooms of lower or equal rank.
RANK = {
    "": 0, "core": 0,  # errors, settings, cache, assets, and pure arrays
    "models": 1,
    "mae": 2, "explain": 2, "embedding": 2, "compute": 2, "beit": 2, "features": 2, "probing": 2, "intervene": 2,
    "render": 3, "plots": 3,
    "views": 4,
    "ui": 5, "cli": 5,
}
#: Imports forbidden although the ranks would allow them.
FORBIDDEN = {("compute", "explain"), ("render", "models"), ("plots", "models"), ("render", "mae"), ("plots", "mae"),
             ("render", "embedding"), ("plots", "embedding")}
#: Rooms this check owns (other rooms are checked for cycles and gradio only).
SIZE_CHECKED = ("", "core", "models", "mae", "explain", "embedding", "compute", "beit", "features",
                "probing", "intervene", "render", "plots",
                "views", "ui", "cli")
MAX_LINES = 450


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        out[".".join(["vitviz", *parts])] = path
    return out


MODULES = _modules()


def _room(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return ""
    if len(parts) == 2:
        name = parts[1]
        return "cli" if name in ("cli", "__main__") else name if name in RANK else ""
    return parts[1]


def _imports(module: str, path: Path) -> set[str]:
    """Every vitviz module ``module`` imports (at module level or inside functions)."""
    tree = ast.parse(path.read_text())
    pkg = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rsplit(".", 1)[0] if "." in name else ""
            if name.startswith("vitviz") and name != module:
                found.add(name)
    return found


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def test_every_module_imports():
    for info in pkgutil.walk_packages(vitviz.__path__, "vitviz."):
        if info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)


def test_imports_point_one_way():
    wrong = []
    for module, targets in GRAPH.items():
        src = _room(module)
        if src == "training" or module == "vitviz":
            continue
        for t in targets:
            dst = _room(t)
            if dst == "training":
                wrong.append(f"{module} -> {t} (training is outside the runtime)")
            elif src in RANK and dst in RANK and (RANK[dst] > RANK[src] or (src, dst) in FORBIDDEN):
                wrong.append(f"{module} ({src}) -> {t} ({dst})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycle():
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_modules_are_small():
    big = {m: len(p.read_text().splitlines()) for m, p in MODULES.items() if _room(m) in SIZE_CHECKED}
    assert not {m: n for m, n in big.items() if n > MAX_LINES}


def test_only_the_ui_imports_gradio():
    for module, path in MODULES.items():
        if _room(module) == "ui":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(n.split(".")[0] == "gradio" for n in names), module


def test_no_public_name_shadows_a_submodule():
    for name in vitviz.__all__:
        assert importlib.util.find_spec(f"vitviz.{name}") is None, name
    import vitviz.explain.attention as module

    assert callable(vitviz.attention) and module.__name__ == "vitviz.explain.attention"


@pytest.mark.parametrize("rule", ["one LRU", "one capture", "one pixel mapping"])
def test_shared_machinery_exists_once(rule):
    sources = {m: p.read_text() for m, p in MODULES.items() if _room(m) in SIZE_CHECKED}
    if rule == "one LRU":
        owners = [m for m, s in sources.items() if "OrderedDict" in s]
        assert owners == ["vitviz.cache"]
    elif rule == "one capture":
        owners = [m for m, s in sources.items() if "register_forward_hook" in s]
        assert owners == ["vitviz.explain.capture"]
    else:
        owners = [m for m, s in sources.items() if re.search(r"int\(\w+ \* g[hw] //", s)]
        assert owners == ["vitviz.core.patches"]
