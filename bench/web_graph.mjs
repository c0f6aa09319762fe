// The ONNX graph alone in ONNX Runtime Web's WebAssembly backend (the vendored build, one thread), under Node:
// CPU time and wall time of one run at 75% hidden, for several graph files side by side.
//
//   node bench/web_graph.mjs [ROUNDS] GRAPH.onnx [GRAPH.onnx ...]
//
// Each round runs every graph 2 times to warm up and 5 times measured, the order reversed every other round;
// prints, per graph, the median and the minimum of the process's CPU time (user + system) and of the wall time
// per run. CPU time is what the graph costs, and moves little with other jobs on the machine (the wall time
// does): use it to compare graphs on a shared machine. Threads and the page's own work are not measured here
// (bench/web_page.py measures the page).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const vendor = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "vitviz", "web", "vendor") + "/";
const ort = await import(vendor + "ort.wasm.min.mjs");
ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = vendor;
const args = process.argv.slice(2);
const rounds = /^\d+$/.test(args[0] || "") ? Number(args.shift()) : 6;
if (!args.length) throw new Error("usage: node bench/web_graph.mjs [ROUNDS] GRAPH.onnx [GRAPH.onnx ...]");
const sessions = {};
for (const m of args) {
  sessions[m] = await ort.InferenceSession.create(new Uint8Array(fs.readFileSync(m)),
    { executionProviders: ["wasm"], graphOptimizationLevel: "all" });
}
const image = new Float32Array(3 * 224 * 224);
for (let i = 0; i < image.length; i++) image[i] = Math.sin(i * 0.37);
const ids = [];
for (let i = 0; i < 196; i += 4) ids.push(BigInt(i));  // 49 visible: 75% hidden
const visible = BigInt64Array.from(ids);
const feeds = () => ({ image: new ort.Tensor("float32", image, [1, 3, 224, 224]),
  visible: new ort.Tensor("int64", visible, [visible.length]) });
const res = Object.fromEntries(args.map((m) => [m, { cpu: [], wall: [] }]));
for (let r = 0; r < rounds; r++) {
  for (const m of (r % 2 ? [...args].reverse() : args)) {
    const s = sessions[m];
    for (let i = 0; i < 2; i++) await s.run(feeds());
    for (let i = 0; i < 5; i++) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await s.run(feeds());
      const c = process.cpuUsage(c0);
      res[m].cpu.push((c.user + c.system) / 1000);
      res[m].wall.push(performance.now() - t0);
    }
  }
}
const r1 = (x) => Math.round(x * 10) / 10;
const med = (xs) => r1([...xs].sort((a, b) => a - b)[xs.length >> 1]);
const out = {};
for (const m of args) {
  out[m] = { bytes: fs.statSync(m).size, cpu_ms_median: med(res[m].cpu), cpu_ms_min: r1(Math.min(...res[m].cpu)),
    wall_ms_median: med(res[m].wall), wall_ms_min: r1(Math.min(...res[m].wall)), runs: res[m].cpu.length };
}
console.log(JSON.stringify({ graphs: out, rounds, ort: ort.env.versions, loadavg: fs.readFileSync("/proc/loadavg", "utf8").trim() }, null, 1));
