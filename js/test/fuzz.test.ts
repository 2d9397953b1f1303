// Property-based fuzzing of the decoder (fast-check): whatever the bytes, decoding returns a
// value or throws a DecodeError with an offset inside the input, never anything else; and any
// value the encoder writes decodes to a value that is written to the same bytes again.

import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { decode, encode, readStream, DecodeError, Placeholder, Float } from "../src/index.js";
import { loadVectors, hexBytes, toHex, asTheMachine } from "./notation.js";
import { valuesWithRows as values } from "./arbitraries.js";
import { decodeUtf8 } from "../src/utf8.js";
import { setDeepWalkFrom } from "../src/encode.js";

/** Seconds for the whole file (make js-test sets a short bound; make fuzz-js a longer one). */
const SECONDS = Number(process.env.AMBER_JS_FUZZ_SECONDS ?? "8");
const share = (part: number) => ({ interruptAfterTimeLimit: SECONDS * 1000 * part, numRuns: 1_000_000_000 });

const seeds = [
  ...loadVectors("values.json").vectors.map((v: any) => hexBytes(v.hex)),
  ...loadVectors("errors.json").vectors.map((v: any) => hexBytes(v.hex)),
  ...loadVectors("envelopes.json").vectors.map((v: any) => hexBytes(v.hex)),
];

let runs = 0;
function decodesOrFailsCleanly(data: Uint8Array): void {
  runs++;
  try {
    decode(data, { placeholders: true, buffers: [new Uint8Array(3)], dicts: runs % 2 ? "object" : "map" });
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
    assert.ok(e.offset >= 0 && (e.inDecompressedBody || e.offset <= data.length), `offset ${e.offset} outside ${data.length} bytes`);
  }
}

const mutated = fc
  .tuple(fc.constantFrom(...seeds), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom("set", "insert", "delete")), { minLength: 1, maxLength: 4 }))
  .map(([seed, edits]) => {
    const bytes = Array.from(seed);
    for (const [at, b, op] of edits) {
      const i = bytes.length ? at % (bytes.length + (op === "insert" ? 1 : 0)) : 0;
      if (op === "set" && bytes.length) bytes[i] = b;
      else if (op === "insert") bytes.splice(i, 0, b);
      else if (bytes.length) bytes.splice(i, 1);
    }
    return Uint8Array.from(bytes);
  });

test("fuzz: mutated vectors decode or fail with a DecodeError", () => {
  runs = 0;
  fc.assert(fc.property(mutated, (data) => decodesOrFailsCleanly(data)), share(0.35));
  console.log(`mutated vectors: ${runs} inputs`);
  assert.ok(runs > 100);
});

test("fuzz: random bodies after a valid header decode or fail with a DecodeError", () => {
  const bodies = fc.uint8Array({ maxLength: 64 }).map((b) => Uint8Array.from([0xab, 0x41, 0x01, ...b]));
  runs = 0;
  fc.assert(fc.property(bodies, (data) => decodesOrFailsCleanly(data)), share(0.2));
  console.log(`random bodies: ${runs} inputs`);
  assert.ok(runs > 100);
});

// Records of repeated keys, as Python writes them (each key a tracked str, then REFs to it)
// and as JS does (short strs): the fast path takes a key whose bytes repeat the key before.
const recordSeeds = [
  hexBytes("ab4101 5b 62 c161 01 c162 02 62 9302 03 9305 04 62 9302 05 9305 06"),
  encode([{ a: 1, b: "x" }, { a: 2, b: "y" }, { b: 3, a: 4 }, { a: [{ a: 1 }, { a: 2 }], b: null }]),
  // Runs of one key sequence, nested: read by generated readers once they are made.
  encode(Array.from({ length: 6 }, (_, i) => ({ id: i, name: `n${i}`, tags: [{ k: "x", v: i }, { k: "y", v: -i }], "é": null }))),
  // Object rows (spec 5.17.9): float columns (one integral, one NaN), strs, rows in rows.
  encode(Array.from({ length: 5 }, (_, i) => new Placeholder("m", "Row", "ATTRS", ["a", "b", "c"], [
    i === 2 ? new Float(NaN) : i === 3 ? new Float(4) : i / 7, `s${i}`,
    [new Placeholder("m", "Row", "ATTRS", ["a", "b", "c"], [0.1, i, null]), new Placeholder("m", "Row", "ATTRS", ["a", "b", "c"], [0.2, -i, true])],
  ]))),
  // As Python writes records: keys tracked once, then REFs (read by key templates), floats,
  // a nested dict, and one record whose third key differs (a template's miss).
  hexBytes(
    "ab4101 7106 63 c161 01 c162 6e000000000000f83f c163 61 c164 4178" +
      " 63 9303 02 9306 6e0000000000000440 9311 61 9314 4179" +
      " 63 9303 03 9306 6e0000000000000040 9311 61 9314 417a" +
      " 63 9303 04 9306 6e000000000000f43f 9314 4177" +
      " 63 9303 05 9306 6e000000000000e03f 9311 61 9314 4176" +
      " 63 9303 06 9306 90 9311 61 9314 4175",
  ),
];
const mutatedRecords = fc
  .tuple(fc.constantFrom(...recordSeeds), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 3 }))
  .map(([seed, edits]) => {
    const bytes = Uint8Array.from(seed);
    for (const [at, b] of edits) bytes[3 + (at % (bytes.length - 3))] = b;
    return bytes;
  });

/** The decoder's recursive fast path and its stack machine (which tracing uses) give the
 * same value, or the same error at the same offset. */
function fastAndMachineAgree(data: Uint8Array): void {
  runs++;
  asTheMachine(data, [{ placeholders: true }, { placeholders: "plain" as const, dicts: "object" as const }][runs % 2]);
}

test("fuzz: the fast path and the stack machine agree", () => {
  runs = 0;
  fc.assert(fc.property(fc.oneof(mutated, mutatedRecords), (data) => fastAndMachineAgree(data)), share(0.1));
  for (const seed of recordSeeds) fastAndMachineAgree(seed);
  console.log(`fast path against the machine: ${runs} inputs`);
  assert.ok(runs > 100);
});

test("fuzz: random streams read or fail with a DecodeError", () => {
  const streams = fc.uint8Array({ maxLength: 48 }).map((b) => Uint8Array.from([0xab, 0x53, 0x01, ...b]));
  fc.assert(fc.property(streams, (data) => {
    try {
      readStream(data);
    } catch (e) {
      if (!(e instanceof DecodeError)) throw e;
    }
  }), share(0.1));
});

test("fuzz: encode, decode, encode gives the same bytes, plain and canonical", () => {
  runs = 0;
  fc.assert(fc.property(values, fc.boolean(), (v, sortKeys) => {
    runs++;
    const once = encode(v);
    // Placeholders for the class of the object rows (the other classes are of the fixed tables).
    assert.equal(toHex(encode(decode(once, { placeholders: true }))), toHex(once));
    // Dicts as plain objects lose nothing either: index-like keys keep them Maps; nor do
    // placeholders as plain records.
    assert.equal(toHex(encode(decode(once, { dicts: "object", placeholders: "plain" }))), toHex(once));
    const canon = encode(v, { canonical: true, sortKeys });
    assert.equal(toHex(encode(decode(canon, { placeholders: true }), { canonical: true, sortKeys })), toHex(canon));
  }), share(0.2));
  console.log(`round trips: ${runs} values`);
  assert.ok(runs > 100);
});

test("fuzz: the encoder's deep walk writes what its recursive walk writes", () => {
  runs = 0;
  fc.assert(fc.property(values, fc.boolean(), (v, canonical) => {
    runs++;
    const options = { canonical, sortKeys: canonical };
    const once = toHex(encode(v, options));
    setDeepWalkFrom(0);
    try {
      assert.equal(toHex(encode(v, options)), once);
    } finally {
      setDeepWalkFrom();
    }
  }), share(0.1));
  console.log(`deep walk against the recursive one: ${runs} values`);
  assert.ok(runs > 100);
});

test("fuzz: the strict UTF-8 check agrees with a fatal TextDecoder", () => {
  const td = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const bytes = fc.array(fc.oneof(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0x80, max: 0xf5 })), { maxLength: 12 }).map((a) => Uint8Array.from(a));
  fc.assert(fc.property(bytes, (b) => {
    let want: string | null;
    try { want = td.decode(b); } catch { want = null; }
    assert.equal(decodeUtf8(b, 0, b.length), want);
  }), share(0.05));
  // Well-formed U+FFFD (EF BF BD) among ill-formed sequences, short and long: the native
  // decoder's replacement character must not be taken for the input's, nor the other way.
  const pieces = [[0x61], [0xc3, 0xa9], [0xef, 0xbf, 0xbd], [0xf0, 0x9f, 0x98, 0x80], [0xed, 0xa0, 0x80], [0xc0, 0x80],
    [0xf4, 0x90, 0x80, 0x80], [0x80], [0xff], [0xe2, 0x82], [0xef, 0xbf], [0xed, 0x9f, 0xbf]];
  const mixed = fc.array(fc.constantFrom(...pieces), { maxLength: 40 }).map((ps) => Uint8Array.from(ps.flat()));
  fc.assert(fc.property(mixed, (b) => {
    let want: string | null;
    try { want = td.decode(b); } catch { want = null; }
    assert.equal(decodeUtf8(b, 0, b.length), want);
  }), share(0.05));
});
