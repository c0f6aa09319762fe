"""Shareable state: the page URL carries the tab, model, ratio, seed, pattern and layer.

``?tab=mae&model=mae-tiny&ratio=0.6&seed=3&pattern=block`` opens that view;
``&presenter=1`` turns on the teaching layout. Reading is done on the server when
the page loads (every value validated, unknown ones ignored); writing is done in the
browser by :data:`WRITE_JS` whenever a control changes, with ``history.replaceState``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from ..core.masking import MAX_RATIO, PATTERNS
from ..models.registry import model_names


@dataclass(frozen=True)
class UrlState:
    """Validated values from the query string; ``None`` means "not given / invalid"."""

    tab: str | None = None
    model: str | None = None
    ratio: float | None = None
    seed: int | None = None
    pattern: str | None = None
    layer: int | None = None
    presenter: bool = False


def parse_query(params: Mapping[str, str], tabs: Collection[str] = ()) -> UrlState:
    """Validate query parameters; anything malformed is dropped, never raised.

    Args:
        params: the query string's parameters.
        tabs: the app's tab ids (:data:`vitviz.ui.app.TAB_IDS`); ``tab`` is kept only if it is one.
    """

    def number(key: str) -> float | None:
        try:
            v = float(params.get(key, "nan"))
        except (TypeError, ValueError):
            return None
        return v if math.isfinite(v) else None

    tab = params.get("tab")
    model = params.get("model")
    ratio = number("ratio")
    seed = number("seed")
    layer = number("layer")
    pattern = params.get("pattern")
    return UrlState(
        tab=tab if tab in tabs else None,
        model=model if model in model_names() else None,
        ratio=round(round(ratio / 0.05) * 0.05, 2) if ratio is not None and 0 <= ratio <= MAX_RATIO else None,
        seed=int(seed) if seed is not None and seed == int(seed) and 0 <= seed < 2**63 else None,
        pattern=pattern if pattern in PATTERNS else None,
        layer=int(layer) if layer is not None and layer == int(layer) and 0 <= layer < 1000 else None,
        presenter=params.get("presenter", "0").lower() in ("1", "true", "yes", "on"),
    )


#: Browser code run on every control change: writes the controls into the URL.
#: Its arguments are (model, ratio, seed, pattern) of the MAE tab.
WRITE_JS = """
(model, ratio, seed, pattern) => {
  const u = new URL(window.location.href);
  if (model) u.searchParams.set('model', model);
  if (ratio !== null && ratio !== undefined) u.searchParams.set('ratio', Number(ratio).toFixed(2));
  if (seed !== null && seed !== undefined) u.searchParams.set('seed', String(seed));
  if (pattern) u.searchParams.set('pattern', pattern);
  window.history.replaceState(null, '', u);
  return [model, ratio, seed, pattern];
}
"""


#: Browser code run when the attention layer changes: writes ``layer`` into the URL.
LAYER_JS = """
(layer) => {
  const u = new URL(window.location.href);
  if (layer !== null && layer !== undefined) u.searchParams.set('layer', String(Math.round(layer)));
  window.history.replaceState(null, '', u);
  return [layer];
}
"""


def tab_js(tab: str) -> str:
    """Browser code that records the selected tab in the URL (once the URL's own tab is open)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", str(tab)):
        raise ValueError(f"a tab id is lower-case letters, digits and _, got {tab!r}")
    return ("() => { if (!window.__vitvizTabReady) return; const u = new URL(window.location.href);"
            " u.searchParams.set('tab', '%s'); window.history.replaceState(null, '', u); }" % tab)


#: Opening the URL's tab, keyboard keys and the presenter layout (run by Gradio once the page has loaded);
#: see :func:`page_js`.
_PAGE_JS = """
() => {
  const labels = __TAB_LABELS__;
  const wanted = labels[new URL(window.location.href).searchParams.get('tab') || ''];
  window.__vitvizTabReady = false;
  let tries = 0;
  const openTab = setInterval(() => {
    const buttons = Array.from(document.querySelectorAll('[role=tab]'));
    const target = wanted && buttons.find(b => b.innerText.trim() === wanted);
    if (target || (!wanted && buttons.length) || ++tries > 100) {
      clearInterval(openTab);
      if (target) target.click();
      setTimeout(() => { window.__vitvizTabReady = true; }, 300);
    }
  }, 100);
  const step = (selector, delta) => {
    const el = document.querySelector(selector);
    if (!el || el.offsetParent === null) return false;  // only the visible tab's control
    const v = Math.min(Number(el.max), Math.max(Number(el.min), Number(el.value) + delta * Number(el.step || 1)));
    el.value = String(v);
    el.dispatchEvent(new Event('input', {bubbles: true}));
    el.dispatchEvent(new Event('change', {bubbles: true}));
    return true;
  };
  const presenter = () => new URL(window.location.href).searchParams.get('presenter');
  const apply = () => {
    const on = ['1', 'true', 'yes', 'on'].includes((presenter() || '').toLowerCase());
    document.body.classList.toggle('vitviz-presenter', on);
  };
  apply();
  document.addEventListener('keydown', (e) => {
    const t = e.target;
    if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT' || t.isContentEditable)) return;
    let done = false;
    if (e.key === 'ArrowRight' || e.key === ']') done = step('#mae-ratio input[type=range]', +1);
    else if (e.key === 'ArrowLeft' || e.key === '[') done = step('#mae-ratio input[type=range]', -1);
    else if (e.key === 'p' && e.altKey) {
      const u = new URL(window.location.href);
      u.searchParams.set('presenter', document.body.classList.contains('vitviz-presenter') ? '0' : '1');
      window.history.replaceState(null, '', u); apply(); done = true;
    }
    if (done) e.preventDefault();
  });
}
"""



def page_js(tab_labels: Mapping[str, str]) -> str:
    """The page's browser code, given ``{tab id: tab button label}`` (the browser opens the URL's tab by its label)."""
    return _PAGE_JS.replace("__TAB_LABELS__", json.dumps(dict(tab_labels)))

#: Styles of the presenter layout: bigger panels, explanations and secondary controls hidden.
CSS = """
.vitviz-presenter .vitviz-help, .vitviz-presenter .vitviz-secondary { display: none !important; }
.vitviz-presenter #mae-panels { flex-wrap: wrap !important; }
.vitviz-presenter #mae-panels > div { min-width: 31% !important; flex: 1 1 31% !important;
  height: auto !important; max-height: none !important; }
.vitviz-presenter #mae-panels .image-container { height: 380px !important; }
.vitviz-presenter #mae-panels img { height: 100% !important; width: 100% !important; max-height: 380px !important; object-fit: contain !important; }
.vitviz-presenter .prose { font-size: 1.15rem; }
"""
