"""Every relative link in the README and the repository's other Markdown (:data:`DOCS`) points at a file that
exists, and at a heading there when it names one (anchors as GitHub makes them: lower case, punctuation dropped,
spaces to hyphens)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The Markdown a reader follows links in: the README, docs/, bench/, the model and data cards under assets/
#: and the help texts.
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "bench").glob("*.md")),
        *sorted((ROOT / "assets").rglob("*.md")), *sorted((ROOT / "vitviz").rglob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The text without fenced code blocks (a link-like string in code is not a link)."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


def anchors(path: Path) -> set[str]:
    """GitHub's anchor of every heading of a Markdown file."""
    out = set()
    for line in _prose(path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#+\s+(.*)", line)
        if m:
            title = re.sub(r"[`*_]", "", m.group(1)).strip().lower()
            out.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return out


def links(path: Path) -> list[str]:
    return [t for t in LINK.findall(_prose(path.read_text(encoding="utf-8"))) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for target in links(doc):
        file, _, anchor = target.partition("#")
        dest = (doc.parent / file).resolve() if file else doc
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(target)
    assert broken == []


def test_the_anchor_rule_matches_githubs() -> None:
    p = ROOT / "README.md"
    assert "quick-start" in anchors(p) and "your-own-checkpoint" in anchors(p) and "deploying" in anchors(p)
