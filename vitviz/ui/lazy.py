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

import json
from typing import Any

import gradio as gr


def opener(tab_id: str) -> gr.Number:
    """A tab's hidden opener (create it outside the tabs, so that it is always in the page)."""
    return gr.Number(value=0, visible="hidden", elem_id=f"open-{tab_id}", interactive=False, show_label=False,
                     container=False)


#: Browser code (inside an ``async`` handler that has defined ``label``) that waits until the page has
#: opened the URL's tab, then returns ``%s`` unless the tab labelled ``label`` is the one shown.
WAIT_FOR_TAB_JS = """for (let i = 0; i < 60 && window.__vitvizTabReady !== true; i++) await new Promise(r => setTimeout(r, 50));
  const shown = Array.from(document.querySelectorAll('[role=tab]')).find(b => b.getAttribute('aria-selected') === 'true');
  if (shown && shown.innerText.trim() !== label) return %s;"""


def open_js(tab_id: str, label: str) -> str:
    """Browser code for a tab's ``select`` (input and output: its opener): sets the opener to 1.

    Setting 1 again changes nothing, so only the first selection computes, and later ones
    send no request at all. Gradio also selects the first tab while the page mounts, before
    the page has opened the URL's tab: so the code first waits (up to 3 s) until the page
    script of :mod:`vitviz.ui.urlstate` has opened it (``__vitvizTabReady``), then opens
    this tab only if it is still the one shown. (A tab that shares the app's image opens
    through :func:`vitviz.ui.shared_image.select_js` instead, which also brings the image.)

    Args:
        tab_id: the tab's id (``mae``, ``patches``...).
        label: the text of the tab's button.
    """
    return """async (opened) => {
  const id = %s, label = %s;
  %s
  return [1];
}""" % (json.dumps(tab_id), json.dumps(label), WAIT_FOR_TAB_JS % "[opened]")


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
