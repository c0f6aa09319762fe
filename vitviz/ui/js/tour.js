// The guided tour (vitviz.ui.tour): part of the page module, `window.vitviz.tour`.
//
// Loaded in the page head right after page.js (vitviz.ui.js.page()), started by vitviz.start(). The steps
// are data, written into this file as __STEPS__ (vitviz/ui/helptext/tour.toml, the ones this host can show:
// vitviz.ui.tour.steps_here), or a tour bar's own `data-steps` where one is given (tests' tours):
// {tab, title, notice, output, ready: [id, text], controls: [[id, value], ...], photo, own_photo}. A step, in order: opens its tab; once the tab has drawn
// (its ready element has text and nothing in it is pending), shows the visitor's photo (the one shown when
// the tour started) where the step allows it (own_photo), else clicks its example photo, unless the tab's box
// already shows that; at the end, the visitor's photo is given back; sets its controls the way a person does (a value typed or clicked, then the component's
// own events); waits for its own output (the ready element's text contains the step's text, nothing
// pending); brings its key visual into view and says what to notice. Back and Next start another step (the
// one under way is dropped); End folds the bar back to its Start button.
//
// Nothing polls: every wait is a vitviz.watch check, run after changes of the page. The bar's state is in
// its dataset: data-step (1-based, "" when closed) and data-ready (the step whose output is in).
(() => {
  const V = window.vitviz;
  if (!V || V.tour) return;

  const STEPS = __STEPS__;  // in the cached page module, not in every visit's page configuration
  let bar = null, steps = [], index = -1, gen = 0;
  // The visitor's photo when the tour started ({upload: file data} or {example: name, value}), null for none;
  // `replaced`: a step put another photo in its place (given back by the next step that allows it, or the end).
  let own = null, replaced = false;
  // the shown tab's box and its example thumbnails: vitviz.examples (page.js)
  const {shownPanel, busy, boxPhoto} = V.examples;
  const textOf = (id) => { const el = document.getElementById(id); return el ? el.innerText : ''; };

  // --- controls: set like a person does, skipped when already at the value --------------------------------
  const fire = (el, ...types) => types.forEach((t) => el.dispatchEvent(new Event(t, {bubbles: true})));
  const setControl = (id, value) => {
    const root = document.getElementById(id);
    if (!root) return false;
    const range = root.querySelector('input[type=range]');
    const number = root.querySelector('input[type=number]');
    if (range || number) {
      const el = range || number;
      if (Number(el.value) === Number(value)) return true;
      el.value = String(value);
      fire(el, 'input', 'change');
      if (!range) fire(el, 'blur');
      return true;
    }
    const radio = Array.from(root.querySelectorAll('input[type=radio]')).find((r) => r.value === String(value));
    if (radio) { if (!radio.checked) radio.click(); return true; }
    const box = root.querySelector('input[type=checkbox]');
    if (box) { if (box.checked !== Boolean(value)) box.click(); return true; }
    return false;
  };

  // --- the visitor's photo: kept by the steps that allow it (own_photo), given back at the end -------------
  const V_IMAGE = V.image.state, V_SHARE = V.share.state;
  const stem = V.examples.stem;
  const visitor = () => {
    if (V_SHARE.uploaded && V_IMAGE.value) return {upload: V_IMAGE.value};
    const panel = shownPanel();
    const name = V_SHARE.photo || (panel ? stem(boxPhoto(panel)) : '');
    return name ? {example: name, value: V_IMAGE.value} : null;
  };
  const nameOf = (photo) => (photo.upload ? stem(photo.upload.path || photo.upload.orig_name || '') : photo.example);
  const shows = (panel, photo) => stem(boxPhoto(panel)) === nameOf(photo);
  const fileInput = (panel) => panel.querySelector('[id$="-input"] input[type=file]');
  // Put `photo` in the shown tab's box as a person would: an example's thumbnail clicked, an upload uploaded
  // again (the same file, fetched from the server). False where the tab cannot show it.
  const put = (panel, photo) => {
    if (photo.example) {
      const b = Array.from(panel.querySelectorAll('button.gallery-item')).find((x) => {
        const img = x.querySelector('img');
        return img && x.offsetParent !== null && stem(img.getAttribute('src')) === photo.example;
      });
      if (b) b.click();
      return Boolean(b);
    }
    const input = fileInput(panel);
    if (!input) return false;
    const f = photo.upload;
    const src = f.url || new URL('gradio_api/file=' + f.path, document.baseURI).href;
    fetch(src).then((r) => r.blob()).then((blob) => {
      const dt = new DataTransfer();
      dt.items.add(new File([blob], f.orig_name || V.examples.baseName(f.path), {type: blob.type}));
      input.files = dt.files;
      input.dispatchEvent(new Event('change', {bubbles: true}));
    }).catch(() => null);
    return true;
  };
  // The end of the tour: the visitor's photo back in the shown tab's box, or (a tab without one) back as the
  // page's image, which the next tab opened shows (vitviz.image.select).
  const giveBack = () => {
    if (!own || !replaced) return;
    replaced = false;
    const panel = shownPanel();
    if (panel && fileInput(panel) && put(panel, own)) return;
    const value = own.upload || own.value;
    if (!value) return;  // the page's first photo, never published: nothing to give back with
    V_IMAGE.v += 1; V_IMAGE.value = value;
    if (own.upload) V.share.uploaded(own.upload); else V.share.example(own.example);
  };

  // --- the key visual in view, below the bar (which sticks to the top while a step runs) ------------------
  const bringIntoView = (id) => {
    const el = document.getElementById(id);
    if (!el) return;
    const r = el.getBoundingClientRect();
    const top = bar ? bar.offsetHeight + 8 : 8;  // where the bar ends once it sticks to the top
    const room = window.innerHeight - top;
    if (r.top >= top && r.bottom <= window.innerHeight) return;
    const dy = r.height <= room && r.top >= top ? r.bottom - window.innerHeight + 8 : r.top - top;
    window.scrollBy({top: dy, left: 0, behavior: 'instant'});
  };

  // --- the bar: idle, a button in the header (beside the tab buttons); while a step runs it is one line at the
  // top of the window, as wide as the page's column, over the intro (position: sticky does not hold inside
  // Gradio's blocks, which clip their overflow)
  const stick = () => {
    if (!bar) return;
    const on = index >= 0;
    if (on) {
      const wide = document.getElementById('vitviz-intro') || bar.parentElement;
      const r = wide.getBoundingClientRect();
      bar.style.left = r.left + 'px'; bar.style.width = r.width + 'px';
    } else { bar.style.left = ''; bar.style.width = ''; }
    bar.classList.toggle('vitviz-tour-stuck', on);
  };
  const node = (tag, cls, text) => {
    const el = document.createElement(tag);
    if (cls) el.className = cls;
    if (text !== undefined) el.textContent = text;
    return el;
  };
  const button = (text, id, onClick, disabled) => {
    const b = node('button', '', text);
    b.type = 'button'; b.id = id; b.disabled = Boolean(disabled);
    b.addEventListener('click', onClick);
    return b;
  };
  const render = (ready) => {
    if (!bar) return;
    bar.replaceChildren();
    bar.dataset.step = index < 0 ? '' : String(index + 1);
    bar.dataset.ready = ready ? String(index + 1) : '';
    bar.classList.toggle('vitviz-tour-running', index >= 0);
    if (index < 0) {
      bar.append(button('Guided tour ▸', 'tour-start', () => tour.go(0)));
      bar.firstChild.className = 'vitviz-tour-start';
      bar.firstChild.title = `${steps.length} steps, one idea each`;
      stick();
      return;
    }
    const s = steps[index];
    bar.append(node('span', 'vitviz-tour-count', `Step ${index + 1} of ${steps.length} · ${s.title}`));
    bar.append(ready ? node('span', 'vitviz-tour-text', s.notice)
      : node('span', 'vitviz-tour-text vitviz-tour-busy', 'opening the step…'));
    const nav = node('span', 'vitviz-tour-nav');
    nav.append(button('‹ Back', 'tour-back', () => tour.go(index - 1), index === 0));
    nav.append(index + 1 < steps.length ? button('Next ›', 'tour-next', () => tour.go(index + 1))
      : button('Finish', 'tour-next', () => tour.end()));
    nav.append(button('End tour', 'tour-end', () => tour.end()));
    bar.append(nav);
    stick();
  };

  // --- a step: phases run by one watcher, dropped when another step starts --------------------------------
  const run = (s, g) => {
    let phase = 'tab', clicked = 0;
    const [readyId, readyText] = s.ready;
    V.tabs.open(s.tab);
    // A few wake-ups in case the last change of the page came before a phase could look at it (bounded: no poll).
    [1000, 3000, 8000].forEach((ms) => setTimeout(() => { if (g === gen) V.wake(); }, ms));
    V.watch(() => {
      if (g !== gen) return true;  // another step (or the end) took over
      if (bar) bar.dataset.phase = phase;  // where the step waits (for tests and a curious reader)
      const panel = shownPanel();
      if (V.tabs.shown() !== s.tab || !panel) return false;
      if (phase === 'tab') {
        // the tab has drawn its first views: its ready element has text and nothing in it waits
        if (!textOf(readyId).trim() || busy(panel)) return false;
        phase = 'photo';
      }
      if (phase === 'photo') {
        // the visitor's own photo where the step allows it, else the step's example
        const mine = Boolean(s.photo && own && s.own_photo !== false);
        const want = !s.photo ? null : mine ? own : {example: s.photo};
        if (want && !shows(panel, want)) {
          if (!clicked) {
            if (!put(panel, want)) { phase = 'controls'; return false; }  // not here: keep the tab's photo
            clicked = Date.now(); replaced = !mine;
            setTimeout(V.wake, 5000);  // the check below runs again even on a still page
          } else if (Date.now() - clicked > 30000) { phase = 'controls'; }  // an upload that never came back
          return false;
        }
        // the new photo's views have arrived: nothing waits (after a moment for them to start)
        if (clicked && (busy(panel) || Date.now() - clicked < 1500)) {
          if (!busy(panel)) setTimeout(V.wake, 1600);
          return false;
        }
        phase = 'controls';
      }
      if (phase === 'controls') {
        for (const [id, value] of s.controls) setControl(id, value);
        phase = 'output';
        return false;
      }
      if (!textOf(readyId).includes(readyText) || busy(panel)) return false;
      render(true);
      bringIntoView(s.output);
      return true;
    });
  };

  const tour = {
    get index() { return index; },
    // Start step i (0-based); the step under way, if any, is dropped.
    go(i) {
      if (!steps.length) return;
      if (index < 0) { own = visitor(); replaced = false; }
      index = Math.max(0, Math.min(steps.length - 1, i));
      gen += 1;
      render(false);
      run(steps[index], gen);
    },
    end() { gen += 1; index = -1; render(false); giveBack(); },
    // vitviz.start(): find the bar (the page's header) and read its steps.
    start() {
      V.watch(() => {
        const el = document.querySelector('#tour .vitviz-tour');
        if (!el) return false;
        bar = el;
        try { steps = el.dataset.steps ? JSON.parse(el.dataset.steps) : STEPS; } catch (e) { steps = []; }
        render(false);
        window.addEventListener('resize', () => { if (bar) bar.classList.remove('vitviz-tour-stuck'); stick(); });
        return true;
      });
    },
  };
  V.tour = tour;
})();
