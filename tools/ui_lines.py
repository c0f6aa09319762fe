"""Lines of ``vitviz/ui/`` outside ``serve/`` (issue 27's figure), per file, by kind.

``python tools/ui_lines.py`` prints a table: each Python file's lines, split into layout (the body of
``build``/``wire`` functions), handlers and helpers, contract dataclasses, module constants, imports,
docstrings, comments and blank lines, and two totals: every line (the figure issue 27 states, the same as
``find vitviz/ui -name '*.py' -not -path '*/serve/*' | xargs cat | wc -l``) and code lines (every line less
docstrings, comments and blank lines). It reads the files as text; it imports nothing.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

KINDS = ("layout", "handlers", "contracts", "constants", "imports", "docstrings", "comments", "blank")


def _is_docstring(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def kinds(source: str) -> dict[str, int]:
    """How many lines of ``source`` (a Python module) are of each of :data:`KINDS`."""
    tree = ast.parse(source)
    lines = source.splitlines()
    kind = ["constants"] * (len(lines) + 1)  # 1-based
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        if isinstance(node, ast.FunctionDef) and node.name.startswith(("build", "wire")):
            k = "layout"
        elif isinstance(node, ast.ClassDef) and node.decorator_list:
            k = "contracts"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            k = "handlers"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            k = "imports"
        elif _is_docstring(node):
            k = "docstrings"
        else:
            k = "constants"
        for i in range(first, node.end_lineno + 1):
            kind[i] = k
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body \
                and _is_docstring(node.body[0]):
            for i in range(node.body[0].lineno, node.body[0].end_lineno + 1):
                kind[i] = "docstrings"
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            kind[i] = "blank"
        elif line.strip().startswith("#"):
            kind[i] = "comments"
    counts = dict.fromkeys(KINDS, 0)
    for k in kind[1:]:
        counts[k] += 1
    return counts


def main(root: str = "vitviz/ui") -> None:
    """Print the table for the Python files below ``root``, outside ``serve/``."""
    files = sorted(p for p in Path(root).rglob("*.py") if "serve" not in p.relative_to(root).parts)
    total = dict.fromkeys(KINDS, 0)
    print("| file | lines | code | " + " | ".join(KINDS) + " |")
    print("|---" * (len(KINDS) + 3) + "|")
    for path in files:
        counts = kinds(path.read_text(encoding="utf-8"))
        for k in KINDS:
            total[k] += counts[k]
        code = sum(counts.values()) - counts["docstrings"] - counts["comments"] - counts["blank"]
        print(f"| {path.relative_to(root)} | {sum(counts.values())} | {code} | "
              + " | ".join(str(counts[k]) for k in KINDS) + " |")
    code = sum(total.values()) - total["docstrings"] - total["comments"] - total["blank"]
    print(f"| **all {len(files)} files** | **{sum(total.values())}** | **{code}** | "
          + " | ".join(str(total[k]) for k in KINDS) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:])
