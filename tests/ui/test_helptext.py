"""The tabs' help files (vitviz/ui/helptext/*.md) and the page's styles (vitviz/ui/css/app.css)."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from vitviz.ui import css, helptext


def test_a_section_is_unwrapped_as_markdown_would_show_it() -> None:
    assert helptext._unwrap("one\ntwo  \nthree\n\nfour\nfive\n") == "one two  \nthree\n\nfour five"


def test_every_section_of_every_file_is_read_by_the_tabs() -> None:
    """No section is dead: each one is named by a ``helptext.read(..., "section")`` in vitviz/ui."""
    root = resources.files("vitviz.ui")
    source = "".join(p.read_text() for p in root.iterdir() if p.name.endswith(".py"))
    files = sorted(p.name[:-3] for p in (root / "helptext").iterdir() if p.name.endswith(".md"))
    assert files
    for name in files:
        for section in helptext.sections(name):
            assert re.search(rf'helptext\.read\((TAB_ID|"{name}"), "{section}"', source), (name, section)


def test_placeholders_must_be_filled_and_exist() -> None:
    assert "__NESTING__" in helptext.sections("mae")["pattern"]
    with pytest.raises(ValueError, match="needs values"):
        helptext.read("mae", "pattern")
    with pytest.raises(ValueError, match="no placeholder"):
        helptext.read("mae", "sweep", nesting="x")
    with pytest.raises(KeyError, match="no section"):
        helptext.read("mae", "nothing")
    with pytest.raises(ValueError):
        helptext.read("../mae", "sweep")


def test_the_page_styles_carry_no_comments() -> None:
    text = css.page()
    assert "/*" not in text and "#mae-panels" in text and "\n\n" not in text
