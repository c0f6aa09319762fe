"""Docstrings and comments in the package say what the code does and why, not the history of its changes."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HISTORY = re.compile(r"\b[Ss]ession [0-9]+|\b[Ii]ssue #?[0-9]+")


def test_the_package_names_no_session_or_issue():
    hits = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
            for path in sorted((ROOT / "vitviz").rglob("*")) if path.is_file() and path.suffix in {
                ".py", ".md", ".toml", ".js", ".css", ".html", ".json", ".txt"}
            for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            if HISTORY.search(line)]
    assert hits == []


def test_the_pattern_finds_what_it_should():
    assert HISTORY.search("measured in session 13") and HISTORY.search("(issue 34, bug 3)")
    assert not HISTORY.search("a browser session keeps its state") and not HISTORY.search("facebookresearch/dino#8")
