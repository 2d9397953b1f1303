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
import { decode, encode } from "../src/index.js";
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
