"""The tabs' help: the prose each tab shows, Markdown files shipped as package data, read by section.

One file a tab (``vitviz/ui/helptext/<tab>.md``); a section starts at a line ``<!-- name -->``, and what
comes before the first section documents the file and is not shown. Inside a section, lines are
wrapped for reading: :func:`read` joins a paragraph's lines with spaces, keeps a line that ends in
two spaces as a Markdown hard break (``"  \\n"``) and blank lines as paragraph breaks. Values that
come from Python (a figure computed by the library) are placeholders ``__NAME__``, filled by
:func:`read` as in :mod:`vitviz.ui.js` (:func:`~vitviz.ui.js.fill`).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ..js import fill, package_text

_SECTION = re.compile(r"^<!-- ([a-z][a-z0-9_]*) -->$", re.M)


def _unwrap(body: str) -> str:
    """A section's text as shown: wrapped lines joined, hard breaks and paragraphs kept."""
    paragraphs = []
    for block in re.split(r"\n\s*\n", body.strip("\n")):
        text = ""
        for line in block.split("\n"):
            text = line if not text else text + ("\n" if text.endswith("  ") else " ") + line
        paragraphs.append(text.rstrip() if not text.endswith("  ") else text)
    return "\n\n".join(paragraphs)


@functools.lru_cache(maxsize=None)
def sections(name: str) -> dict[str, str]:
    """Every section of ``vitviz/ui/helptext/NAME.md``, placeholders unfilled.

    Raises:
        ValueError: a malformed name. FileNotFoundError: no such file.
    """
    parts = _SECTION.split(package_text(__name__, name, "md"))
    return {key: _unwrap(body) for key, body in zip(parts[1::2], parts[2::2])}


def read(name: str, section: str, **values: Any) -> str:
    """Section ``section`` of ``vitviz/ui/helptext/NAME.md``, its placeholders filled.

    Args:
        name: the file's name without ``.md`` (the tab's id).
        section: the section's name.
        values: ``key=value`` fills the section's ``__KEY__`` with ``str(value)``; every placeholder of
            the section must be given, and only those.

    Raises:
        KeyError: no such section. ValueError: a value for a placeholder the section lacks, or a
        placeholder left without a value.
    """
    found = sections(name)
    if section not in found:
        raise KeyError(f"vitviz/ui/helptext/{name}.md has no section {section!r} (it has {sorted(found)})")
    return fill(found[section], values, f"vitviz/ui/helptext/{name}.md, section {section!r},", str)
