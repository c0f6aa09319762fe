// vitviz's page module: the one owner of the app's browser state, `window.vitviz`.
//
// Loaded once, as a <script> in the page head (vitviz.ui.js.page(): launch(head=...)), before Gradio
// mounts the app; started by launch(js=...) once the app has loaded. Every event handler (`js=`) and
// every `js_on_load` of vitviz.ui is a file of this folder that calls into this object.
//
// Nothing here polls: waiting for an element is a *watcher*, run after changes of the page (one
// MutationObserver for all, coalesced) and dropped once it is satisfied.
//
// Parts: wait (the watchers), tabs (the URL's tab, the shown tab, found by Gradio's data-tab-id),
// url (the address bar), image (one image for every tab), lazy (tabs compute when first shown),
// scrub (the slider's stops held in the page), mae (painting, picking, the sweep chart's marker),
// heads (clicks on its charts), attention (a head opened from the Heads tab), live (the live camera's rate),
// keys (the keyboard).
(() => {
  if (window.vitviz) return;

  // --- wait: run a check now and after every change of the page until it returns true --------------------
  const watchers = new Set();
  let timer = null;
  const run = () => {
    timer = null;
    for (const check of Array.from(watchers)) {
      let done = true;
      try { done = check() === true; } catch (e) { console.error('vitviz:', e); }
      if (done) watchers.delete(check);
    }
    if (!watchers.size) observer.disconnect();
  };
  const later = (ms = 16) => { if (timer === null) timer = setTimeout(run, ms); };
  const observer = new MutationObserver(() => later());
  const watch = (check) => {
    let done = true;
    try { done = check() === true; } catch (e) { console.error('vitviz:', e); }
    if (done) return;
    if (!watchers.size) {
      observer.observe(document.documentElement, {childList: true, subtree: true, attributes: true,
                                                  characterData: true});
    }
    watchers.add(check);
  };
  // An element by id, handed to `then` once it exists (at once if it does).
  const whenElement = (id, then) => watch(() => {
    const el = document.getElementById(id);
    if (!el) return false;
    then(el);
    return true;
  });

  // --- the picture inside an image panel, as drawn (object-fit: contain) -----------------------------------
  // A pointer event -> [x, y] fractions of the picture (4 decimals), or null outside it.
  const pictureFraction = (panel, e) => {
    const img = panel.querySelector('img');
    if (!img || !img.naturalWidth) return null;
    const r = img.getBoundingClientRect();
    const s = Math.min(r.width / img.naturalWidth, r.height / img.naturalHeight);
    const w = img.naturalWidth * s, h = img.naturalHeight * s;
    const fx = (e.clientX - r.left - (r.width - w) / 2) / w, fy = (e.clientY - r.top - (r.height - h) / 2) / h;
    if (!(fx >= 0 && fx < 1 && fy >= 0 && fy < 1)) return null;
    return [Math.round(fx * 1e4) / 1e4, Math.round(fy * 1e4) / 1e4];
  };
  // The panel's own buttons (download, full screen) are not clicks on the picture.
  const onPanelButton = (e) => e.button !== 0 || e.target.closest('.icon-button-wrapper, a');

  // --- tabs ---------------------------------------------------------------------------------------------
  const tabs = (() => {
    let ready = false;
    const waiting = [];
    const button = (id) => document.querySelector(`[role=tab][data-tab-id="${id}"]`) ||
      document.querySelector(`button[data-tab-id="${id}"]`);
    const setReady = () => { ready = true; waiting.splice(0).forEach((resolve) => resolve(true)); };
    return {
      get ready() { return ready; },
      // The id of the tab shown, or null when the page does not say.
      shown() {
        const b = document.querySelector('[role=tab][aria-selected=true]');
        return b ? b.getAttribute('data-tab-id') : null;
      },
      open(id) { const b = button(id); if (b) b.click(); return Boolean(b); },
      // Resolves once the page has opened the URL's tab (or after `ms`, whichever comes first).
      whenReady(ms = 3000) {
        if (ready) return Promise.resolve(true);
        return new Promise((resolve) => { waiting.push(resolve); setTimeout(() => resolve(false), ms); });
      },
      // Open the URL's tab once the tab buttons exist (Gradio shows the first one itself); give up after 10 s.
      start() {
        const wanted = new URL(window.location.href).searchParams.get('tab') || '';
        const started = Date.now();
        setTimeout(later, 10000);  // the give-up check runs even if the page never changes again
        watch(() => {
          const target = wanted && button(wanted);
          const any = document.querySelector('[role=tab]');
          if (!target && (wanted || !any) && Date.now() - started < 10000) return false;
          if (target) target.click();
          setTimeout(setReady, 300);
          return true;
        });
      },
    };
  })();

  // --- url: the address bar carries the tab, the controls, the layer and the painted mask ------------------
  const url = (() => {
    const set = (change) => {
      const u = new URL(window.location.href);
      change(u.searchParams);
      window.history.replaceState(null, '', u);
    };
    let controlsTimer = null;
    return {
      set,
      // Written once the controls rest for 250 ms, not at every slider stop: each change of the address
      // makes Chromium fetch the page's icon again, a request to the server per stop.
      controls(model, ratio, seed, pattern) {
        clearTimeout(controlsTimer);
        controlsTimer = setTimeout(() => set((p) => {
          if (model) p.set('model', model);
          if (ratio !== null && ratio !== undefined) p.set('ratio', Number(ratio).toFixed(2));
          if (seed !== null && seed !== undefined) p.set('seed', String(seed));
          if (pattern) p.set('pattern', pattern);
        }), 250);
      },
      mask(code) { set((p) => { if (code) p.set('mask', code); else p.delete('mask'); }); },
      // The example photo shown (its name), or none: an upload cannot travel in a link.
      photo(name) { set((p) => { if (name) p.set('photo', name); else p.delete('photo'); }); },
      layer(layer) { if (layer !== null && layer !== undefined) set((p) => p.set('layer', String(Math.round(layer)))); },
      // The Ablate tab's model and heads switched off ("11.2, 8.4" -> heads=11.2,8.4; none: no heads=).
      ablation(model, heads) {
        if (!tabs.ready || tabs.shown() !== 'intervene') return;  // set while another tab is shown: not its link
        const list = String(heads || '').split(',').map((h) => h.trim()).filter((h) => /^\d{1,3}\.\d{1,3}$/.test(h));
        set((p) => {
          if (model) p.set('model', model);
          if (list.length) p.set('heads', list.join(',')); else p.delete('heads');
        });
      },
      // The selected tab, recorded once the URL's own tab is open.
      tab(id) { if (tabs.ready) set((p) => p.set('tab', id)); },
    };
  })();

  // --- presenter layout (?presenter=1, Alt+P) ------------------------------------------------------------
  const presenter = {
    apply() {
      const on = new URL(window.location.href).searchParams.get('presenter') || '';
      document.body.classList.toggle('vitviz-presenter', ['1', 'true', 'yes', 'on'].includes(on.toLowerCase()));
    },
    toggle() {
      const on = document.body.classList.contains('vitviz-presenter');
      url.set((p) => p.set('presenter', on ? '0' : '1'));
      presenter.apply();
    },
  };

  // --- examples: the shown tab's example photos, found by file name ---------------------------------------
  const examples = (() => {
    const baseName = (src) => decodeURIComponent((src || '').split('?')[0].split('/').pop() || '');
    const E = {
      baseName,
      // The photo's name without its extension ("chelsea" for .../chelsea.jpg), "" for none.
      stem: (path) => baseName(path).replace(/\.[a-z0-9]+$/i, ''),
      shownPanel: () => Array.from(document.querySelectorAll('.tabitem')).find((p) => p.offsetParent !== null),
      busy: (root) => Boolean(root && root.querySelector('.pending, .generating, .eta-bar')),
      // The file name shown in the panel's image box ("" for none).
      boxPhoto(panel) {
        const img = panel.querySelector('[data-testid=image] .image-frame img');
        return img ? baseName(img.getAttribute('src')) : '';
      },
      // The panel's example thumbnail of that file name, if shown.
      button: (panel, name) => Array.from(panel.querySelectorAll('button.gallery-item')).find((b) => {
        const img = b.querySelector('img');
        return img && b.offsetParent !== null && baseName(img.getAttribute('src')) === name;
      }),
      // The URL's photo= (an example's name): once the shown tab has drawn its first views, its thumbnail
      // is clicked as a person would (the photo then reaches every tab); an unknown name is ignored.
      // Until the box shows that photo, the tab's pictures are hidden (html.vitviz-url-photo, set as the page
      // module loads; app.css): the first views, drawn with the page's first photo, are not shown for the
      // seconds the linked one takes.
      linked: () => {
        const name = new URL(window.location.href).searchParams.get('photo') || '';
        return /^[A-Za-z0-9_-]{1,64}$/.test(name) ? name : '';
      },
      fromUrl() {
        const name = E.linked();
        const done = () => { document.documentElement.classList.remove('vitviz-url-photo'); return true; };
        if (!name) return done();
        const started = Date.now();
        let clicked = false;
        setTimeout(later, 30000);  // the give-up check runs even on a still page
        watch(() => {
          if (Date.now() - started > 30000) return done();
          if (!tabs.ready) return false;
          const panel = E.shownPanel();
          if (!panel) return false;
          if (!panel.querySelector('button.gallery-item')) return Date.now() - started > 5000 && done();  // no photo here
          const want = E.boxPhoto(panel);
          if (!want || E.busy(panel)) return false;  // the tab's first views (or the linked photo's) are still coming
          if (E.stem(want) === name) return done();
          if (clicked) return false;
          const b = Array.from(panel.querySelectorAll('button.gallery-item')).find((x) => {
            const img = x.querySelector('img');
            return img && x.offsetParent !== null && E.stem(img.getAttribute('src')) === name;
          });
          if (!b) return done();  // an unknown name: the page's own photo stays
          b.click(); clicked = true;
          return false;
        });
      },
    };
    if (E.linked()) document.documentElement.classList.add('vitviz-url-photo');
    return E;
  })();

  // --- share: what the page's link carries (the address bar: tab, controls and an example photo's name) -----
  // An uploaded photo stays in this browser: the link says so (#share, vitviz.ui.share).
  const share = (() => {
    const st = {photo: null, uploaded: false};
    const render = () => {
      const el = document.querySelector('#share .vitviz-share-text');
      if (!el) return;
      if (!st.uploaded && !st.photo) return;  // the page's first photo: the server wrote its name
      el.textContent = st.uploaded ? 'your upload is not in the link' : `link opens photo ${st.photo}`;
      el.parentElement.title = st.uploaded
        ? 'The link carries the tab and its controls, not your uploaded photo: whoever opens it sees the example photo instead.'
        : 'The link carries the tab, its controls and the example photo shown.';
    };
    return {
      state: st,
      render,
      example(name) { st.photo = name; st.uploaded = false; url.photo(name); render(); },
      // An upload: an example photo's own file (its name and byte size, listed by the server in #share's
      // data-examples) is that example, and the link names it; any other file is not in the link.
      uploaded(value) {
        const el = document.querySelector('#share .vitviz-share');
        let known = {};
        try { known = JSON.parse((el && el.dataset.examples) || '{}'); } catch (e) { known = {}; }
        const name = examples.stem((value && value.orig_name) || '');
        if (name && known[name] !== undefined && value && known[name] === value.size) return share.example(name);
        st.photo = null; st.uploaded = true; url.photo(''); render();
      },
      cleared() { st.photo = null; st.uploaded = false; url.photo(''); render(); },
      // The button: the address bar's link to the clipboard (where the browser allows it), said in the page.
      async copy() {
        const el = document.querySelector('#share .vitviz-share-done');
        let done = false;
        try { await navigator.clipboard.writeText(window.location.href); done = true; } catch (e) { done = false; }
        if (el) el.textContent = done ? 'copied' : 'copy it from the address bar';
        if (el) setTimeout(() => { el.textContent = ''; }, 4000);
        return done;
      },
    };
  })();

  // --- image: one image for the whole app (vitviz.ui.shared_image) ----------------------------------------
  // v: its version; value: the box value (Gradio's file data); seen: the version each tab shows;
  // shown: the file each tab's relay last announced ("" for none).
  const image = (() => {
    const S = {v: 0, value: null, seen: {}, shown: {}};
    return {
      state: S,
      // A user's change to a tab's box -> [relay]: a file becomes the shared image and moves the relay once
      // (an upload sends `upload` and `input`; a value without a file yet changes nothing). `clear`: the
      // box's clear event (sent while it still holds the old value): the tab redraws without an image.
      // clear 'emptied': the box's change; only a box left empty counts (Gradio refused the upload, too large
      // or not an image, and sent neither upload nor clear): the tab redraws without an image, so no panel
      // of the previous photo stays beside the empty box.
      // clear 'example': an example photo was clicked: published like an upload, and the link names it.
      // Nothing new: `undefined`, which leaves the relay alone. (Returning the relay as read would undo a move:
      // one upload sends `upload` and `input` at once, both read relay n, the first returns n + 1, the second
      // n, and each change of the relay ran the tab's views: every refused upload said its warning twice.)
      publish(id, value, relay, clear) {
        if (clear === 'emptied') { if (value) return [undefined]; clear = true; }
        const example = clear === 'example';
        if (example) clear = false;
        const key = clear ? '' : ((value && value.path) || null);
        if (example && key) share.example(examples.stem(key));
        if (key === null || S.shown[id] === key) return [undefined];
        if (!example && key) share.uploaded(value); else if (!key) share.cleared();
        S.shown[id] = key;
        if (key) { S.v += 1; S.value = value; S.seen[id] = S.v; }
        return [(relay || 0) + 1];
      },
      // A subscribed tab's select -> [image, relay, opened]: first selection, the latest image and the
      // opener; later, a newer image and the relay; nothing new: undefined (Gradio leaves an output alone).
      async select(id, value, relay, opened) {
        if (!(await lazy.stillShown(id))) return [value, relay, opened];
        const pending = S.value !== null && S.v > (S.seen[id] || 0);
        if (!pending) return [undefined, undefined, opened ? undefined : 1];
        S.seen[id] = S.v; S.shown[id] = S.value.path;
        return opened ? [S.value, (relay || 0) + 1, opened] : [S.value, relay, 1];
      },
    };
  })();

  // --- lazy: a tab's opener goes to 1 on its first selection (vitviz.ui.lazy) -----------------------------
  const lazy = {
    // Gradio selects the first tab while the page mounts, before the URL's tab is open: wait for it, then
    // say whether tab `id` is (still) the one shown.
    async stillShown(id) {
      await tabs.whenReady();
      const shown = tabs.shown();
      return !shown || shown === id;
    },
    async open(id, opened) { return (await lazy.stillShown(id)) ? [1] : [opened]; },
  };

  // --- scrub: the slider's stops held in the page (vitviz.ui.scrub) ----------------------------------------
  const scrub = (() => {
    const st = {text: null, data: null, urls: null, imgs: [], gen: 0};
    const mark = (v) => { document.body.dataset.vitvizScrub = v; };
    const revoke = (urls) => { for (const s of Object.values(urls)) for (const u of Object.values(s)) URL.revokeObjectURL(u); };
    const S = {
      state: st,
      forget() {
        if (st.urls) revoke(st.urls);
        st.text = null; st.data = null; st.urls = null; st.imgs = []; st.gen += 1; mark('');
      },
      // A new payload: download its pack once, cut it into one blob: URL per panel, decode them.
      load(text, kinds) {
        if (text === st.text) return;
        S.forget();
        st.text = text;
        if (!text) return;
        let data;
        try { data = JSON.parse(text); } catch (e) { return; }
        const gen = st.gen;
        mark('loading:' + data.id);
        fetch(new URL('gradio_api/file=' + data.pack, document.baseURI)).then((r) => {
          if (!r.ok) throw new Error('pack ' + r.status);
          return r.arrayBuffer();
        }).then((buf) => {
          if (gen !== st.gen) return;
          const urls = {}, imgs = [], decoded = [];
          for (const [k, s] of Object.entries(data.stops)) {
            urls[k] = {};
            for (const kind of kinds) {
              const [o, n] = s.files[kind];
              const u = URL.createObjectURL(new Blob([new Uint8Array(buf, o, n)], {type: 'image/png'}));
              urls[k][kind] = u;
              const im = new Image(); im.src = u; imgs.push(im);
              decoded.push(im.decode().catch(() => null));
            }
          }
          return Promise.all(decoded).then(() => {
            if (gen !== st.gen) { revoke(urls); return; }
            st.data = data; st.urls = urls; st.imgs = imgs;
            mark('ready:' + data.id);
          });
        }).catch(() => { if (gen === st.gen) mark('failed:' + data.id); });
      },
      key: (ratio) => (Math.round(Number(ratio) * 20) / 20).toFixed(2),
      // The stop's panels (Gradio file data, in `kinds` order) and metrics, or null when the page cannot
      // answer for these controls.
      lookup(ratio, value, model, seed, pattern, paint, compare, kinds, noCompare) {
        const d = st.data;
        if (!d || !st.urls || paint || (compare && compare !== noCompare)) return null;
        if (d.model !== model || d.pattern !== pattern || Number(d.seed) !== Number(seed)) return null;
        if (!value || value.path !== d.image) return null;
        const k = S.key(ratio), s = d.stops[k], u = st.urls[k];
        if (!s || !u) return null;
        const file = (kind) => ({path: s.paths[kind], url: u[kind], orig_name: 'image.png', mime_type: 'image/png',
                                 size: s.files[kind][1], is_stream: false, meta: {_type: 'gradio.FileData'}});
        return [...kinds.map(file), s.metrics];
      },
    };
    return S;
  })();

  // --- inpage: mae-tiny in the visitor's browser (vitviz/web/static/mae_tab.js, served on /in-browser/) -----
  // The model is 27 MB: it is fetched once the visitor shows intent (a pointer over or on the MAE tab's
  // controls, panels or camera, a key or focus there), never with the page itself. document.body.dataset.vitvizInpage
  // says where it stands: 'waiting' (not wanted yet), 'loading', then 'ready' or 'off' (no WebAssembly, or it
  // failed: the tab stays on the server).
  const inpage = (() => {
    let made = null;
    const INTENT = ['pointerover', 'pointerdown', 'keydown', 'focusin'];
    const PLACES = '#mae-controls, #mae-ratio-row, #mae-panels, #mae-panels-more, #mae-inpage-live';
    const intent = (e) => { if (e.target && e.target.closest && e.target.closest(PLACES)) I.load(); };
    const I = {
      // Fetch the model at the visitor's first intent (see above), not with the page.
      whenWanted() {
        if (made) return;
        document.body.dataset.vitvizInpage = typeof WebAssembly === 'object' ? 'waiting' : 'off';
        for (const kind of INTENT) document.addEventListener(kind, intent, {capture: true, passive: true});
      },
      // Load the module and the model once (no WebAssembly: the tab stays on the server).
      load() {
        for (const kind of INTENT) document.removeEventListener(kind, intent, {capture: true});
        if (!made && typeof WebAssembly === 'object') {
          document.body.dataset.vitvizInpage = 'loading';
          made = import(new URL('in-browser/mae_tab.js', document.baseURI).href)
            .then((m) => { const t = m.create(); t.ready.then(() => I.show()); return t; })
            .catch(() => { document.body.dataset.vitvizInpage = 'off'; return null; });  // the module did not load
        } else if (!made) document.body.dataset.vitvizInpage = 'off';
        return made;
      },
      // The panels and metrics computed in the page, or null (the caller uses the server's path).
      async panels(...args) { const t = made && await made; return t ? t.panels(...args) : null; },
      // Start or stop the camera computed in the page (the button of #mae-inpage-live).
      async camera(root) {
        const t = await I.load();
        if (t) return t.camera(root);
        root.querySelector('[data-rate]').textContent = 'This browser cannot run the model (no WebAssembly).';
      },
      // A change of the MAE slider, seed or pattern (vitviz/ui/js/mae_inpage_move.js): the stop's panels the page
      // holds (scrub: the server's own PNGs), else the panels computed here, else a bump of the request counter
      // (the server's view; with `sweep`, a seed or pattern, also of the sweep's counter). Outputs: (masked,
      // reconstruction, pasted, error, metrics, request, sweep); undefined leaves one as it is.
      async move(kinds, noCompare, sweep, ratio, image, model, seed, pattern, paint, compare, payload, request, sweeps) {
        const none = kinds.map(() => undefined), turn = ++I.moves;
        scrub.load(payload, kinds);
        const hit = scrub.lookup(ratio, image, model, seed, pattern, paint, compare, kinds, noCompare);
        if (hit) return [...hit, undefined, undefined];
        const own = await I.panels(ratio, model, seed, pattern, paint, compare, noCompare);
        if (own === 'stale' || turn !== I.moves) return [...none, undefined, undefined, undefined];
        if (own && sweep) made.then((t) => t.chart(model, Number(seed), pattern));  // the chart's curve, in the page
        if (own) return [...own, undefined, undefined];
        return [...none, undefined, (Number(request) || 0) + 1, sweep ? (Number(sweeps) || 0) + 1 : undefined];
      },
      // A stroke on the Original panel (`tick` false: `stroke` holds its points), or "Paint the mask" ticked or
      // unticked (`tick` true), decided in the page (vitviz/ui/js/mae_inpage_paint.js): mae-tiny in the page
      // computes the painted mask and the panels, else `request` becomes {"kind": "stroke"|"tick", "n"}, whose
      // change runs the server's (vitviz.ui.mae_paint). Outputs: (painted, paint, original, masked,
      // reconstruction, pasted, error, metrics, mask code, request); undefined leaves one as it is.
      async paint(tick, noCompare, stroke, paint, painted, image, model, ratio, seed, pattern, compare, request) {
        const none = Array(9).fill(undefined), turn = ++I.moves;
        let points = null;
        if (!tick) {
          try { points = JSON.parse(stroke || '{}').points; } catch (e) { points = null; }
          if (!Array.isArray(points)) points = [];
        }
        const t = made && await made;
        const own = t && image ? await t.paint(points, paint, painted, model, ratio, seed, pattern, compare, noCompare) : null;
        if (own === 'stale' || turn !== I.moves) return [...none, undefined];
        if (own) return [own.painted, own.paint, ...own.files, own.line, own.code, undefined];
        let n = 0;
        try { n = Number(JSON.parse(request || '{}').n) || 0; } catch (e) { n = 0; }
        return [...none, JSON.stringify({kind: tick ? 'tick' : 'stroke', n: n + 1})];
      },
      // The camera computed in the page: its button, rate line, canvases and video, built in `root`.
      mount(root) {
        const panels = [['original', "camera (the model's view)"], ['masked', 'masked input'],
          ['pasted', 'reconstruction + visible'], ['error', 'error of hidden patches']];
        root.innerHTML = "<p><button type='button'>Start the camera in your browser</button> <span data-rate>" +
          "mae-tiny on your own machine: no frame leaves it; the tab's ratio, seed and pattern apply.</span></p>" +
          "<div class='vitviz-inpage-panels'>" + panels.map(([k, t]) => `<figure><canvas data-panel='${k}' ` +
          `width='224' height='224'></canvas><figcaption>${t}</figcaption></figure>`).join('') +
          '</div><video playsinline muted hidden></video>';
        root.querySelector('button').addEventListener('click', () => I.camera(root));
      },
      // The server's video (vitviz.ui.mae_live) plays: a control's change must reach it (mae_live_note.js).
      videoPlaying: false,
      moves: 0,  // moves decided so far: an answer computed here for an older move never lands after a newer one
      // The last result's numbers (mask, per-patch error, MSE, PSNR), for tests and benchmarks.
      async last() { const t = made && await made; return t ? t.state.last : null; },
      // Which path runs, in the line under the metrics (#mae-path): the model's, or the server's while a
      // comparison is on (`compared`: the comparison picked; `none`: "no comparison").
      async show(model, compared, none) {
        const el = document.getElementById('mae-path'), t = made && await made;
        if (model !== undefined) I.model = model;
        if (compared !== undefined) I.compared = compared !== none && compared !== I.model ? compared : null;
        if (!el) return;
        const m = I.model ?? (document.querySelector('#mae-model input') || {}).value;
        const mine = t ? t.describe(m) : 'Computed on the server.';
        el.textContent = I.compared && mine.includes('in your browser')
          ? `Computed on the server while ${m} is compared with ${I.compared} (both models run there); `
            + `${m} alone runs in your browser.`
          : mine;
        el.dataset.path = el.textContent.startsWith('Computed in your browser') ? 'browser' : 'server';
      },
      model: null,
      compared: null,
    };
    return I;
  })();

  // --- mae: painting, picking a hidden patch, the sweep chart's marker --------------------------------------
  const attached = new WeakSet();
  const mae = {
    // The paint brush: a click or a drag on the Original panel sends the points it crossed (fractions of
    // the image) in `props.value` ({"points": [[x, y], ...], "t": time}), which fires the component's change.
    paint(props) {
      whenElement('panel-original', (panel) => {
        if (attached.has(panel)) return;
        attached.add(panel);
        let points = null, trail = [];
        const dot = (e) => {
          const d = document.createElement('div');
          d.className = 'vitviz-paint-dot';
          d.style.left = e.clientX + 'px'; d.style.top = e.clientY + 'px';
          document.body.appendChild(d); trail.push(d);
        };
        panel.addEventListener('pointerdown', (e) => {
          if (onPanelButton(e)) return;
          const p = pictureFraction(panel, e); if (!p) return;
          points = [p]; dot(e); e.preventDefault();
          try { panel.setPointerCapture(e.pointerId); } catch (err) { /* a pointer that is already gone */ }
        });
        panel.addEventListener('pointermove', (e) => {
          if (!points) return;
          const p = pictureFraction(panel, e); if (p) { points.push(p); dot(e); }
        });
        const finish = () => {
          if (!points) return;
          const pts = points.slice(0, 4000); points = null;
          const old = trail; trail = [];
          setTimeout(() => old.forEach((d) => d.remove()), 700);
          props.value = JSON.stringify({points: pts, t: Date.now()});
        };
        panel.addEventListener('pointerup', finish);
        panel.addEventListener('pointercancel', finish);
      });
    },
    // A click on a reconstruction panel sends where it landed ({"panel", "x", "y", "t"}, fractions of the
    // picture as drawn): Gradio's own select index assumes a picture never drawn larger than its pixels.
    pick(props) {
      for (const id of ['panel-pasted', 'panel-reconstruction']) {
        whenElement(id, (panel) => {
          if (attached.has(panel)) return;
          attached.add(panel);
          panel.addEventListener('click', (e) => {
            if (onPanelButton(e)) return;
            const p = pictureFraction(panel, e);
            if (p) props.value = JSON.stringify({panel: panel.id, x: p[0], y: p[1], t: Date.now()});
          });
        });
      }
    },
    // Slider, seed and pattern while painting (vitviz/ui/js/mae_paint_controls.js): off, the slider's label
    // saying how much is painted (`label`: vitviz.views.mae_paint.PAINTED_LABEL, its {hidden}, {total}, {share});
    // back on otherwise. Only a change of what they show is returned (undefined leaves them as they are).
    controls(label, paint, painted) {
      const cells = paint && Array.isArray(painted) ? painted.flat() : null;
      const text = cells && cells.length ? label.replace('{hidden}', cells.filter(Boolean).length)
        .replace('{total}', cells.length).replace('{share}', `${Math.round(100 * cells.filter(Boolean).length / cells.length)}%`)
        : null;
      if (text === mae.painting) return [undefined, undefined, undefined];
      mae.painting = text;
      const on = text === null;
      return [{__type__: 'update', interactive: on, label: on ? 'Masking ratio' : text},
              {__type__: 'update', interactive: on}, {__type__: 'update', interactive: on}];
    },
    painting: null,  // the slider's label while painting, null while it is on
    // The presenter layout's large readout (#mae-ratio-readout) follows the slider: its share hidden, in %.
    readout() {
      const el = document.querySelector('#mae-ratio-readout .vitviz-readout-value');
      const slider = document.querySelector('#mae-ratio input[type=range]');
      if (!el || !slider) return;
      const text = `${Math.round(Number(slider.value) * 100)}%`;
      if (el.textContent !== text) el.textContent = text;
    },
    // The sweep chart's marker (vitviz.plots.mae.CURRENT_MARKER) follows the slider, with no server call.
    marker() {
      const plot = document.querySelector('#mae-sweep-chart .js-plotly-plot');
      const slider = document.querySelector('#mae-ratio input[type=range]');
      if (!plot || !slider || !window.Plotly || !plot.layout) return;
      const x = Math.round(Number(slider.value) * 100);
      const shapes = plot.layout.shapes || [], notes = plot.layout.annotations || [];
      const i = shapes.findIndex((s) => s.name === 'current-ratio');
      if (i < 0 || shapes[i].x0 === x) return;
      const upd = {}; upd[`shapes[${i}].x0`] = x; upd[`shapes[${i}].x1`] = x;
      const j = notes.findIndex((a) => a.name === 'current-ratio');
      if (j >= 0) { upd[`annotations[${j}].x`] = x; upd[`annotations[${j}].text`] = `slider: ${x}%`; }
      window.Plotly.relayout(plot, upd);
    },
  };

  // --- attention: a head opened from the Heads tab ---------------------------------------------------------
  const attention = (() => {
    let props = null, want = null;
    // Sent once the tab's query view is drawn, and again (every 3 s, at most 5 times) until the view names
    // the wanted layer and head: the tab's own first views may still be arriving and reset them.
    const check = () => {
      if (!want) return true;
      const now = Date.now();
      const img = document.querySelector('#attn-query-overlay img');
      if (!props || !img || img.offsetParent === null || !img.getAttribute('src')) return false;
      const info = document.querySelector('#attn-query-info');
      const text = info ? info.innerText : '';
      const done = text.includes(`Layer ${want.layer} of`) && (!want.head || text.includes(`Head ${want.head} selected`));
      if ((want.sent && done) || want.tries >= 5) { want = null; return true; }
      if (want.sent && now - want.sent < 3000) return false;
      want.sent = now; want.tries += 1;
      setTimeout(later, 3050);  // the resend is due even if the page does not change meanwhile
      props.value = JSON.stringify({model: want.model, layer: want.layer, head: want.head, t: now});
      return false;
    };
    return {
      // js_on_load of the tab's hidden goto component: a target goes in its value, which fires its change.
      gotoTarget(p) { props = p; if (want) later(); },
      // The inputs of the tab's first view ([model, layer, part, query, head], its page-load chain): a head
      // clicked before the tab was ever shown becomes that view's layer and head (one computation, instead
      // of the default view and then the head's); the check above resends it if the view does not name it.
      first(values) {
        if (!want || want.sent || (want.model && want.model !== values[0])) return values;
        want.sent = Date.now(); want.tries += 1;
        setTimeout(later, 3050);
        return [values[0], want.layer, 'encoder', values[3], want.head];
      },
      goto(model, layer, head) {
        want = {model, layer: Number(layer), head: Number(head), sent: 0, tries: 0};
        watch(check);
        tabs.open('attention');
      },
    };
  })();

  // --- ablate: a head switched off from the Heads tab ------------------------------------------------------
  const ablate = (() => {
    let props = null, want = null, shownSince = 0;
    // Sent once the Ablate tab is shown and its views rest (its first views, or a new photo's, drawn): the
    // head is then added to the heads switched off, with the views recomputed once. Given up after 60 s.
    const check = () => {
      if (!want) return true;
      if (Date.now() - want.at > 60000) { want = null; return true; }
      const panel = examples.shownPanel();
      const info = document.querySelector('#intervene-info');
      if (!props || !panel || !panel.querySelector('#intervene-chart') || !info) { shownSince = 0; return false; }
      if (!shownSince) { shownSince = Date.now(); setTimeout(later, 600); }
      if (Date.now() - shownSince < 500 || !info.innerText.trim() || examples.busy(panel)) return false;
      props.value = JSON.stringify({model: want.model, layer: want.layer, head: want.head, t: Date.now()});
      want = null;
      return true;
    };
    return {
      // js_on_load of the Ablate tab's hidden goto component: a head goes in its value, which fires its change.
      gotoTarget(p) { props = p; if (want) later(); },
      // A head of the atlas (layer and head 1-based, as the atlas counts) to switch off in the Ablate tab.
      goto(model, layer, head) {
        want = {model, layer: Number(layer), head: Number(head), at: Date.now()};
        shownSince = 0;
        setTimeout(later, 60050);  // the give-up check runs even on a still page
        watch(check);
        tabs.open('intervene');
      },
    };
  })();

  // --- heads: clicks on the Heads tab's Plotly charts ------------------------------------------------------
  const heads = (() => {
    const handlers = new WeakMap();
    // A head (grid cell or scatter point) opens the Attention tab on it, or, with "A click on a head" set to
    // switching it off (#heads-click-does), the Ablate tab with it switched off.
    const openHead = (plot, pt) => {
      const layer = pt.customdata ? pt.customdata[0] : pt.y, head = pt.customdata ? pt.customdata[1] : pt.x;
      const model = plot.layout && plot.layout.meta ? plot.layout.meta.model : null;
      const off = document.querySelector('#heads-click-does input[value="ablate"]');
      (off && off.checked ? ablate : attention).goto(model, layer, head);
    };
    const make = {
      'heads-grid': (plot) => (ev) => { if (ev && ev.points && ev.points.length) openHead(plot, ev.points[0]); },
      'heads-scatter': (plot) => (ev) => {
        const pt = ev && ev.points && ev.points.find((p) => p.customdata);
        if (pt) openHead(plot, pt);
      },
      'heads-qk': (plot, props) => (ev) => {
        const pt = ev && ev.points && ev.points.find((p) => p.customdata);
        if (pt) props.value = JSON.stringify({token: pt.customdata[0], kind: pt.customdata[1], t: Date.now()});
      },
    };
    return {
      // js_on_load of the tab's hidden clicks component: a head (grid cell or scatter point) opens the
      // Attention tab on it; a query or key sends {"token", "kind"} in the component's value.
      clicks(props) {
        watch(() => {
          for (const id in make) {
            const plot = document.querySelector('#' + id + ' .js-plotly-plot');
            if (!plot || !plot.on) continue;
            if (!handlers.has(plot)) handlers.set(plot, make[id](plot, props));
            plot.removeListener('plotly_click', handlers.get(plot));  // Plotly may have been redrawn: attach once
            plot.on('plotly_click', handlers.get(plot));
          }
          return false;  // charts are redrawn for every image and model: keep watching
        });
      },
      attached: (plot) => handlers.has(plot),
    };
  })();

  // --- live: the MAE tab's live camera (vitviz.ui.mae_live): frames per second, frame-to-panel latency --
  // Every frame the page sends carries the stamp box's placeholder (vitviz.ui.mae_live.STAMP) among its
  // values; the fetch wrapper puts the page's clock in its place as the request leaves. An answer carries
  // the stamp of the frame it computed and the server's clock on entering and leaving its handler
  // ("sent:entered:left", or "video" for a video's frame, which has no send time here) in the data-live
  // attribute of the panels' holder (vitviz.ui.mae_live.figures_html); the latency runs until the
  // reconstruction panel's new picture has loaded. The rate counts the panels shown over the last WINDOW ms.
  //
  // The frames' path: the stream's first frame opens Gradio's stream event (its queue join); each next
  // frame Gradio's webcam offers (every stream_every, to .../stream/EVENT_ID) goes to the app's own route
  // (.../vitviz-live/stream/EVENT_ID, vitviz.ui.serve.frames) with the same body, and the answer -- the line
  // and the two panels as JPEG bytes -- is drawn here (object URLs into the holder's pictures): no queue, no
  // event-stream message, no re-render by Gradio. Gradio's client is told its frame was received. Every
  // KEEP_MS one frame goes to Gradio without its picture, which keeps its stream event open (the route
  // computes only for a stream Gradio runs: its slot, one per session, its time limit). Answered 410 (the
  // stream stopped: a sentence) or not found (no such route), the stream's next frames go through Gradio --
  // except a 410 "not running" before the route has computed any frame of the stream, within START_MS of its
  // join: Gradio has not started the stream's handler yet (a busy server), so that frame is dropped and the
  // next ones try the route again.
  //
  // Flow control: a frame is sent only while fewer than FAST_IN_FLIGHT (through Gradio: IN_FLIGHT) are
  // unanswered; the others are held (answered here, as the server would, and dropped). Two in flight keep
  // the server busy (the next frame waits there while one computes; the server drops all but the newest).
  // While the stream gives way to other visitors (its line says so: PAUSED_TEXT), one is. A frame
  // unanswered after HOLD_MS no longer counts, so a paused stream's page sends about one frame a second.
  const live = (() => {
    const MARK = JSON.stringify(__LIVE_STAMP__), WINDOW = 3000;  // the placeholder as it appears in JSON
    const IN_FLIGHT = 8, HOLD_MS = 1000, PAUSED_TEXT = 'Paused';  // vitviz.ui.mae_live.PAUSED
    const FAST_IN_FLIGHT = 2, KEEP_MS = 5000, START_MS = 10000, CHUNK = /\/stream\/([0-9a-f]{8,64})$/;
    let pending = [];  // send times of the frames sent and not yet answered
    let held = 0, pausedAt = 0, sent = 0;  // frames held back in the page; when the stream last paused; sent
    let gradioOnly = null, keptAt = 0, lastDrawn = 0, urls = [];  // a stream refused by the route; ...
    let joinedAt = 0, computed = null;  // when the last stream joined; the last stream the route computed for
    const shown = [];  // [time, latency ms or null] of the panels shown, oldest first
    // every [time, latency ms, ms until the answer arrived, sent, server entered, server left] (at most 20,000;
    // the last two on the server's clock, the same as the page's when both run on one machine: bench/live.py)
    const history = [];
    const answered = new Map();  // send time -> when its answer arrived (the route's frames)
    let src = null, total = 0;
    const median = (xs, q) => {
      const s = xs.slice().sort((a, b) => a - b);
      return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : null;
    };
    const stats = () => {
      const now = Date.now();
      while (shown.length && shown[0][0] < now - WINDOW) shown.shift();
      const lat = shown.map((x) => x[1]).filter((x) => x !== null);
      const span = shown.length > 1 ? (shown[shown.length - 1][0] - shown[0][0]) / 1000 : 0;
      return {total, held, sent, fps: span > 0 ? (shown.length - 1) / span : 0, p50: median(lat, 0.5),
              p90: median(lat, 0.9), latencies: lat};
    };
    const render = () => {
      const el = document.getElementById('mae-live-rate-text');
      if (!el) return;
      const s = stats();
      if (!shown.length) { el.textContent = ''; return; }
      el.textContent = `Live: ${s.fps.toFixed(1)} frames a second reach the page` + (s.p50 === null
        ? ` over the last ${WINDOW / 1000} s (a video's frames: no camera-to-panel latency to measure)`
        : ` · frame-to-panel latency ${Math.round(s.p50)} ms (median; 90% under ${Math.round(s.p90)} ms) over ` +
          `the last ${WINDOW / 1000} s`);
    };
    const record = (at, stamp, arrived) => {
      const [sentAt, entered, left] = stamp.split(':').map(Number);
      const video = stamp === 'video';
      if (sentAt > 0) pending = pending.filter((t) => t > sentAt);  // this frame and the older ones are answered
      if (!video && !(sentAt > 0)) return;  // the empty panels, or an answer without a stamp
      total += 1;
      shown.push([at, video ? null : at - sentAt]);
      if (history.length < 20000) {
        history.push(video ? [at, null, null, null, null, null]
                           : [at, at - sentAt, arrived - sentAt, sentAt, entered || null, left || null]);
      }
      render();
    };
    const check = () => {  // a new reconstruction picture in the page: when it arrived, then when it loaded
      const img = document.querySelector('#mae-live-pasted img');
      if (!img || !img.getAttribute('src') || img.src === src) return;
      src = img.src;
      const holder = img.closest('[data-live]');
      const stamp = holder ? holder.dataset.live || '' : '';
      const at = Number(stamp.split(':')[0]), arrived = answered.get(at) || Date.now();
      for (const t of [...answered.keys()]) if (t <= at) answered.delete(t);
      if (img.complete && img.naturalWidth) record(Date.now(), stamp, arrived);
      else img.addEventListener('load', () => record(Date.now(), stamp, arrived), {once: true});
    };
    const setLine = (text) => {  // the line under the panels: a gr.Markdown's paragraph (**bold** kept)
      const p = document.querySelector('#mae-live-line p');
      if (p && p.dataset.text !== text) {
        p.dataset.text = text;
        p.replaceChildren(...text.split('**').map((part, i) => {
          if (!(i % 2)) return document.createTextNode(part);
          const b = document.createElement('strong');
          b.textContent = part;
          return b;
        }));
      }
      if (text.startsWith(PAUSED_TEXT)) pausedAt = Date.now();
    };
    const draw = (meta, pictures) => {  // the route's answer: the line, then the two panels
      if (meta.line) setLine(meta.line);
      const holder = document.querySelector('#mae-live-panels [data-live]');
      if (!holder || pictures.length !== 2 || !meta.html) return;
      const shell = document.createElement('template');
      shell.innerHTML = meta.html;
      if (holder.querySelectorAll('img').length !== 2 || holder.dataset.shell !== meta.html) {
        holder.innerHTML = shell.content.firstElementChild.innerHTML;  // its children only (Gradio owns it)
        holder.dataset.shell = meta.html;
      }
      const old = urls;
      urls = pictures.map((b) => URL.createObjectURL(b));
      holder.dataset.live = meta.live || '';
      holder.querySelectorAll('img').forEach((img, i) => { img.src = urls[i]; });
      old.forEach((u) => URL.revokeObjectURL(u));
    };
    const ok = () => Promise.resolve(new Response('{"msg": "success"}',
                                                  {status: 200, headers: {'content-type': 'application/json'}}));
    const fast = (send, url, id, body, at) => {  // one frame to the app's own route (vitviz.ui.serve.frames)
      send.call(window, url.replace(CHUNK, `/vitviz-live/stream/${id}`),
                {method: 'POST', body, headers: {'content-type': 'application/json'}, credentials: 'same-origin'})
        .then(async (r) => {
          if (r.status !== 200) {
            pending = pending.filter((t) => t !== at);
            if (r.status === 204) return;  // dropped by the server: a newer frame came meanwhile
            if (r.status !== 410) gradioOnly = id;  // no such route: the next frames go through Gradio, at once
            const stop = await r.json().catch(() => ({}));
            if (r.status === 410 && !stop.ended && computed !== id && Date.now() - joinedAt < START_MS) return;
            gradioOnly = id;  // stopped: the next frames go through Gradio
            if (stop.stop) setLine(stop.stop);
            // the run's time limit: stop the camera (Gradio's webcam would open a new stream by itself)
            const camera = document.querySelector("#mae-live-camera button[aria-label='capture photo']");
            if (stop.ended && camera && camera.innerText.includes('Stop')) camera.click();
            return;
          }
          computed = id;
          const data = await r.arrayBuffer();
          const sizes = (r.headers.get('x-vitviz-parts') || '').split(',').map(Number);
          answered.set(at, Date.now());
          const meta = JSON.parse(new TextDecoder().decode(new Uint8Array(data, 0, sizes[0])));
          let from = sizes[0];
          const pictures = sizes.slice(1).map((n) => {
            const b = new Blob([new Uint8Array(data, from, n)], {type: 'image/jpeg'});
            from += n;
            return b;
          });
          // a sentence: the next frame may go; paused: it stays counted until HOLD_MS (about one a second)
          if (!pictures.length && !meta.paused) pending = pending.filter((t) => t !== at);
          if (at < lastDrawn) return;
          lastDrawn = at;
          draw(meta, pictures);
        })
        .catch(() => { pending = pending.filter((t) => t !== at); });
    };
    const pictureless = (body) => {  // Gradio's frame without its picture: keeps its stream event open
      const b = JSON.parse(body);
      const picture = (v) => typeof (v && typeof v === 'object' ? v.url : v) === 'string'
        && String(v && typeof v === 'object' ? v.url : v).startsWith('data:image');
      b.data = b.data.map((v) => (picture(v) ? null : v));
      return JSON.stringify(b);
    };
    return {
      // From start(): stamp the frames as they leave (Gradio's client posts JSON strings with window.fetch).
      stampFrames() {
        const send = window.fetch;
        window.fetch = function (input, init) {
          if (init && typeof init.body === 'string' && init.body.includes(MARK)) {
            const now = Date.now(), url = String(input.url || input);
            const chunk = url.match(CHUNK);
            pending = pending.filter((t) => t > now - HOLD_MS);
            if (!chunk) keptAt = joinedAt = now;  // the stream's queue join: its first frame goes through Gradio
            if (chunk && chunk[1] !== gradioOnly) {
              if (now - keptAt > KEEP_MS) {
                keptAt = now;
                return send.call(this, input, Object.assign({}, init, {body: pictureless(init.body)}));
              }
              if (pending.length >= (now - pausedAt < HOLD_MS ? 1 : FAST_IN_FLIGHT)) { held += 1; return ok(); }
              pending.push(now);
              sent += 1;
              fast(send, url, chunk[1], init.body.split(MARK).join(`"${now}"`), now);
              return ok();
            }
            // a stream's next frame (not its start, the queue join) while IN_FLIGHT are unanswered: held back
            const cap = now - pausedAt < HOLD_MS ? 1 : IN_FLIGHT;
            if (chunk && pending.length >= cap) { held += 1; return ok(); }
            pending.push(now);
            sent += 1;
            init = Object.assign({}, init, {body: init.body.split(MARK).join(`"${now}"`)});
          }
          return send.call(this, input, init);
        };
      },
      // js_on_load of the rate line: watch the panels with an observer of their own (no delay).
      rate() {
        whenElement('mae-live-panels', (box) => {
          new MutationObserver(check).observe(box, {childList: true, subtree: true, attributes: true});
        });
        whenElement('mae-live-line', (line) => {
          const paused = () => { if (line.innerText.trim().startsWith(PAUSED_TEXT)) pausedAt = Date.now(); };
          new MutationObserver(paused).observe(line, {childList: true, subtree: true, characterData: true});
        });
      },
      stats,  // {total, held, sent, fps, p50, p90, latencies}: what the line shows (held: frames kept in the page)
      history: () => history.slice(),  // bench/live.py reads it
    };
  })();

  // --- keys: the keyboard, while no text field has the focus ----------------------------------------------
  const step = (selector, delta) => {
    const el = document.querySelector(selector);
    if (!el || el.offsetParent === null) return false;  // only the visible tab's control
    const v = Math.min(Number(el.max), Math.max(Number(el.min), Number(el.value) + delta * Number(el.step || 1)));
    el.value = String(v);
    el.dispatchEvent(new Event('input', {bubbles: true}));
    el.dispatchEvent(new Event('change', {bubbles: true}));
    return true;
  };
  const press = (id) => {
    const layer = document.getElementById('attn-layer');
    const b = document.getElementById(id);
    if (!layer || layer.offsetParent === null || !b) return false;  // only while the Attention tab shows
    b.click();
    return true;
  };
  const onKey = (e) => {
    const t = e.target;
    if (t && (['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName) || t.isContentEditable)) return;
    const back = e.key === 'ArrowLeft' || e.key === '[', forward = e.key === 'ArrowRight' || e.key === ']';
    let done = false;
    if (back || forward) {  // the MAE tab's ratio, or the Attention tab's layer: whichever is shown
      done = step('#mae-ratio input[type=range]', forward ? +1 : -1) || press(forward ? 'attn-next' : 'attn-prev');
      if (done && document.getElementById('mae-ratio')?.offsetParent) inpage.load();  // the MAE slider: intent
    } else if (e.code === 'KeyP' && e.altKey) {  // the key's place: Option+P types 'π' on a Mac, Caps Lock 'P'
      presenter.toggle(); done = true;
    }
    if (done) e.preventDefault();
  };

  let started = false;
  window.vitviz = {
    watch, tabs, url, presenter, examples, share, image, lazy, scrub, inpage, mae, attention, ablate, heads, live,
    // Run the watchers' checks soon even if the page does not change (a check that waits for time to pass).
    wake: () => later(),
    // Once the app has loaded (launch(js=...)): open the URL's tab, lay out, listen to the keyboard.
    start() {
      if (started) return;
      started = true;
      tabs.start();
      examples.fromUrl();
      watch(() => {  // the share line (vitviz.ui.share): its text and its button
        const b = document.getElementById('share-copy');
        if (!b) return false;
        b.addEventListener('click', () => share.copy());
        share.render();
        return true;
      });
      if (window.vitviz.tour) window.vitviz.tour.start();  // vitviz/ui/js/tour.js
      presenter.apply();
      live.stampFrames();
      inpage.whenWanted();
      document.addEventListener('keydown', onKey);
      // The chart's marker moves after the panels are painted: Plotly's relayout, run in the slider's input event,
      // came before the stop's panels (the slider's change) and delayed them (bench/browser.py --keys). The
      // presenter's readout follows with it.
      document.addEventListener('input', (e) => {
        if (e.target.closest('#mae-ratio')) requestAnimationFrame(() => setTimeout(() => { mae.marker(); mae.readout(); }, 0));
      });
      watch(() => { mae.marker(); mae.readout(); return false; });  // a new chart, or a slider the server moved
    },
  };
})();
