"""Lazy tabs: a page load computes only the tab it shows; every other tab computes when first opened.

Each tab gets an *opener*: a hidden number, kept in the page outside the tabs, that goes
from 0 to 1 once, when the tab is shown for the first time. A tab's ``build(page)``
receives a :class:`TabPage`, whose ``load`` listens to that opener instead of the page
load, so the tab modules stay unchanged: "when the page loads" becomes "when this tab is
first shown".

- On page load, the app's URL handler sets the opener of the tab the page opens on (the
  URL's ``tab``, else the first tab): only that tab computes.
- Selecting a tab runs :func:`open_js` in the browser (or, for a tab that shares the
  app's image, :func:`vitviz.ui.shared_image.select_js`): the first time, it sets that
  tab's opener (the tab's views compute, with their progress indicators); afterwards it
  changes nothing, so switching tabs back and forth costs no server call at all, and the
  ``memo_view`` caches keep a tab cheap for the next visitor.

Both paths set the value 1 (never increment), so a tab opened by the URL and then
selected by the page's own tab logic still computes once.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from . import js
from .common import hidden


def opener(tab_id: str) -> gr.Number:
    """A tab's hidden opener (create it outside the tabs, so that it is always in the page)."""
    return hidden(gr.Number, 0, f"open-{tab_id}")


def open_js(tab_id: str) -> str:
    """Browser code for a tab's ``select`` (input and output: its opener): sets the opener to 1, once the URL's
    tab is open and if this tab is still the one shown (``vitviz.lazy.open`` in ``vitviz/ui/js/page.js``). Setting
    1 again changes nothing, so only the first selection computes. (A tab that shares the app's image opens
    through :func:`vitviz.ui.shared_image.select_js` instead, which also brings the image.)"""
    return js.read("tab_open", tab=tab_id)


class TabPage:
    """What a tab's ``build`` sees as its page: the app, except that ``load`` means "first shown".

    Args:
        demo: the app.
        opened: the tab's :func:`opener`.
    """

    def __init__(self, demo: gr.Blocks, opened: gr.Number) -> None:
        self.demo = demo
        self.opened = opened

    def load(self, fn: Any, inputs: Any = None, outputs: Any = None, **kwargs: Any) -> Any:
        """Run ``fn`` when the tab is first shown (same arguments and result as ``Blocks.load``)."""
        return self.opened.change(fn, inputs, outputs, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.demo, name)
