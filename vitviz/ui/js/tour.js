// The guided tour (vitviz.ui.tour): part of the page module, `window.vitviz.tour`.
//
// Loaded in the page head right after page.js (vitviz.ui.js.page()), started by vitviz.start(). The steps
// are data, written into this file as __STEPS__ (vitviz/ui/helptext/tour.toml, the ones this host can show:
// vitviz.ui.tour.steps_here), or a tour bar's own `data-steps` where one is given (tests' tours):
// {tab, title, notice, output, ready: [id, text], controls: [[id, value], ...], photo}. A step, in order: opens its tab; once the tab has drawn
// (its ready element has text and nothing in it is pending), clicks its example photo unless the tab's box
// already shows it; sets its controls the way a person does (a value typed or clicked, then the component's
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
  // the shown tab's box and its example thumbnails: vitviz.examples (page.js)
  const {shownPanel, busy, boxPhoto, button: exampleButton} = V.examples;
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
        const want = s.photo ? s.photo + '.jpg' : '';
        if (want && boxPhoto(panel) !== want) {
          if (!clicked) {
            const b = exampleButton(panel, want);
            if (!b) { phase = 'controls'; return false; }  // no such example here: keep the tab's photo
            b.click(); clicked = Date.now();
            setTimeout(V.wake, 5000);  // the check below runs again even on a still page
          }
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
      index = Math.max(0, Math.min(steps.length - 1, i));
      gen += 1;
      render(false);
      run(steps[index], gen);
    },
    end() { gen += 1; index = -1; render(false); },
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
