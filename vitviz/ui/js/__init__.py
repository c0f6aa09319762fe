"""The app's browser code: real ``.js`` files shipped as package data, read by name.

Every piece of JavaScript the page runs is a file of this folder. ``page.js`` is the page
module, the one owner of the browser state (``window.vitviz``): it goes in the page head
and is started once the app has loaded (:func:`page`, keyword arguments of
``demo.launch``). Every other file is one event handler (``js=`` of an event: a function
expression) or one ``js_on_load`` of a ``gr.HTML`` (a function body), and calls into the
page module. Python hands them to Gradio's supported hooks with :func:`read`; no
JavaScript is written in Python strings.

A file's leading ``//`` comment lines document it and are not sent to the page. Values
that come from Python (a tab id, the panel kinds) are placeholders ``__NAME__`` in the
file, filled with JSON by :func:`read`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from importlib import resources
from typing import Any

from ...views.tour import steps_json

_PLACEHOLDER = re.compile(r"__[A-Z][A-Z0-9_]*__")


def package_text(package: str, name: str, suffix: str) -> str:
    """The text of ``NAME.SUFFIX`` shipped in ``package`` (``vitviz.ui.js``, ``vitviz.ui.helptext``).

    Raises:
        ValueError: a name that is not lower-case letters, digits and _. FileNotFoundError: no such file.
    """
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name or ""):
        raise ValueError(f"a file name here is lower-case letters, digits and _ (no .{suffix}), not {name!r}")
    path = resources.files(package) / f"{name}.{suffix}"
    if not path.is_file():
        raise FileNotFoundError(f"{package.replace('.', '/')}/{name}.{suffix} does not exist")
    return path.read_text(encoding="utf-8")


def fill(text: str, values: dict[str, Any], where: str, encode: Callable[[Any], str] = json.dumps) -> str:
    """``text`` with each ``__KEY__`` replaced by ``encode(value)`` for ``key=value`` in ``values``.

    Raises:
        ValueError: a value for a placeholder ``text`` lacks, or a placeholder left without a value (``where``
            names the text in the message).
    """
    for key, value in values.items():
        mark = f"__{key.upper()}__"
        if mark not in text:
            raise ValueError(f"{where} has no placeholder {mark}")
        text = text.replace(mark, encode(value))
    left = _PLACEHOLDER.findall(text)
    if left:
        raise ValueError(f"{where} needs values for {sorted(set(left))}")
    return text


@functools.lru_cache(maxsize=None)
def _source(name: str) -> str:
    lines = package_text(__name__, name, "js").splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("//")):
        lines.pop(0)  # the file's header comment: documentation, not sent
    return "\n".join(lines).strip() + "\n"


def read(name: str, **values: Any) -> str:
    """The code of ``vitviz/ui/js/NAME.js``, its placeholders filled.

    Args:
        name: the file's name without ``.js``.
        values: ``key=value`` fills the file's ``__KEY__`` with ``json.dumps(value)``; every
            placeholder of the file must be given, and only those.

    Raises:
        FileNotFoundError: no such script.
        ValueError: a malformed name, a value for a placeholder the file lacks, or a
            placeholder left without a value.
    """
    return fill(_source(name), values, f"vitviz/ui/js/{name}.js")


#: The live camera's stamp placeholder (vitviz.ui.mae_live): a value the page replaces with its clock
#: in every request that carries it (page.js, part ``live``).
LIVE_STAMP = "vitviz-live-sent"


@functools.lru_cache(maxsize=None)
def module() -> str:
    """The page module's code: ``page.js``, then its part ``tour.js`` (a classic script, run before Gradio's)
    with the tour's steps (:func:`vitviz.ui.tour.steps_here`, read once per process)."""
    from .. import tour

    return read("page", live_stamp=LIVE_STAMP) + read("tour", steps=json.loads(steps_json(tour.steps_here())))


@functools.lru_cache(maxsize=None)
def module_file() -> str:
    """The page module's file name when served as a file: ``page.<hash>.js``, the hash of its code, so a
    browser may keep it for good (``Cache-Control: immutable``) and a new version gets a new name."""
    import hashlib

    return f"page.{hashlib.sha256(module().encode()).hexdigest()[:16]}.js"


#: Where the served app answers the page module (``vitviz.ui.serve.pageconfig.PageConfig``): MODULE_PATH + module_file().
MODULE_PATH = "/vitviz/"


def module_tag() -> str:
    """The ``<script>`` element that loads the served page module, written into the page's HTML head
    (relative to the page, as Gradio's own scripts are, so it follows a root path behind a proxy)."""
    return f'<script src=".{MODULE_PATH}{module_file()}"></script>'


def page(inline: bool = True) -> dict[str, str]:
    """Keyword arguments of ``demo.launch`` that load and start the page module.

    Args:
        inline: True: ``head`` holds the module as inline text (about 35 KB, carried by the page
            configuration, ``/config``, and by every page's HTML); for an app served without vitviz's
            middleware (tests' single tabs). False: no ``head``; the served app's middleware
            (:func:`vitviz.ui.serve.middleware`) answers the module as a cached file and writes
            :func:`module_tag` into the page's HTML, where it runs before Gradio's code.

    ``js`` starts the module once the app has loaded.
    """
    start = {"js": read("start")}
    return {"head": "<script>\n" + module() + "</script>\n", **start} if inline else start
