// Decoded strs must not keep their payload alive: a caller that keeps one small str of each
// payload it decodes should hold those strs, not the input's text around them.

import { test } from "node:test";
import assert from "node:assert/strict";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { decode, encode } from "../src/index.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** A str of n letters, different for every (payload, item). */
function letters(seed: number, n: number): string {
  let x = seed * 2654435761 + 12345;
  let s = "";
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    s += String.fromCharCode(97 + ((x >>> 16) % 26));
  }
  return s;
}

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

test("a str kept from each decoded payload does not keep the payload's text alive", () => {
  const PAYLOADS = 200;
  // Each payload about 145 KiB of ASCII strs: 20 letters (a SHORT_STR) and 36 (a STR).
  const payloads: Uint8Array[] = [];
  for (let p = 0; p < PAYLOADS; p++) {
    const items: string[] = [];
    for (let i = 0; i < 5000; i++) items.push(letters(p * 10000 + i, i % 2 === 0 ? 20 : 36));
    payloads.push(encode(items));
  }
  const kept: string[] = [];
  for (const options of [{}, { dicts: "object" as const, placeholders: "plain" as const }]) {
    kept.length = 0;
    const before = heapUsed();
    for (let p = 0; p < PAYLOADS; p++) {
      const items = decode(payloads[p], options) as string[];
      // Late in the payload, where the decoder's text windows are at their largest.
      kept.push(items[3000], items[3001]);
    }
    const grown = heapUsed() - before;
    // Kept alone: 400 strs of at most 36 characters, some 25 KB; with the 4 KiB of input
    // text a str may keep (see AsciiWindow), under 1.7 MB. Each one holding a window of the
    // whole 64 KiB would hold above 12 MB in all.
    assert.ok(grown < 2_000_000, `heap grew by ${grown} bytes for ${kept.length} kept strs`);
    assert.equal(kept[0].length, 20);
    assert.equal(kept[1].length, 36);
  }
});
