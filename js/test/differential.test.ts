// Differential test against the Python implementation (the project's .venv): random graphs
// from the Python strategies decode in JS and are written again to identical canonical bytes;
// random values from the JS arbitraries are read by Python and written again to identical
// canonical bytes. A missing .venv is a failure, not a skip: run `make build` first.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import fc from "fast-check";
import { decode, encode, initZstd, zstdCompressor } from "../src/index.js";
import { hexBytes, toHex } from "./notation.js";
import { values } from "./arbitraries.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..", "..");
const python = join(repo, ".venv", "bin", "python");
const script = join(repo, "js", "test", "differential.py");
const N = Number(process.env.AMBER_JS_DIFFERENTIAL_EXAMPLES ?? "300");
const SEED = Number(process.env.AMBER_JS_DIFFERENTIAL_SEED ?? "2026");

function runPython(args: string[], input?: string): string {
  assert.ok(existsSync(python), `no ${python}: run make build to get the Python side`);
  return execFileSync(python, [script, ...args], { input, encoding: "utf8", maxBuffer: 1 << 28 });
}

test("differential: Python graphs decode in JS and re-encode to the same canonical bytes", () => {
  const { payloads, left_out_surrogate_pairs: leftOut } = JSON.parse(runPython(["gen", String(N), String(SEED)]));
  assert.ok(payloads.length >= N / 2, `only ${payloads.length} payloads`);
  const failures: string[] = [];
  for (const [hex, sortKeys] of payloads as [string, boolean][]) {
    for (const mode of [{ placeholders: true }, { placeholders: "plain" as const, dicts: "object" as const }]) {
      try {
        const again = toHex(encode(decode(hexBytes(hex), mode), { canonical: true, sortKeys }));
        if (again !== hex) failures.push(`python ${hex}\n    js ${again} (${JSON.stringify(mode)})`);
      } catch (e) {
        failures.push(`python ${hex}: ${(e as Error).message} (${JSON.stringify(mode)})`);
      }
    }
  }
  console.log(`Python -> JS: ${payloads.length} graphs, ${leftOut} left out (surrogate pairs)`);
  assert.deepEqual(failures.slice(0, 5), []);
});

test("differential: JS values decode in Python and re-encode to the same canonical bytes", () => {
  const samples = fc.sample(fc.tuple(values, fc.boolean()), { numRuns: N, seed: SEED });
  const payloads = samples.map(([v, sortKeys]) => [toHex(encode(v, { canonical: true, sortKeys })), sortKeys]);
  const back: string[] = JSON.parse(runPython(["roundtrip"], JSON.stringify({ payloads })));
  const failures = payloads.flatMap(([hex], i) => (back[i] === hex ? [] : [`js ${hex}\n    python ${back[i]}`]));
  console.log(`JS -> Python: ${payloads.length} values`);
  assert.deepEqual(failures.slice(0, 5), []);
});

test("differential: zstd envelopes written by JS open in Python, and Python's open in JS", async () => {
  await initZstd();
  const secret = new TextEncoder().encode("amber envelope test secret one!!");
  const big = new Uint8Array(1 << 20);
  for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 29;
  const samples: unknown[] = [
    null, "", [], "x".repeat(1000), new Uint8Array(300), big,
    new Map<string, unknown>([["rows", Array.from({ length: 2000 }, (_, i) => [i, `name ${i % 13}`, i / 4])]]),
    // Random values, some eight times over so that there is something to compress.
    ...fc.sample(values, { numRuns: 40, seed: SEED }).map((v, i) => (i % 2 ? v : Array.from({ length: 8 }, () => v))),
  ];
  const cases: { value: unknown; canonical: string; secret: string | null; level?: number }[] = [];
  samples.forEach((value, i) => {
    const canonical = toHex(encode(value, { canonical: true }));
    cases.push({ value, canonical, secret: null });
    cases.push({ value, canonical, secret: toHex(secret), level: 1 + (i % 22) });
  });
  const sealed = cases.map((c) => {
    const key = c.secret === null ? undefined : { secret };
    // Canonical, so that Python's canonical re-encoding can be compared byte for byte.
    return [toHex(encode(c.value, { canonical: true, compress: "zstd", level: c.level, key })), c.secret];
  });
  const plain = cases.map((c) => [c.canonical, c.secret]);
  const reply = JSON.parse(runPython(["envelopes"], JSON.stringify({ sealed, plain })));
  const failures: string[] = [];
  let compressed = 0;
  cases.forEach((c, i) => {
    const [back, compression, size] = reply.opened[i];
    const hex = sealed[i][0] as string;
    if (back !== c.canonical) failures.push(`JS sealed ${hex.slice(0, 80)}...: Python reads ${back.slice(0, 80)}..., not ${c.canonical.slice(0, 80)}...`);
    const isCompressed = (parseInt(hex.slice(4, 6), 16) & 0x10) !== 0;
    if (isCompressed) compressed++;
    if (compression !== (isCompressed ? "zstd" : null)) failures.push(`${hex.slice(0, 40)}: Python says compression ${compression}`);
    if (isCompressed && size !== c.canonical.length / 2 - 3) failures.push(`${hex.slice(0, 40)}: Python says size ${size}`);
    const fromPython = hexBytes(reply.sealed[i]);
    try {
      const keys = c.secret === null ? undefined : [{ secret }];
      const again = toHex(encode(decode(fromPython, { keys, maxAlloc: 1 << 26, placeholders: true }), { canonical: true }));
      if (again !== c.canonical) failures.push(`Python sealed ${reply.sealed[i].slice(0, 80)}...: JS reads ${again.slice(0, 80)}...`);
    } catch (e) {
      failures.push(`Python sealed ${reply.sealed[i].slice(0, 80)}...: ${(e as Error).message}`);
    }
  });
  console.log(`zstd envelopes: ${cases.length} each way, ${compressed} of JS's compressed (${zstdCompressor()})`);
  assert.ok(compressed >= 12, `only ${compressed} compressed`);
  assert.deepEqual(failures.slice(0, 5), []);
});
