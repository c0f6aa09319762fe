"""Shareable state: the page URL carries the tab, model, ratio, seed, pattern and layer.

``?tab=mae&model=mae-tiny&ratio=0.6&seed=3&pattern=block`` opens that view;
``&presenter=1`` turns on the teaching layout; ``&mask=14x14.<hex>`` restores a painted
mask (:func:`encode_mask`). Reading is done on the server when
the page loads (every value validated, unknown ones ignored); writing is done in the
browser by :data:`WRITE_JS` whenever a control changes, with ``history.replaceState``.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
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
    mask: np.ndarray | None = None  # a painted (gh, gw) bool mask, True = hidden


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
        mask=decode_mask(params.get("mask")),
    )


#: Largest painted grid the URL may carry (a 448-px image at patch 8 is 56 x 56).
MAX_MASK_SIDE = 64


def encode_mask(mask: np.ndarray) -> str:
    """A painted mask as a short URL value: ``"<gh>x<gw>.<hex>"``.

    The bits are the patches in row-major order (1 = hidden), four to a hexadecimal digit,
    the first patch in the digit's most significant bit, zero-padded at the end: a 14 x 14
    mask is 49 digits.
    """
    m = np.asarray(mask, dtype=bool)
    if m.ndim != 2 or m.size == 0:
        raise ValueError(f"a mask is a non-empty (rows, cols) grid, got shape {m.shape}")
    bits = np.concatenate([m.reshape(-1), np.zeros((-m.size) % 4, dtype=bool)]).reshape(-1, 4)
    digits = bits.astype(np.uint8) @ np.array([8, 4, 2, 1], dtype=np.uint8)
    return f"{m.shape[0]}x{m.shape[1]}." + "".join("0123456789abcdef"[int(d)] for d in digits)


def decode_mask(text: str | None) -> np.ndarray | None:
    """The mask of :func:`encode_mask`, or None for anything malformed (never raises)."""
    match = re.fullmatch(r"(\d{1,3})x(\d{1,3})\.([0-9a-f]+)", text or "")
    if not match:
        return None
    gh, gw, digits = int(match.group(1)), int(match.group(2)), match.group(3)
    if not (1 <= gh <= MAX_MASK_SIDE and 1 <= gw <= MAX_MASK_SIDE) or len(digits) != -(-gh * gw // 4):
        return None
    bits = np.array([[int(d, 16) >> k & 1 for k in (3, 2, 1, 0)] for d in digits], dtype=bool).reshape(-1)
    if bits[gh * gw:].any():
        return None  # padding must be zero
    return bits[: gh * gw].reshape(gh, gw)


#: Browser code run on every control change: writes the controls into the URL.
#: Its arguments are (model, ratio, seed, pattern) of the MAE tab.
WRITE_JS = """
(model, ratio, seed, pattern) => {
  // Written once the controls rest for 250 ms, not at every slider stop: each change of the
  // address makes Chromium fetch the page's icon again, a request to the server per stop.
  clearTimeout(window.__vitvizUrlTimer);
  window.__vitvizUrlTimer = setTimeout(() => {
    const u = new URL(window.location.href);
    if (model) u.searchParams.set('model', model);
    if (ratio !== null && ratio !== undefined) u.searchParams.set('ratio', Number(ratio).toFixed(2));
    if (seed !== null && seed !== undefined) u.searchParams.set('seed', String(seed));
    if (pattern) u.searchParams.set('pattern', pattern);
    window.history.replaceState(null, '', u);
  }, 250);
  return [model, ratio, seed, pattern];
}
"""


#: Browser code run when the painted mask changes: ``mask=`` in the URL while painting, gone otherwise.
#: Its argument is :func:`encode_mask`'s text ("" when the mask is the slider's).
MASK_JS = """
(code) => {
  const u = new URL(window.location.href);
  if (code) u.searchParams.set('mask', code); else u.searchParams.delete('mask');
  window.history.replaceState(null, '', u);
  return [code];
}
"""


#: Paint brush of the MAE tab (``js_on_load`` of a hidden ``gr.HTML``): a click or a drag on the
#: Original panel sends the points it crossed, as fractions of the image, in the component's value
#: (``{"points": [[x, y], ...], "t": time}``), which fires its ``change``; the server maps them to patches.
PAINT_JS = r"""
const attach = () => {
  const panel = document.getElementById('panel-original');
  if (!panel) { setTimeout(attach, 300); return; }
  if (panel.__vitvizPaint) return;
  panel.__vitvizPaint = true;
  let points = null, trail = [];
  const where = (e) => {
    const img = panel.querySelector('img');
    if (!img || !img.naturalWidth) return null;
    const r = img.getBoundingClientRect();
    const s = Math.min(r.width / img.naturalWidth, r.height / img.naturalHeight);
    const w = img.naturalWidth * s, h = img.naturalHeight * s;
    const x0 = r.left + (r.width - w) / 2, y0 = r.top + (r.height - h) / 2;
    const fx = (e.clientX - x0) / w, fy = (e.clientY - y0) / h;
    if (!(fx >= 0 && fx < 1 && fy >= 0 && fy < 1)) return null;
    return [Math.round(fx * 1e4) / 1e4, Math.round(fy * 1e4) / 1e4];
  };
  const dot = (e) => {
    const d = document.createElement('div');
    d.className = 'vitviz-paint-dot';
    d.style.left = e.clientX + 'px'; d.style.top = e.clientY + 'px';
    document.body.appendChild(d); trail.push(d);
  };
  panel.addEventListener('pointerdown', (e) => {
    if (e.button !== 0 || e.target.closest('.icon-button-wrapper, a')) return;  // the panel's own download button
    const p = where(e); if (!p) return;
    points = [p]; dot(e); e.preventDefault();
    try { panel.setPointerCapture(e.pointerId); } catch (err) {}
  });
  panel.addEventListener('pointermove', (e) => {
    if (!points) return;
    const p = where(e); if (p) { points.push(p); dot(e); }
  });
  const finish = () => {
    if (!points) return;
    const pts = points.slice(0, 4000); points = null;
    const old = trail; trail = [];
    setTimeout(() => old.forEach(d => d.remove()), 700);
    props.value = JSON.stringify({points: pts, t: Date.now()});  // a new value fires the component's change
  };
  panel.addEventListener('pointerup', finish);
  panel.addEventListener('pointercancel', finish);
};
attach();
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
  // The sweep chart's marker (vitviz.plots.mae.CURRENT_MARKER) follows the slider, with no server call.
  setInterval(() => {
    const plot = document.querySelector('#mae-sweep-chart .js-plotly-plot');
    const slider = document.querySelector('#mae-ratio input[type=range]');
    if (!plot || !slider || !window.Plotly || !plot.layout) return;
    const x = Math.round(Number(slider.value) * 100);
    const shapes = plot.layout.shapes || [], notes = plot.layout.annotations || [];
    const i = shapes.findIndex(s => s.name === 'current-ratio');
    if (i < 0 || shapes[i].x0 === x) return;
    const upd = {}; upd[`shapes[${i}].x0`] = x; upd[`shapes[${i}].x1`] = x;
    const j = notes.findIndex(a => a.name === 'current-ratio');
    if (j >= 0) { upd[`annotations[${j}].x`] = x; upd[`annotations[${j}].text`] = `slider: ${x}%`; }
    window.Plotly.relayout(plot, upd);
  }, 250);
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

#: Page styles. The MAE tab's key panels are squares as wide as a third of the panel column and never
#: taller than the screen leaves them (so they and the metrics fit above the fold at 1280x720); the
#: presenter layout (``?presenter=1``, Alt+P) keeps only the slider, the key panels and the metrics, large.
CSS = """
:root { --vitviz-panel: max(200px, calc(100vh - 400px)); }
#vitviz-intro h1 { margin-bottom: 0.2rem; }
#mae-panels > .block, #mae-panels-more > .block { height: auto !important; }
#mae-panels .image-container { height: auto !important; aspect-ratio: 1 / 1; max-height: var(--vitviz-panel); }
#mae-panels-more .image-container { height: 230px !important; }
#mae-panels img, #mae-panels-more img { width: 100% !important; height: 100% !important;
  object-fit: contain !important; }
#panel-original img { cursor: crosshair; touch-action: none; user-select: none; -webkit-user-drag: none; }
.vitviz-paint-dot { position: fixed; width: 10px; height: 10px; margin: -5px 0 0 -5px; border-radius: 50%;
  background: rgba(228, 87, 46, 0.8); pointer-events: none; z-index: 1000; }
[id$='-examples'] .container.gallery { width: 58px !important; height: 58px !important; }
[id$='-examples'] .container.gallery img { width: 100%; height: 100%; object-fit: cover; }
#mae-thumbs img { object-fit: contain !important; }
.vitviz-presenter .vitviz-help, .vitviz-presenter .vitviz-secondary, .vitviz-presenter #mae-controls,
.vitviz-presenter #mae-panels-more, .vitviz-presenter footer { display: none !important; }
.vitviz-presenter { --vitviz-panel: max(240px, calc(100vh - 250px)); }
.vitviz-presenter #mae-metrics, .vitviz-presenter #mae-metrics .prose { font-size: 1.3rem !important; }
.vitviz-presenter #mae-panels label, .vitviz-presenter #mae-ratio label { font-size: 1.1rem; }
"""
