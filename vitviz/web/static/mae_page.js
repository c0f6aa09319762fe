// The static page: a photo, a camera, the mask controls and the five panels, all computed in the page.
import {
  cameraLoop, engineText, errorPanel, loadModel, makeMask, modelOptions, reconstructOnce, squareView as drawSquare,
  startReconstruction,
} from "./mae_core.js";

const $ = (id) => document.getElementById(id);
const base = new URL("./", import.meta.url).href;
const config = await (await fetch(base + "config.json")).json();
const tables = await (await fetch(base + "masks.json")).json();
const { size, patch } = config;
const grid = tables.grid[0] * tables.grid[1];

// What the page exposes to tests and benchmarks (no behaviour depends on it).
const stats = { runs: 0, lastMs: 0, frames: 0, modelBytes: 0, threads: 0, lanes: 0, proxy: false, loadMs: 0, firstFrameMs: 0,
  last: null };
window.maePage = { stats, ready: null, busy: false, model: null };  // model: loadModel's answer, once loaded

const state = { rgba: null, painted: null, busy: false, pending: false, camera: null, cameraOn: false };

function showError(text) { $("error").textContent = text || ""; }

function draw(id, rgba) {
  const ctx = $(id).getContext("2d");
  ctx.putImageData(new ImageData(rgba, size, size), 0, 0);
}

/** The model's view of an image or video frame: shorter side to `size`, centre crop (RGBA). */
function squareView(source, width, height) {
  return drawSquare($("original"), source, width, height, size);
}

function currentMask() {
  if (state.painted) return state.painted;
  return makeMask(tables, $("pattern").value, Number($("ratio").value), Number($("seed").value));
}

/** Draw one result's panels and record it in `stats`. */
function show(out, mask) {
  draw("masked", out.masked);
  draw("reconstruction", out.reconstruction);
  draw("pasted", out.pasted);
  draw("error-map", errorPanel(out, mask, size, patch));
  $("psnr").textContent = Number.isFinite(out.psnr) ? `PSNR ${out.psnr.toFixed(2)} dB (hidden patches)`
    : "nothing hidden: PSNR not defined";
  stats.runs += 1;
  stats.last = { hidden: mask.reduce((a, b) => a + b, 0), psnr: out.psnr, maskedMse: out.maskedMse,
    mask: Array.from(mask), errorMap: Array.from(out.errorMap) };
  document.body.dataset.runs = String(stats.runs);
  showError("");
}

async function reconstruct() {
  if (!state.rgba || !model) return;
  if (state.cameraOn) return;  // the camera's next frame uses the new mask
  if (state.busy) { state.pending = true; return; }
  state.busy = window.maePage.busy = true;
  try {
    do {
      state.pending = false;
      const rgba = state.rgba;
      const mask = currentMask();
      const t0 = performance.now();
      const out = await reconstructOnce(model, rgba, mask, config);
      stats.lastMs = performance.now() - t0;
      show(out, mask);
    } while (state.pending);
  } catch (err) {
    showError(String(err.message || err));
  } finally {
    state.busy = window.maePage.busy = false;
  }
}

async function showImage(blob) {
  try {
    const bitmap = await createImageBitmap(blob);
    state.rgba = squareView(bitmap, bitmap.width, bitmap.height);
    bitmap.close();
  } catch (err) {
    showError("could not read that file as an image; try a JPEG or PNG photo");
    return;
  }
  await reconstruct();  // the graph runs off the page's thread (proxy worker): ready means drawn
}

// --- controls ---------------------------------------------------------------------------------------
$("ratio").addEventListener("input", () => {
  $("ratio-out").textContent = `${Math.round(Number($("ratio").value) * 100)}%`;
  state.painted = null;
  reconstruct();
});
$("pattern").addEventListener("change", () => { state.painted = null; reconstruct(); });
$("seed").addEventListener("input", () => {
  const seed = Number($("seed").value);
  if (!(Number.isInteger(seed) && seed >= 0 && seed < tables.seeds)) {
    showError(`the seed must be a whole number from 0 to ${tables.seeds - 1}`);
    return;
  }
  state.painted = null;
  reconstruct();
});
$("paint-clear").addEventListener("click", () => { state.painted = null; reconstruct(); });
$("file").addEventListener("change", () => { if ($("file").files[0]) showImage($("file").files[0]); });
const drop = $("drop");
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  const file = e.dataTransfer.files[0];
  if (file) showImage(file);
});
for (const ex of config.examples) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = ex.title;
  b.addEventListener("click", async () => showImage(await (await fetch(base + ex.file)).blob()));
  $("examples").appendChild(b);
}

// Painting on the masked panel: the first patch touched decides whether the stroke hides or shows.
let stroke = null;
function paintAt(event) {
  const rect = $("masked").getBoundingClientRect();
  const gw = size / patch;
  const col = Math.floor(((event.clientX - rect.left) / rect.width) * gw);
  const row = Math.floor(((event.clientY - rect.top) / rect.height) * gw);
  if (col < 0 || row < 0 || col >= gw || row >= gw) return;
  if (!state.painted) state.painted = Uint8Array.from(currentMask());
  const i = row * gw + col;
  if (stroke === null) stroke = state.painted[i] ? 0 : 1;
  if (state.painted[i] !== stroke) { state.painted[i] = stroke; reconstruct(); }
}
$("masked").addEventListener("pointerdown", (e) => { stroke = null; paintAt(e); $("masked").setPointerCapture(e.pointerId); });
$("masked").addEventListener("pointermove", (e) => { if (e.buttons) paintAt(e); });
$("masked").addEventListener("pointerup", () => { stroke = null; });

// --- camera: every frame the camera delivers, one reconstruction at a time ------------------------------
// A frame's graph runs while the previous frame's panels are drawn (cameraLoop); stats.lastMs is then the time
// from a frame's capture to its panels drawn.
const grab = new OffscreenCanvas(size, size);
async function startCamera() {
  while (state.busy) await new Promise((resolve) => setTimeout(resolve, 10));  // a reconstruction in flight
  state.cameraOn = true;
  try {
    await cameraLoop($("video"), () => state.camera, (video) => {
      const t0 = performance.now();
      // Captured off screen: the Original panel is drawn with the others, when this frame is finished.
      const rgba = state.rgba = drawSquare(grab, video, video.videoWidth, video.videoHeight, size);
      const mask = currentMask();
      let run;
      try {
        run = startReconstruction(model, rgba, mask, config);
      } catch (err) {  // e.g. a painted mask hiding every patch: say so, and keep the camera on
        return { graph: Promise.resolve(), finish: () => showError(String(err.message || err)) };
      }
      return {
        graph: run.graph.catch(() => {}),
        finish: async () => {
          try {
            show(await run.panels(), mask);
            draw("original", rgba);
          } catch (err) {
            showError(String(err.message || err));
            return;
          }
          stats.lastMs = performance.now() - t0;
          stats.frames += 1;
        },
      };
    }, (fps) => { $("fps").textContent = `${fps.toFixed(1)} frames a second, in your browser`; }, model.lanes);
  } catch (err) {
    showError(String(err.message || err));
  } finally {
    state.cameraOn = false;
    reconstruct();  // a change made while the camera ran
  }
}
$("camera").addEventListener("click", async () => {
  if (state.camera) {
    state.camera.getTracks().forEach((t) => t.stop());
    state.camera = null;
    $("camera").textContent = "Start camera";
    $("fps").textContent = "";
    return;
  }
  try {
    state.camera = await navigator.mediaDevices.getUserMedia({ video: { width: 320, height: 240 } });
    const video = $("video");
    video.srcObject = state.camera;
    await video.play();
    $("camera").textContent = "Stop camera";
    startCamera();
  } catch (err) {
    state.camera = null;
    showError(`no camera: ${err.message || err}`);
  }
});

// --- start ------------------------------------------------------------------------------------------------
let model = null;
const t0 = performance.now();
window.maePage.ready = (async () => {
  try {
    model = await loadModel(base + "vendor/", base + config.model, size, modelOptions(location.search));
    window.maePage.model = model;
    stats.proxy = model.proxy;
    stats.modelBytes = model.bytes;
    stats.threads = model.threads;
    stats.loadMs = performance.now() - t0;
    stats.lanes = model.lanes;
    $("status").textContent = `in your browser (${engineText(model)}; `
      + `model ${(model.bytes / 1e6).toFixed(1)} MB)`;
    $("status").classList.add("ready");
    const first = config.examples[0];
    if (first && !state.rgba) await showImage(await (await fetch(base + first.file)).blob());
    await reconstruct();
    stats.firstFrameMs = performance.now() - t0;
    document.body.dataset.ready = "1";
  } catch (err) {
    $("status").textContent = "the model could not start in this browser";
    showError(String(err.message || err));
    throw err;
  }
})();

// Offline after the first visit: a service worker caches the folder's files (secure contexts only:
// https or localhost). The page works without it.
if ("serviceWorker" in navigator && window.isSecureContext) {
  navigator.serviceWorker.register(base + "sw.js").catch(() => {});
}
