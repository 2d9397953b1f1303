// Node timings of amber (this package) against msgpackr (plain and with its record
// extension), @msgpack/msgpack, cbor-x and JSON on the seed payloads, in one run, so the
// ratios compare like with like. Every codec encodes and decodes the same logical data:
// amber its own mapping (Maps, tuples, placeholders), the others the plain JS form of it
// (objects, arrays), which is what they are made for.

import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { serialize, deserialize } from "node:v8";
import { join, dirname } from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Packr } from "msgpackr";
import * as msgpack from "@msgpack/msgpack";
import { Encoder as CborEncoder } from "cbor-x";
import { decode, encode, Tuple, Float, Placeholder, Complex } from "../src/index.js";

interface Codec {
  name: string;
  encode(v: unknown): Uint8Array | string;
  decode(b: Uint8Array | string): unknown;
  /** Which form of the data it takes: amber's own, or plain JS. */
  form: "amber" | "plain";
}

const plainPackr = new Packr({ useRecords: false });
const recordPackr = new Packr({ useRecords: true });
const cbor = new CborEncoder({ useRecords: false });

const codecs: Codec[] = [
  { name: "amber", form: "amber", encode: (v) => encode(v), decode: (b) => decode(b as Uint8Array, { placeholders: true }) },
  { name: "amber (objects)", form: "amber", encode: (v) => encode(v), decode: (b) => decode(b as Uint8Array, { placeholders: "plain", dicts: "object" }) },
  { name: "msgpackr", form: "plain", encode: (v) => plainPackr.pack(v), decode: (b) => plainPackr.unpack(b as Uint8Array) },
  { name: "msgpackr records", form: "plain", encode: (v) => recordPackr.pack(v), decode: (b) => recordPackr.unpack(b as Uint8Array) },
  { name: "@msgpack/msgpack", form: "plain", encode: (v) => msgpack.encode(v, { useBigInt64: true }), decode: (b) => msgpack.decode(b as Uint8Array, { useBigInt64: true }) },
  { name: "cbor-x", form: "plain", encode: (v) => cbor.encode(v), decode: (b) => cbor.decode(b as Uint8Array) },
  { name: "JSON", form: "plain", encode: (v) => JSON.stringify(v), decode: (b) => JSON.parse(b as string) },
];
const peers = codecs.slice(2);

/**
 * amber's two decode mappings are timed in processes of their own, each with every peer:
 * V8 optimizes the decoder for what it has run, and one mode decoded first in the same
 * process slowed the other (by about 10% on record payloads). The "maps" process decodes the
 * payload file (as Maps and placeholders), times amber's decode and encode, and leaves the
 * JS encoder's bytes and the plain form of the value for the "objects" process, which then
 * runs amber's decoder in object mode only.
 */
type Mode = "maps" | "objects";

/** The plain JS form of an amber value: objects for str-keyed dicts, arrays for tuples,
 * numbers for floats, objects of fields for class instances. */
function plain(v: unknown): unknown {
  if (v === null || typeof v !== "object") return v;
  if (v instanceof Float) return v.value;
  if (v instanceof Complex) return [v.re, v.im];
  if (v instanceof Uint8Array) return v;
  if (Array.isArray(v)) return Array.from(v as unknown[], plain);
  if (v instanceof Map) {
    if ([...v.keys()].every((k) => typeof k === "string")) {
      const o: Record<string, unknown> = {};
      for (const [k, x] of v) o[k as string] = plain(x);
      return o;
    }
    return [...v].map(([k, x]) => [plain(k), plain(x)]);
  }
  if (v instanceof Set) return [...v].map(plain);
  if (v instanceof Placeholder) {
    if (v.fields === null) return plain(v.values[0]);
    const o: Record<string, unknown> = {};
    v.fields.forEach((f, i) => { o[f] = plain(v.values[i]); });
    return o;
  }
  return String(v);
}

/** How many calls make a batch long enough to time (about 20 ms). */
function batchSize(fn: () => unknown): number {
  let n = 1;
  for (;;) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) fn();
    if (Number(process.hrtime.bigint() - t0) / 1e9 > 0.02) return n;
    n *= 2;
  }
}

/** Seconds per call of each function: batches are taken in rounds, one batch of each per
 * round, and the best batch counts, so that a busy machine slows every codec alike. */
function timeAll(fns: (() => unknown)[], rounds = ROUNDS): number[] {
  // Warm up first: in a fresh process the optimizing compiler needs many calls of a large
  // decoder before it has compiled it, and the first rounds would time the interpreter.
  for (const fn of fns) {
    const until = Date.now() + WARMUP_MS;
    do fn(); while (Date.now() < until);
  }
  const sizes = fns.map(batchSize);
  const best = fns.map(() => Infinity);
  for (let r = 0; r < rounds; r++) {
    fns.forEach((fn, i) => {
      // Each batch starts on a collected heap, so that no codec pays for the garbage of
      // the one timed before it.
      collect?.();
      const t0 = process.hrtime.bigint();
      for (let k = 0; k < sizes[i]; k++) fn();
      best[i] = Math.min(best[i], Number(process.hrtime.bigint() - t0) / 1e9 / sizes[i]);
    });
  }
  return best;
}

const ROUNDS = Number(process.env.AMBER_JS_BENCH_ROUNDS ?? "7");
const WARMUP_MS = Number(process.env.AMBER_JS_BENCH_WARMUP_MS ?? "300");
const collect = (globalThis as { gc?: () => void }).gc;

const fmt = (s: number) => (s >= 1e-3 ? `${(s * 1e3).toFixed(2)} ms` : `${(s * 1e6).toFixed(1)} µs`);

type Results = Record<string, { enc: number; dec: number; size: number } | null>;

/** Times amber in one mode, and every peer, on one payload (in a process of its own, see
 * Mode and main). */
function measure(dir: string, name: string, mode: Mode): Results {
    const amberBytes = join(dir, `${name}.js-amber`), plainFile = join(dir, `${name}.plain`);
    let value: unknown = undefined, plainValue: unknown, amberEncoded: Uint8Array;
    if (mode === "maps") {
      value = decode(new Uint8Array(readFileSync(join(dir, `${name}.amber`))), { placeholders: true });
      plainValue = plain(value);
      amberEncoded = encode(value);
      writeFileSync(amberBytes, amberEncoded);
      writeFileSync(plainFile, serialize(plainValue));
    } else {
      amberEncoded = new Uint8Array(readFileSync(amberBytes));
      plainValue = deserialize(readFileSync(plainFile));
    }
    const results: Results = {};
    const usable: { c: Codec; input: unknown; encoded: Uint8Array | string }[] = [];
    for (const c of mode === "maps" ? [codecs[0], ...peers] : [codecs[1], ...peers]) {
      try {
        const encoded = c.form === "amber" ? amberEncoded : c.encode(plainValue);
        if (c.decode(encoded) === undefined) throw new Error("decoded nothing");
        usable.push({ c, input: c.form === "amber" ? value : plainValue, encoded });
      } catch {
        results[c.name] = null; // the codec cannot represent this payload (JSON and bigints)
      }
    }
    const dec = timeAll(usable.map((u) => () => u.c.decode(u.encoded)));
    // amber's encoder is the same in both modes: timed once, in the maps process.
    const encoders = usable.filter((u) => u.input !== undefined);
    const enc = timeAll(encoders.map((u) => () => u.c.encode(u.input)));
    usable.forEach((u, i) => {
      const e = encoders.indexOf(u);
      results[u.c.name] = { dec: dec[i], enc: e >= 0 ? enc[e] : NaN, size: typeof u.encoded === "string" ? Buffer.byteLength(u.encoded) : u.encoded.length };
    });
    return results;
}

/** The results of both processes: amber's of its own, each peer's best of the two (amber's
 * encode, timed in the maps process, for both of its columns). */
function merge(maps: Results, objects: Results): Results {
  const merged: Results = { amber: maps.amber, "amber (objects)": objects["amber (objects)"] };
  merged["amber (objects)"]!.enc = maps.amber!.enc;
  for (const c of peers) {
    const a = maps[c.name], b = objects[c.name];
    merged[c.name] = a && b ? { dec: Math.min(a.dec, b.dec), enc: Math.min(a.enc, b.enc), size: a.size } : null;
  }
  return merged;
}

function main(): void {
  const [dir, out, one, mode] = process.argv.slice(2);
  if (out === "--one") {
    process.stdout.write(JSON.stringify(measure(dir, one, mode as Mode)));
    return;
  }
  const index: { name: string; description: string }[] = JSON.parse(readFileSync(join(dir, "index.json"), "utf8"));
  const geo = (xs: number[]) => Math.exp(xs.filter((x) => Number.isFinite(x)).reduce((s, x) => s + Math.log(x), 0) / xs.filter((x) => Number.isFinite(x)).length);

  /** One pass over the payloads, with the peers' environment `env`; its tables. */
  const pass = (env: Record<string, string>): string[] => {
    const rows: string[] = [];
    const ratios: { name: string; decode: number; decodeObject: number; encode: number; decodeRecords: number }[] = [];
    for (const p of index) {
      // Each payload in fresh processes (one per amber mode, see Mode): no codec inherits
      // the JIT state or the heap that the payloads before it left.
      const run = (mode: Mode): Results => JSON.parse(execFileSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), dir, "--one", p.name, mode], { encoding: "utf8", maxBuffer: 1 << 24, env: { ...process.env, ...env } }));
      const results = merge(run("maps"), run("objects"));
      const a = results.amber!;
      const ao = results["amber (objects)"]!;
      const timed = peers.map((c) => results[c.name]).filter((r): r is NonNullable<typeof r> => r !== null);
      const bestDec = Math.min(...timed.map((r) => r.dec));
      const bestEnc = Math.min(...timed.map((r) => r.enc));
      const rec = results["msgpackr records"];
      ratios.push({ name: p.name, decode: bestDec / a.dec, decodeObject: bestDec / ao.dec, encode: bestEnc / a.enc, decodeRecords: rec ? rec.dec / ao.dec : NaN });
      const cell = (r: (typeof results)[string]) => (r ? `${fmt(r.dec)} / ${fmt(r.enc)} / ${r.size}` : "n/a");
      rows.push(`| ${p.name} | ${codecs.map((c) => cell(results[c.name])).join(" | ")} |`);
      console.log(`${p.name}: amber decode ${fmt(a.dec)}, encode ${fmt(a.enc)}; best peer decode ${fmt(bestDec)}, encode ${fmt(bestEnc)}`);
    }
    return [
      `| payload | ${codecs.map((c) => c.name).join(" | ")} |`,
      `|---|${codecs.map(() => "---").join("|")}|`,
      ...rows,
      "",
      "Ratios (above 1: amber is faster):",
      "",
      "| payload | decode: fastest peer / amber | decode: fastest peer / amber (objects) | decode: msgpackr records / amber (objects) | encode: fastest peer / amber |",
      "|---|---|---|---|---|",
      ...ratios.map((r) => `| ${r.name} | ${r.decode.toFixed(2)} | ${r.decodeObject.toFixed(2)} | ${Number.isFinite(r.decodeRecords) ? r.decodeRecords.toFixed(2) : "n/a"} | ${r.encode.toFixed(2)} |`),
      `| geometric mean | ${geo(ratios.map((r) => r.decode)).toFixed(2)} | ${geo(ratios.map((r) => r.decodeObject)).toFixed(2)} | ${geo(ratios.map((r) => r.decodeRecords)).toFixed(2)} | ${geo(ratios.map((r) => r.encode)).toFixed(2)} |`,
    ];
  };
  console.log("== peers as installed (msgpackr and cbor-x with their native string extraction)");
  const native = pass({});
  console.log("== peers in pure JS");
  const pureJs = pass({ MSGPACKR_NATIVE_ACCELERATION_DISABLED: "true", CBOR_NATIVE_ACCELERATION_DISABLED: "true" });
  const md = [
    "# amber in Node: against msgpackr, @msgpack/msgpack, cbor-x and JSON",
    "",
    `Node ${process.version}, ${new Date().toISOString().slice(0, 10)}; made by \`make js-bench\` (js/bench/run.ts). Payloads: bench/payloads.py at the`,
    "given scale, written by the Python implementation. amber decodes them in JS as Maps and Placeholders (its",
    "default mapping) and, as \"amber (objects)\", with `dicts: \"object\"` and `placeholders: \"plain\"` (str-keyed",
    "dicts and class instances as plain objects); the other codecs take the plain JS form of the same data.",
    "Each payload is timed in two fresh Node processes, one per amber mapping (V8 optimizes the decoder for",
    "what it ran first), each with every peer; a peer's cell is its best of the two, amber's encode is timed",
    "once (the same for both mappings). amber decodes what its JS encoder writes, as each peer decodes its own",
    "encoding. Each batch runs after a full GC. Each cell: decode / encode time per call / encoded bytes. The",
    "codecs are timed in rounds, one batch of each per round, and the best batch counts, so that load from",
    "elsewhere slows them alike. JSON cannot hold bigints: n/a.",
    "",
    "## Peers as installed",
    "",
    "msgpackr and cbor-x load their native add-ons (msgpackr-extract, cbor-extract) when present, as they are",
    "here: strings are then extracted in C++ in one call per buffer. amber is JavaScript only.",
    "",
    ...native,
    "",
    "## Peers in pure JavaScript",
    "",
    "The same, with MSGPACKR_NATIVE_ACCELERATION_DISABLED and CBOR_NATIVE_ACCELERATION_DISABLED set: every codec",
    "in JavaScript, as in a browser.",
    "",
    ...pureJs,
    "",
  ].join("\n");
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, md);
  console.log(`wrote ${out}`);
}

main();
