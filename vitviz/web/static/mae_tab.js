// The app's MAE tab, computed in the visitor's browser: once mae-tiny is in the page, a change of ratio,
// seed or pattern, and a painted stroke, is reconstructed here (mae_core.js, the static page's own arithmetic)
// and handed to Gradio as the panels' new values, with no server call. The model's input is the server's own
// square view of the photo (the hidden #mae-model-view panel, lossless PNG), so both paths see the same pixels.
// Anything else (another model, a comparison, a seed the page carries no mask for, a browser without
// WebAssembly) returns null: the caller then uses the server.
import {
  cameraLoop, engineText, errorPanel, loadModel, makeMask, maskCode, modelOptions, originalPanel, paintStroke,
  reconstructOnce, squareView, startReconstruction,
} from "./mae_core.js";

const base = new URL("./", import.meta.url).href;

/** The panels as Gradio file values (PNG blob: URLs that never leave the page). */
async function asFile(rgba, size) {
  const canvas = new OffscreenCanvas(size, size);
  canvas.getContext("2d").putImageData(new ImageData(rgba, size, size), 0, 0);
  const blob = await canvas.convertToBlob({ type: "image/png" });
  const url = URL.createObjectURL(blob);
  return { path: url, url, orig_name: "image.png", mime_type: "image/png", size: blob.size, is_stream: false,
    meta: { _type: "gradio.FileData" } };
}

/** RGBA (S*S*4) of an image URL drawn at S x S. */
async function pixels(url, size) {
  const bitmap = await createImageBitmap(await (await fetch(url)).blob());
  const canvas = new OffscreenCanvas(size, size);
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  ctx.drawImage(bitmap, 0, 0, size, size);
  bitmap.close();
  return ctx.getImageData(0, 0, size, size).data;
}

/**
 * Start loading the model; the returned object answers the tab's changes.
 *
 * @returns {{ready: Promise<void>, state: object, panels: Function, describe: Function}}
 */
export function create() {
  const state = { model: null, config: null, tables: null, error: null, view: { url: null, rgba: null },
    runs: 0, lastMs: 0, last: null, gen: 0, sweeps: 0, chain: Promise.resolve(), revoke: [] };
  const ready = (async () => {
    if (typeof WebAssembly !== "object") throw new Error("this browser has no WebAssembly");
    state.config = await (await fetch(base + "config.json")).json();
    state.tables = await (await fetch(base + "masks.json")).json();
    const model = await loadModel(base + "vendor/", base + state.config.model, state.config.size,
                                  modelOptions(window.location.search));
    await model.ready;  // every lane: once the tab computes in the page, it fetches nothing more
    state.model = model;
  })().catch((err) => { state.error = String(err.message || err); })
    .finally(() => { document.body.dataset.vitvizInpage = state.model ? "ready" : "off"; });  // for tests
  // The model's view is read as soon as the server shows it, so a later change waits on nothing.
  ready.then(() => {
    const prefetch = () => { if (state.model) view().catch(() => {}); };
    const watched = new WeakSet();
    new MutationObserver(() => {
      const img = document.querySelector("#mae-model-view img");
      if (img && !watched.has(img)) { watched.add(img); img.addEventListener("load", prefetch); }
      prefetch();
    }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["src"] });
    prefetch();
  });

  /** Whether this change is one the page computes. */
  const mine = (model, paint, compare, noCompare) => state.model && model === state.config.name && !paint
    && (!compare || compare === noCompare) && document.querySelector("#mae-model-view img");

  /** The model's view as RGBA, read once per photo (a read in flight is shared, never repeated). */
  async function view() {
    const img = document.querySelector("#mae-model-view img");
    if (!img || !img.src) return null;
    if (state.view.url !== img.src) {
      const url = img.src;
      const rgba = pixels(url, state.config.size);
      state.view = { url, rgba };
      rgba.then(() => {
        if (state.view.url === url) document.body.dataset.vitvizInpageView = url;  // for tests: the photo is in the page
      }, () => { if (state.view.url === url) state.view = { url: null, rgba: null }; });
    }
    return state.view.rgba;
  }

  /** The slider stop's mask for a seed and pattern, or null when the page carries no mask for them. */
  function stopMask(ratio, seed, pattern) {
    const s = Number(seed);
    if (!(Number.isInteger(s) && s >= 0 && s < state.tables.seeds) || !["random", "block", "grid"].includes(pattern)) {
      return null;
    }
    return makeMask(state.tables, pattern, Number(ratio), s);
  }

  /**
   * Reconstruct `mask` (made once its turn comes: `makeMaskNow()`) and draw the panels `kinds` of
   * original, masked, reconstruction, pasted, error; one change at a time, the newest wins ("stale" for the
   * others). Returns {files (Gradio file values, in `kinds` order), line (the metrics), mask} or null.
   */
  function compute(mask, kinds, painting) {
    const gen = ++state.gen;
    const work = state.chain.then(async () => {
      if (gen !== state.gen) return "stale";
      const rgba = await view();
      if (!rgba) return null;
      const { size, patch } = state.config;
      const t0 = performance.now();
      const out = await reconstructOnce(state.model, rgba, mask, state.config);
      const draw = { original: () => originalPanel(rgba, mask, size, patch, painting), masked: () => out.masked,
        reconstruction: () => out.reconstruction, pasted: () => out.pasted,
        error: () => errorPanel(out, mask, size, patch) };
      const files = await Promise.all(kinds.map((k) => asFile(draw[k](), size)));
      state.lastMs = performance.now() - t0;
      for (const u of state.revoke.splice(0)) URL.revokeObjectURL(u);
      state.revoke.push(...files.map((f) => f.url));
      state.runs += 1;
      const hidden = mask.reduce((a, b) => a + b, 0);
      state.last = { hidden, maskedMse: out.maskedMse, psnr: out.psnr, errorMap: Array.from(out.errorMap),
        mask: Array.from(mask) };
      document.body.dataset.vitvizInpageRuns = String(state.runs);
      return { files, out, hidden };
    });
    state.chain = work.catch(() => null);
    return work;
  }

  /**
   * The four ratio-dependent panels and the metrics line, or null (use the server), or "stale" (a newer
   * change came first: leave the panels as they are).
   */
  async function panels(ratio, model, seed, pattern, paint, compare, noCompare) {
    if (!mine(model, paint, compare, noCompare)) return null;
    const mask = stopMask(ratio, seed, pattern);
    if (!mask) return null;
    const done = await compute(mask, ["masked", "reconstruction", "pasted", "error"], false);
    if (!done || done === "stale") return done;
    return [...done.files, metrics(model, done.hidden, mask.length, done.out)];
  }

  /**
   * Painting, computed in the page. A stroke (`points`: [x, y] fractions of the view) changes the painted
   * mask on screen (the slider stop's when not painting yet) as the server's paint_stroke does, and turns
   * painting on; `points` null is a tick or untick of "Paint the mask", which starts from the slider stop
   * (vitviz.ui.mae_paint.start_paint). Returns {painted ((gh, gw) booleans), paint, code (the URL's mask
   * code, "" when not painting), files (original, masked, reconstruction, pasted, error), line}, or null
   * (use the server), or "stale".
   */
  async function paint(points, paintOn, painted, model, ratio, seed, pattern, compare, noCompare) {
    if (!mine(model, false, compare, noCompare)) return null;
    const [gh, gw] = state.tables.grid;
    const shown = paintOn && Array.isArray(painted) && painted.length === gh
      && painted.every((row) => Array.isArray(row) && row.length === gw) ? Uint8Array.from(painted.flat(), Number) : null;
    const start = points && shown ? shown : stopMask(ratio, seed, pattern);
    if (!start) return null;
    const mask = points ? paintStroke(start, points, gh, gw) : start;
    const on = points ? true : Boolean(paintOn);
    const done = await compute(mask, ["original", "masked", "reconstruction", "pasted", "error"], on);
    if (!done || done === "stale") return done;
    state.last.points = points;  // for tests: the stroke as the page applied it
    const rows = Array.from({ length: gh }, (_, r) => Array.from(mask.subarray(r * gw, (r + 1) * gw), (h) => h === 1));
    return { painted: rows, paint: on, code: on ? maskCode(mask, gh, gw) : "", files: done.files,
      line: metrics(model, done.hidden, mask.length, done.out) };
  }

  /**
   * The sweep chart's error curve after a seed or pattern chosen in the page (the server's sweep is of the seed
   * and pattern it last computed): every stop the chart shows, reconstructed here one at a time after the panels
   * (a newer change of the controls goes first), then the chart's MSE trace, its hover numbers and its title
   * restyled. A newer seed or pattern abandons an older curve.
   */
  async function chart(model, seed, pattern) {
    const plot = document.querySelector("#mae-sweep-chart .js-plotly-plot");
    if (!plot || !window.Plotly || !plot.data || !plot.data[0] || !state.model) return;
    const gen = ++state.sweeps;
    const xs = Array.from(plot.data[0].x);
    const mse = [];
    const custom = [];
    for (const x of xs) {
      const mask = stopMask(Math.round(x) / 100, seed, pattern);
      if (!mask) return;
      const step = state.chain.then(async () => {
        const rgba = gen === state.sweeps ? await view() : null;
        return rgba ? reconstructOnce(state.model, rgba, mask, state.config) : null;
      });
      state.chain = step.catch(() => null);
      const out = await step.catch(() => null);
      if (!out || gen !== state.sweeps) return;
      const hidden = mask.reduce((a, b) => a + b, 0);
      mse.push(out.maskedMse);
      custom.push([out.psnr, mask.length - hidden]);
    }
    window.Plotly.restyle(plot, { y: [mse], customdata: [custom] }, [0]);
    window.Plotly.relayout(plot, { "title.text": `${model}: error and encoder cost against masking ratio `
      + `(seed ${seed}, ${pattern}; computed in your browser)` });
    document.body.dataset.vitvizInpageChart = `${seed}:${pattern}`;  // for tests
  }

  function metrics(model, hidden, length, out) {
    const place = "computed **in your browser**";
    if (hidden === 0) return `**${model}** · **nothing is hidden**: nothing to rebuild · ${place}`;
    return `**${model}** · hidden-patch **MSE ${out.maskedMse.toFixed(4)}** · **PSNR ${out.psnr.toFixed(1)}\u00a0dB** · `
      + `**${length - hidden} of ${length} tokens** encoded (${hidden} hidden) · ${place}`;
  }

  /** Which path the tab runs for a model, as one sentence. */
  function describe(model) {
    if (state.model && model === state.config.name) {
      return `Computed in your browser (${engineText(state.model)}; `
        + `${model} ${(state.model.bytes / 1e6).toFixed(1)} MB): ratio, seed, pattern and painting make no server call.`;
    }
    if (state.error) return `Computed on the server (the model could not start in this browser: ${state.error}).`;
    return "Computed on the server.";
  }

  /** The tab's controls as the page shows them (the camera reads them at every frame). */
  function controls() {
    const ratio = Number((document.querySelector("#mae-ratio input[type=range]") || {}).value ?? 0.75);
    const seed = Number((document.querySelector("#mae-seed input") || {}).value ?? 0);
    const pattern = (document.querySelector("#mae-pattern input:checked") || {}).value || "random";
    return { ratio, seed: Number.isInteger(seed) && seed >= 0 && seed < state.tables.seeds ? seed : 0, pattern };
  }

  /**
   * The camera, reconstructed in the page: every frame the camera delivers, one at a time, drawn on the
   * canvases of `root` (#mae-inpage-live: its button, rate line, video and four canvases).
   */
  const cam = { stream: null, frames: 0, fps: 0, ms: 0, mask: { key: "", mask: null } };
  state.camera = cam;
  async function camera(root) {
    const q = (sel) => root.querySelector(sel);
    const rate = q("[data-rate]");
    if (cam.stream) {
      cam.stream.getTracks().forEach((t) => t.stop());
      cam.stream = null;
      q("button").textContent = "Start the camera in your browser";
      return;
    }
    await ready;
    if (!state.model) { rate.textContent = `The model could not start in this browser: ${state.error}`; return; }
    try {
      cam.stream = await navigator.mediaDevices.getUserMedia({ video: { width: 320, height: 240 } });
    } catch (err) {
      rate.textContent = `No camera: ${err.message || err}`;
      return;
    }
    const video = q("video");
    video.srcObject = cam.stream;
    await video.play();
    q("button").textContent = "Stop the camera";
    const { size, patch } = state.config;
    const canvas = (name) => q(`canvas[data-panel=${name}]`).getContext("2d");
    const grab = new OffscreenCanvas(size, size);
    // Frames are finished one at a time and putImageData copies, so the masked and pasted panels are filled into
    // the same two buffers every frame (no garbage a frame); the camera shows no reconstruction panel.
    const into = { masked: new Uint8ClampedArray(size * size * 4), pasted: new Uint8ClampedArray(size * size * 4),
      reconstruction: null };
    // A frame's graph runs while the previous frame is drawn (cameraLoop); cam.ms is the time from a frame's
    // capture to its panels drawn.
    await cameraLoop(video, () => cam.stream !== null, () => {
      const t0 = performance.now();
      const rgba = squareView(grab, video, video.videoWidth, video.videoHeight, size);
      const c = controls();
      const key = `${c.ratio}:${c.seed}:${c.pattern}`;
      if (cam.mask.key !== key) cam.mask = { key, mask: makeMask(state.tables, c.pattern, c.ratio, c.seed) };
      const mask = cam.mask.mask;
      const run = startReconstruction(state.model, rgba, mask, state.config, into);
      return {
        graph: run.graph,
        finish: async () => {
          const out = await run.panels();
          canvas("original").putImageData(new ImageData(rgba, size, size), 0, 0);
          canvas("masked").putImageData(new ImageData(out.masked, size, size), 0, 0);
          canvas("pasted").putImageData(new ImageData(out.pasted, size, size), 0, 0);
          canvas("error").putImageData(new ImageData(errorPanel(out, mask, size, patch), size, size), 0, 0);
          cam.frames += 1;
          cam.ms = performance.now() - t0;
          document.body.dataset.vitvizInpageFrames = String(cam.frames);  // for tests: frames drawn so far
        },
      };
    }, (fps) => {
      cam.fps = fps;
      rate.textContent = `${fps.toFixed(1)} frames a second, computed in your browser (${cam.ms.toFixed(0)} ms a frame)`;
    }, state.model.lanes).catch((err) => { rate.textContent = String(err.message || err); });
  }

  return { ready, state, panels, paint, chart, describe, camera };
}
