// Run a onegraph model in ONNX Runtime for Node.js: node run.mjs MODEL.onnx FEEDS.json OUT.json
//
// FEEDS.json holds one entry per graph input, in onegraph's documented representation (see
// src/onegraph/frame/schema.py): {"type": "float64" | "float32" | "int64" | "bool" | "string", "dims": [...],
// "data": [...]}. Missing numbers are written as null (NaN), missing text as "\uFFFF", int64 values as
// decimal strings (JSON numbers lose precision past 2^53; onnxruntime takes them as a BigInt64Array).
// A sequence model's windows are computed here, as onegraph.score does (src/onegraph/runtime/windows.py):
// "sequence": {"group": [...one key per row], "order": INPUT NAME, "window": k, "input": "onegraph.window"}:
// rows sorted by (group, order), stable; each row's window holds the sorted positions of its group's last
// k rows, -1 before the group's first row; outputs come back in the input's row order.
import { readFileSync, writeFileSync } from "node:fs";
import ort from "onnxruntime-node";

const [modelPath, feedsPath, outPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(feedsPath, "utf8"));

function tensor(entry) {
  const { type, dims, data } = entry;
  switch (type) {
    case "float64": return new ort.Tensor("float64", Float64Array.from(data, (v) => (v === null ? NaN : v)), dims);
    case "float32": return new ort.Tensor("float32", Float32Array.from(data, (v) => (v === null ? NaN : v)), dims);
    case "int64": return new ort.Tensor("int64", BigInt64Array.from(data, (v) => BigInt(v)), dims);
    case "bool": return new ort.Tensor("bool", Uint8Array.from(data, (v) => (v ? 1 : 0)), dims);
    case "string": return new ort.Tensor("string", data, dims);
    default: throw new Error(`unknown input type ${type}`);
  }
}

function windows(inputs, seq) {
  const n = seq.group.length;
  const order = inputs[seq.order].data.map((v) => BigInt(v));
  const rows = [...Array(n).keys()];
  const compare = (a, b) => (seq.group[a] < seq.group[b] ? -1 : seq.group[a] > seq.group[b] ? 1 : 0)
    || (order[a] < order[b] ? -1 : order[a] > order[b] ? 1 : 0) || a - b;
  const perm = rows.sort(compare);
  const index = [];
  let start = 0;
  perm.forEach((row, i) => {
    if (i > 0 && seq.group[row] !== seq.group[perm[i - 1]]) start = i;
    for (let back = seq.window - 1; back >= 0; back--) index.push(i - back >= start ? String(i - back) : "-1");
  });
  const sorted = {};
  for (const [name, entry] of Object.entries(inputs)) {
    sorted[name] = { ...entry, data: perm.map((r) => entry.data[r]) };
  }
  sorted[seq.input] = { type: "int64", dims: [n, seq.window], data: index };
  return { perm, inputs: sorted };
}

function plain(t) {
  const data = Array.from(t.data, (v) => (typeof v === "bigint" ? v.toString()
    : typeof v === "number" && Number.isNaN(v) ? null : v));
  return { type: t.type, dims: t.dims, data };
}

function unsort(out, perm) {
  const width = out.dims.length > 1 ? out.dims.slice(1).reduce((a, b) => a * b, 1) : 1;
  const data = new Array(out.data.length);
  perm.forEach((row, i) => {
    for (let j = 0; j < width; j++) data[row * width + j] = out.data[i * width + j];
  });
  return { ...out, data };
}

const session = await ort.InferenceSession.create(modelPath);
let inputs = spec.inputs;
let perm = null;
if (spec.sequence) ({ perm, inputs } = windows(inputs, spec.sequence));
const feeds = {};
for (const name of session.inputNames) feeds[name] = tensor(inputs[name]);
const results = await session.run(feeds);
const out = {};
for (const name of session.outputNames) {
  const value = plain(results[name]);
  out[name] = perm ? unsort(value, perm) : value;
}
writeFileSync(outPath, JSON.stringify(out));
