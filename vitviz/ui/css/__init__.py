"""The page's styles: ``app.css``, shipped as package data, handed to ``demo.launch(css=...)``.

Its ``/* ... */`` comments document each rule's purpose and are not sent (the page configuration,
``/config``, carries the styles, and every byte of it is paid by every visitor).
"""

from __future__ import annotations

import functools
import re
from importlib import resources


@functools.lru_cache(maxsize=None)
def page() -> str:
    """The styles of ``vitviz/ui/css/app.css`` without comments or blank lines."""
    text = re.sub(r"/\*.*?\*/", "", (resources.files(__name__) / "app.css").read_text(encoding="utf-8"), flags=re.S)
    return "\n" + "\n".join(line for line in text.splitlines() if line.strip()) + "\n"
