// mae-tiny in the browser: masks, the ONNX Runtime Web session, and the panels from its predictions.
//
// The arithmetic is the library's (vitviz/mae/reconstruct.py): the model sees the square view
// normalised with the ImageNet mean/std; its per-patch predictions (L, p*p*3, pixels in
// (row, col, channel) order) are de-normalised, clipped to [0, 1], scaled by 255 and rounded;
// the error of a patch is the mean of the squared differences of the 0-255 levels over its
// p*p*3 values, divided by 255^2; the masked MSE is the mean over hidden patches, and
// PSNR = -10 log10(masked MSE). Masks: `random` and `block` hide a prefix of the seed's hiding
// order (tables written by vitviz.web.graph.mask_tables, so the masks are the server's),
// `grid` is computed here as vitviz.core.masking.grid_mask computes it.

export const HIDDEN_GREY = 128;

/** Python's round(): halves to even (num_hidden rounds ratio * L this way). */
function roundHalfEven(x) {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** Hidden patches for a ratio: round(ratio * L), leaving at least one visible. */
export function numHidden(length, ratio) {
  return Math.min(roundHalfEven(ratio * length), length - 1);
}

/** The grid pattern: keep L - hidden evenly spaced patches (a 2-D lattice when it fits). */
export function gridMask(gh, gw, ratio) {
  const length = gh * gw;
  const keep = length - numHidden(length, ratio);
  const mask = new Uint8Array(length).fill(1);
  const s = roundHalfEven(Math.sqrt(length / keep));
  if (s >= 1 && s * s * keep === length && gh % s === 0 && gw % s === 0) {
    for (let r = 0; r < gh; r += s) for (let c = 0; c < gw; c += s) mask[r * gw + c] = 0;
    return mask;
  }
  for (let i = 0; i < keep; i++) mask[Math.floor((i * length) / keep)] = 0;
  return mask;
}

/**
 * A mask as Uint8Array(L), 1 = hidden. `tables` is masks.json: {grid: [gh, gw], seeds, random: [...], block: [...]}.
 */
export function makeMask(tables, pattern, ratio, seed) {
  const [gh, gw] = tables.grid;
  const length = gh * gw;
  if (pattern === "grid") return gridMask(gh, gw, ratio);
  const orders = tables[pattern];
  if (!orders) throw new Error(`unknown mask pattern ${pattern}; choose one of random, block, grid`);
  if (!(Number.isInteger(seed) && seed >= 0 && seed < tables.seeds)) {
    throw new Error(`the page carries seeds 0 to ${tables.seeds - 1}; got ${seed}`);
  }
  const order = orders[seed];
  const mask = new Uint8Array(length);
  const k = numHidden(length, ratio);
  for (let i = 0; i < k; i++) mask[order[i]] = 1;
  return mask;
}

/**
 * One stroke of the brush on a painted mask, as the server applies it (vitviz.views.mae_paint.paint_stroke).
 *
 * @param {Uint8Array} mask   (L,) 1 = hidden, L = gh * gw in raster order
 * @param {Array} points      [x, y] fractions of the view (x right, y down) in the order the pointer passed
 *                            them; a point outside [0, 1] or not two numbers is ignored. The patch under a point
 *                            is row = floor(y * gh), col = floor(x * gw), clamped into the grid
 *                            (vitviz.core.patches.pixel_to_patch with size 1).
 * @returns {Uint8Array} a new mask: every patch the stroke crossed is hidden when the first one was visible,
 *                       shown when it was hidden; one patch (the last crossed) always stays visible.
 */
export function paintStroke(mask, points, gh, gw) {
  const out = Uint8Array.from(mask);
  const cells = [];
  for (const p of Array.isArray(points) ? points : []) {
    if (!Array.isArray(p) || p.length !== 2 || typeof p[0] !== "number" || typeof p[1] !== "number") continue;
    const [x, y] = p;
    if (!(x >= 0 && x <= 1 && y >= 0 && y <= 1)) continue;
    const row = Math.min(Math.max(Math.floor(y * gh), 0), gh - 1);
    const col = Math.min(Math.max(Math.floor(x * gw), 0), gw - 1);
    const cell = row * gw + col;
    if (!cells.includes(cell)) cells.push(cell);
  }
  if (!cells.length) return out;
  const hide = out[cells[0]] ? 0 : 1;
  for (const cell of cells) out[cell] = hide;
  if (out.every((h) => h === 1)) out[cells[cells.length - 1]] = 0;
  return out;
}

/** A mask as the URL carries it (vitviz.ui.urlstate.encode_mask): "<gh>x<gw>.<hex>", 4 patches a digit. */
export function maskCode(mask, gh, gw) {
  let digits = "";
  for (let i = 0; i < mask.length; i += 4) {
    let d = 0;
    for (let k = 0; k < 4; k++) d = d * 2 + (i + k < mask.length && mask[i + k] ? 1 : 0);
    digits += d.toString(16);
  }
  return `${gh}x${gw}.${digits}`;
}

/**
 * The Original panel as the server draws it (vitviz.views.mae.panels): while painting, hidden patches
 * blended towards dark grey (vitviz.render.mae.shade_hidden, alpha 0.62 towards 40), then the patch grid as
 * white 1-px lines at alpha 0.45 (grid_overlay: every patch's first row and column, and the last ones).
 *
 * @returns {Uint8ClampedArray} S*S*4
 */
export function originalPanel(rgba, mask, size, patch, painting) {
  const out = new Uint8ClampedArray(rgba);
  const gw = size / patch;
  for (let y = 0; y < size; y++) {
    const line = y % patch === 0 || y === size - 1;
    for (let x = 0; x < size; x++) {
      const pix = (y * size + x) * 4;
      const shade = painting && mask[Math.floor(y / patch) * gw + Math.floor(x / patch)] === 1;
      const grid = line || x % patch === 0 || x === size - 1;
      for (let c = 0; c < 3; c++) {
        let v = out[pix + c];
        if (shade) v = Math.round(0.38 * v + 0.62 * 40);
        if (grid) v = Math.round(0.55 * v + 0.45 * 255);
        out[pix + c] = v;
      }
      out[pix + 3] = 255;
    }
  }
  return out;
}

/** Visible patch indices in raster order, as the graph's int64 input. */
export function visibleIds(mask) {
  const ids = [];
  for (let i = 0; i < mask.length; i++) if (!mask[i]) ids.push(BigInt(i));
  return BigInt64Array.from(ids);
}

/** RGBA (S*S*4) of the square view -> Float32Array (3*S*S), channel-first, normalised. */
export function normalise(rgba, size, mean, std) {
  const n = size * size;
  const out = new Float32Array(3 * n);
  // Each channel's 256 levels normalised once (the same float32 steps as per pixel), then looked up per pixel.
  const table = new Float32Array(256);
  for (let c = 0; c < 3; c++) {
    const m = Math.fround(mean[c]);
    const s = Math.fround(std[c]);
    for (let v = 0; v < 256; v++) table[v] = Math.fround(Math.fround(v / 255) - m) / s;
    const plane = out.subarray(c * n, (c + 1) * n);
    for (let i = 0, j = c; i < n; i++, j += 4) plane[i] = table[rgba[j]];
  }
  return out;
}

/**
 * The panels and numbers of one prediction.
 *
 * @param {Uint8ClampedArray} rgba  square view, S*S*4
 * @param {Float32Array} pred       (L, p*p*3) predictions in normalised space
 * @param {Uint8Array} mask         (L,) 1 = hidden
 * @param {{masked?, pasted?, reconstruction?: Uint8ClampedArray|null}} into  buffers (S*S*4) to fill instead of new
 *   ones (the camera reuses its own from frame to frame); `reconstruction: null` leaves that panel out
 * @returns {{masked, reconstruction, pasted: Uint8ClampedArray, errorMap: Float64Array, maskedMse: number, psnr: number}}
 */
export function panels(rgba, pred, mask, size, patch, mean, std, into = {}) {
  const gw = size / patch;
  const masked = into.masked || new Uint8ClampedArray(rgba.length);
  const reconstruction = into.reconstruction === null ? null
    : into.reconstruction || new Uint8ClampedArray(rgba.length);
  const pasted = into.pasted || new Uint8ClampedArray(rgba.length);
  const errorMap = new Float64Array(mask.length);
  const per = patch * patch * 3;
  // Whole pixels are written as one 32-bit word (R, G, B, A in memory order on a little-endian machine, which
  // every browser's WebAssembly host is); the levels are computed per channel exactly as before.
  const rgba32 = new Uint32Array(rgba.buffer, rgba.byteOffset, rgba.length / 4);
  const masked32 = new Uint32Array(masked.buffer);
  const recon32 = reconstruction ? new Uint32Array(reconstruction.buffer) : null;
  const pasted32 = new Uint32Array(pasted.buffer);
  const OPAQUE = 0xff000000;
  const GREY = (OPAQUE | (HIDDEN_GREY << 16) | (HIDDEN_GREY << 8) | HIDDEN_GREY) >>> 0;
  const [s0, s1, s2] = std;
  const [m0, m1, m2] = mean;
  const level = (v) => Math.round(Math.min(1, Math.max(0, v)) * 255);
  for (let l = 0; l < mask.length; l++) {
    const pr = Math.floor(l / gw);
    const pc = l % gw;
    const hidden = mask[l] === 1;
    let sum = 0;
    let src = l * per;
    for (let y = 0; y < patch; y++) {
      let pix = (pr * patch + y) * size + pc * patch;
      for (let x = 0; x < patch; x++, pix++, src += 3) {
        const r = level(pred[src] * s0 + m0);
        const g = level(pred[src + 1] * s1 + m1);
        const b = level(pred[src + 2] * s2 + m2);
        const o = pix * 4;
        const dr = r - rgba[o];
        const dg = g - rgba[o + 1];
        const db = b - rgba[o + 2];
        sum += dr * dr + dg * dg + db * db;
        const word = (OPAQUE | (b << 16) | (g << 8) | r) >>> 0;
        if (recon32) recon32[pix] = word;
        if (hidden) {
          pasted32[pix] = word;
          masked32[pix] = GREY;
        } else {
          const orig = (rgba32[pix] | OPAQUE) >>> 0;
          pasted32[pix] = orig;
          masked32[pix] = orig;
        }
      }
    }
    errorMap[l] = sum / (per * 255 * 255);
  }
  let total = 0;
  let count = 0;
  for (let l = 0; l < mask.length; l++) if (mask[l]) { total += errorMap[l]; count++; }
  const maskedMse = count ? total / count : 0;
  const psnr = maskedMse > 0 ? -10 * Math.log10(maskedMse) : Infinity;
  return { masked, reconstruction, pasted, errorMap, maskedMse, psnr };
}

/**
 * One reconstruction in two halves: the graph starts now on the visible patches of `rgba`; `panels()` awaits it
 * and builds the panels and numbers. Between the two, the page is free (with ONNX Runtime's proxy worker the graph
 * runs off the page's thread), which is how the camera overlaps one frame's panels with the next frame's graph.
 *
 * @param {{run: Function}} model  from loadModel
 * @param {Uint8ClampedArray} rgba  square view, S*S*4
 * @param {Uint8Array} mask         (L,) 1 = hidden; at least one patch visible
 * @param {{size: number, patch: number, mean: number[], std: number[]}} config
 * @param {object} into             panels()'s buffers to fill (default: new ones)
 * @returns {{graph: Promise<Float32Array>, panels: () => Promise<object>}}
 */
export function startReconstruction(model, rgba, mask, config, into = {}) {
  if (mask.every((h) => h === 1)) throw new Error("the mask hides every patch; leave at least one visible");
  const { size, patch, mean, std } = config;
  const graph = model.run(normalise(rgba, size, mean, std), visibleIds(mask));
  graph.catch(() => {});  // a failure is reported by panels(), not as an unhandled rejection
  return { graph, panels: async () => panels(rgba, await graph, mask, size, patch, mean, std, into) };
}

/**
 * One reconstruction: the graph on the visible patches of `rgba`, then the panels and numbers
 * (the one path of the static page and of the app's MAE tab).
 */
export async function reconstructOnce(model, rgba, mask, config) {
  return startReconstruction(model, rgba, mask, config).panels();
}

/** A visible patch on the error map (not predicted), as vitviz.render.mae.error_heatmap draws it. */
export const VISIBLE_GREY = 225;

/**
 * The error map's RGBA for one result, as the server's panel (without its colour bar): hidden patches
 * coloured on a scale up to the largest hidden-patch error, visible patches light grey.
 */
export function errorPanel(out, mask, size, patch) {
  let peak = 0;
  for (let l = 0; l < mask.length; l++) if (mask[l]) peak = Math.max(peak, out.errorMap[l]);
  const rgba = errorImage(out.errorMap, size, patch, peak);
  const gw = size / patch;
  for (let l = 0; l < mask.length; l++) {
    if (mask[l]) continue;
    const pr = Math.floor(l / gw);
    const pc = l % gw;
    for (let y = 0; y < patch; y++) {
      const row = ((pr * patch + y) * size + pc * patch) * 4;
      for (let x = 0; x < patch * 4; x += 4) rgba.fill(VISIBLE_GREY, row + x, row + x + 3);
    }
  }
  return rgba;
}

/**
 * The model's view of an image or video frame: shorter side to `size`, centre crop, drawn on `canvas`
 * (S x S); its RGBA (S*S*4).
 */
export function squareView(canvas, source, width, height, size) {
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  const side = Math.min(width, height);
  ctx.imageSmoothingEnabled = true;
  ctx.imageSmoothingQuality = "high";
  ctx.drawImage(source, (width - side) / 2, (height - side) / 2, side, side, 0, 0, size, size);
  return ctx.getImageData(0, 0, size, size).data;
}

/**
 * Every frame the camera delivers, reconstructed back to back: `step(video)` captures the newest frame and starts
 * its graph, returning `{graph, finish}` (`graph` a promise settled when the graph is done, `finish()` drawing the
 * frame). Up to `inFlight` graphs run at once (one per lane of the model: {@link loadModel}); while they run, the
 * frames whose graphs are done are finished, oldest first (their panels and drawing, on the page's thread while the
 * graphs run in ONNX Runtime's workers), so frames are drawn in the order they were captured. A frame that arrived
 * while the page was busy is taken at once, without waiting for the next one. `onRate(fps)` about once a second
 * with the frames drawn over that second. Runs while `going()`.
 */
export async function cameraLoop(video, going, step, onRate, inFlight = 1) {
  let shown = 0;
  let since = performance.now();
  let presented = 0;  // frames the video has presented (requestVideoFrameCallback), or animation frames
  let taken = -1;     // the value of `presented` when the last frame was captured
  let wake = null;
  const rouse = () => { if (wake) wake(); };
  const onFrame = (now, meta) => {
    presented = meta && Number.isFinite(meta.presentedFrames) ? meta.presentedFrames : presented + 1;
    rouse();
    if (going()) watch();
  };
  const watch = () => (video.requestVideoFrameCallback
    ? video.requestVideoFrameCallback(onFrame) : requestAnimationFrame(() => onFrame()));
  const drawn = () => {
    shown += 1;
    const now = performance.now();
    if (now - since >= 1000) {
      onRate((shown * 1000) / (now - since));
      shown = 0;
      since = now;
    }
  };
  const pending = [];  // frames started and not yet finished, oldest first: {finish, done, settled}
  const finishOldest = async () => {
    await pending.shift().finish();
    drawn();
  };
  watch();
  while (going()) {
    const running = pending.filter((f) => !f.done).length;
    if (video.readyState >= 2 && presented !== taken && running < Math.max(1, inFlight)) {
      taken = presented;
      const current = step(video);
      const frame = { finish: current.finish, done: false };
      const settle = () => { frame.done = true; rouse(); };
      frame.settled = Promise.resolve(current.graph).then(settle, settle);
      pending.push(frame);
      continue;
    }
    if (pending.length && pending[0].done) {
      await finishOldest();
      continue;
    }
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 250);  // the camera may stop delivering: look at going() again
      wake = () => { clearTimeout(timer); wake = null; resolve(); };
    });
  }
  while (pending.length) {
    await pending[0].settled;
    await finishOldest();
  }
}

/** Colours of the error map (viridis, 5 stops), value in [0, 1]. */
const RAMP = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];

export function rampColour(t) {
  const x = Math.min(1, Math.max(0, t)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const f = x - i;
  return RAMP[i].map((a, c) => Math.round(a + f * (RAMP[i + 1][c] - a)));
}

/** Error map as RGBA at S*S: each patch one colour, scaled by `peak` (the largest error shown). */
export function errorImage(errorMap, size, patch, peak) {
  const gw = size / patch;
  const out = new Uint8ClampedArray(size * size * 4);
  for (let l = 0; l < errorMap.length; l++) {
    const [r, g, b] = rampColour(peak > 0 ? errorMap[l] / peak : 0);
    const pr = Math.floor(l / gw);
    const pc = l % gw;
    for (let y = 0; y < patch; y++) {
      for (let x = 0; x < patch; x++) {
        const pix = ((pr * patch + y) * size + pc * patch + x) * 4;
        out[pix] = r; out[pix + 1] = g; out[pix + 2] = b; out[pix + 3] = 255;
      }
    }
  }
  return out;
}

/**
 * {@link loadModel}'s options asked for by a page's address: `?threads=N` (1-16), `?lanes=N` (1-4) and
 * `?proxy=0|1` override its defaults, for benchmarks (bench/web_page.py: `--compare SITE?threads=2`,
 * `--app URL?lanes=2`).
 * @param {string} search  the address's query string (`location.search`)
 */
export function modelOptions(search) {
  const query = new URLSearchParams(search);
  const options = {};
  const count = (name, most) => Math.max(1, Math.min(most, Math.floor(Number(query.get(name))) || 1));
  if (query.has("threads")) options.threads = count("threads", 16);
  if (query.has("lanes")) options.lanes = count("lanes", 4);
  if (query.has("proxy")) options.proxy = query.get("proxy") === "1";
  return options;
}
/** How the model runs, for the page's sentence: "WebAssembly, 2 threads" or "... 1 thread in each of 2 workers". */
export function engineText(model) {
  const t = `${model.threads} thread${model.threads > 1 ? "s" : ""}`;
  return `WebAssembly, ${t}${model.lanes > 1 ? ` in each of ${model.lanes} workers` : ""}`;
}

/** Lanes of the in-page model on `cores` cores: 2 from 2 cores (the camera keeps a frame's graph in each), else 1. */
export function defaultLanes(cores) {
  return cores >= 2 ? 2 : 1;
}

/**
 * WASM threads of each of `lanes` lanes on a cross-origin isolated page with `cores` cores: all of 1 or 2 cores,
 * else cores - 1 (one stays with the page), at most 4, shared among the lanes; at least 1 a lane.
 */
export function defaultThreads(cores, lanes = 1) {
  const total = cores <= 2 ? Math.max(1, cores) : Math.min(4, cores - 1);
  return Math.max(1, Math.floor(total / lanes));
}

/**
 * Load ONNX Runtime Web (WASM backend) and the graph, in one or more lanes.
 *
 * A lane is its own instance of ONNX Runtime's module (its own proxy worker, WASM memory and session of the graph):
 * `run` gives each call to the lane with the fewest calls running, so the camera can have one frame's graph in
 * each lane at once (cameraLoop's `inFlight`). Lanes need no cross-origin isolation and share nothing: on a busy
 * machine one preempted lane does not stall the others, as a preempted WASM thread stalls its partners.
 *
 * Where the proxy worker cannot start (a Content-Security-Policy that forbids workers, a browser whose module
 * workers fail), the graph is loaded again on the page's thread with 1 thread and 1 lane, and the answer says
 * `proxy: false`: the page runs, only less smoothly. ONNX Runtime keeps a failed backend failed, so the retry
 * imports a fresh instance of its module.
 *
 * @param {string} vendorUrl  folder of ort.wasm.min.mjs and its WASM (absolute URL, ending in /)
 * @param {string} modelUrl   the .onnx file
 * @param {{proxy?: boolean, threads?: number, lanes?: number}} options  `proxy`: run the graph in ONNX Runtime's
 *   worker, off the page's thread (default: yes, where the browser has module workers); `threads`: WASM threads
 *   of each lane (default: `defaultThreads(cores, lanes)` when the page is cross-origin isolated; else 1); `lanes`:
 *   instances running graphs side by side (default: `defaultLanes(cores)`; 1 without `proxy`)
 * @returns {Promise<{run: (Float32Array, BigInt64Array) => Promise<Float32Array>, calls: number[], ready: Promise,
 *   threads: number, lanes: number, proxy: boolean, bytes: number}>}  once the first lane runs:
 *   `run(image (3*S*S,), visible (V,) int64) -> pred (L * p*p*3,)`; `calls`: the calls each lane was given so far
 *   (one entry a running lane); `ready`: settled when every lane asked for has started or failed
 */
export async function loadModel(vendorUrl, modelUrl, size, options = {}) {
  // Lanes need workers only; threads need cross-origin isolation (the app's page and /in-browser/ are; a page
  // framed by a site that is not, such as a Space inside huggingface.co, gets 1 a lane). On 2 cores, 2 lanes of
  // 1 thread: on a busy machine two WASM threads of one graph stall each other (a preempted thread holds up its
  // partner at every operator), two lanes do not (bench/README.md, "the in-page model in lanes").
  const cores = navigator.hardwareConcurrency || 1;
  const proxy = options.proxy ?? (typeof Worker === "function");
  const lanes = proxy ? Math.max(1, options.lanes ?? defaultLanes(cores)) : 1;
  const threads = options.threads ?? (self.crossOriginIsolated ? defaultThreads(cores, lanes) : 1);
  let bytes = await fetchModel(modelUrl);
  const length = bytes.length;
  const copy = lanes > 1 ? bytes.slice() : null;  // the proxy worker takes (transfers) the buffer it is given
  let pool;
  try {
    pool = pooled(await startSession(vendorUrl, "ort.wasm.min.mjs", bytes, size, threads, proxy));
  } catch (err) {
    if (!proxy) throw err;
    console.warn(`ONNX Runtime's worker did not start (${err?.message || err}): the model runs on the page's thread`);
    if (!bytes.byteLength) bytes = await fetchModel(modelUrl);  // the worker took the buffer before it failed
    const run = await startSession(vendorUrl, "ort.wasm.min.mjs?proxy=0", bytes, size, 1, false);
    return { ...pooled(run), ready: Promise.resolve(), threads: 1, lanes: 1, proxy: false, bytes: length };
  }
  // The first lane answers at once; the others start after it (the first reconstruction does not wait for them)
  // and join as they are ready. A lane that cannot start leaves the others running.
  const ready = (async () => {
    for (let k = 1; k < lanes; k++) {
      try {
        pool.add(await startSession(vendorUrl, `ort.wasm.min.mjs?lane=${k}`, k < lanes - 1 ? copy.slice() : copy,
                                    size, threads, proxy));
      } catch (err) {
        console.warn(`lane ${k} of the in-page model did not start (${err?.message || err})`);
      }
    }
  })();
  return { run: pool.run, calls: pool.calls, ready, threads, lanes, proxy, bytes: length };
}

/**
 * One `run` over the lanes' runs (`first`, then each `add`ed): a call goes to the lane with the fewest calls
 * running. `calls` counts the calls each lane was given (for tests and benchmarks).
 */
function pooled(first) {
  const runs = [first];
  const busy = [0];
  const calls = [0];
  const run = async (image, visible) => {
    const k = busy.indexOf(Math.min(...busy));
    busy[k] += 1;
    calls[k] += 1;
    try {
      return await runs[k](image, visible);
    } finally {
      busy[k] -= 1;
    }
  };
  const add = (more) => { runs.push(more); busy.push(0); calls.push(0); };
  return { run, calls, add };
}

/** The .onnx file's bytes. */
async function fetchModel(modelUrl) {
  const response = await fetch(modelUrl);
  if (!response.ok) throw new Error(`could not load the model (${response.status})`);
  return new Uint8Array(await response.arrayBuffer());
}

/**
 * One instance of ONNX Runtime Web's module (`module`, in `vendorUrl`; another query string is another instance)
 * set to `threads` and `proxy`, and a session of the graph `bytes` (which the proxy worker takes: transferred,
 * not copied): its `run(image (3*S*S,), visible (V,) int64) -> pred (L * p*p*3,)`.
 */
async function startSession(vendorUrl, module, bytes, size, threads, proxy) {
  const ort = await import(vendorUrl + module);
  ort.env.wasm.wasmPaths = vendorUrl;
  ort.env.wasm.numThreads = threads;
  ort.env.wasm.proxy = proxy;
  const session = await ort.InferenceSession.create(bytes, {
    executionProviders: ["wasm"], graphOptimizationLevel: "all",
  });
  return async (image, visible) => {
    const feeds = {
      image: new ort.Tensor("float32", image, [1, 3, size, size]),
      visible: new ort.Tensor("int64", visible, [visible.length]),
    };
    const out = await session.run(feeds);
    return out.pred.data;
  };
}
