// Conformance: every vector of spec/vectors, read directly. A vector that cannot apply to JS is
// in the counted skip list (skips.ts) with its reason; everything else must pass.

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  decode, encode, readStream, envelopeInfo, DecodeError, StreamWriter, type DecodeOptions,
} from "../src/index.js";
import { loadVectors, hexBytes, toHex, build, Comparer } from "./notation.js";
import { skipReason, SKIPS, usedSkips } from "./skips.js";
import { vectorClasses } from "./vector_classes.js";
import { setDeepWalkFrom } from "../src/encode.js";

const values = loadVectors("values.json").vectors as any[];
const errors = loadVectors("errors.json").vectors as any[];
const canonical = loadVectors("canonical.json").vectors as any[];
const envelopes = loadVectors("envelopes.json").vectors as any[];
const streams = loadVectors("streams.json").vectors as any[];

/** Decoder options for a vector. Value vectors decode classes as placeholders; error vectors
 * get exactly the allow-list they name (none: no class is allowed). */
function decodeOptions(options: any = {}, placeholders = true): DecodeOptions {
  const out: DecodeOptions = { placeholders };
  if (options.max_depth !== undefined) out.maxDepth = options.max_depth;
  if (options.max_alloc !== undefined) out.maxAlloc = options.max_alloc;
  if (options.buffers) out.buffers = options.buffers.map(hexBytes);
  if (options.unknown_fields) out.unknownFields = options.unknown_fields;
  if (options.types) out.types = vectorClasses(options.types);
  return out;
}

const counts = new Map<string, { passed: number; skipped: number }>();
function count(file: string, skipped: boolean): void {
  const c = counts.get(file) ?? { passed: 0, skipped: 0 };
  if (skipped) c.skipped++;
  else c.passed++;
  counts.set(file, c);
}

test("values.json: decoding", () => {
  const failures: string[] = [];
  for (const v of values) {
    if (skipReason("values", v.name, "decode")) { count("values decode", true); continue; }
    const opts = v.options ?? {};
    try {
      const got = decode(hexBytes(v.hex), decodeOptions(opts));
      const diff = new Comparer(opts.refs === false, (opts.buffers ?? []).map(hexBytes)).compare(got, v.value);
      if (diff) failures.push(`${v.name}: ${diff}`);
      else count("values decode", false);
    } catch (e) {
      failures.push(`${v.name}: ${(e as Error).message}`);
    }
  }
  assert.deepEqual(failures, []);
});

test("values.json: encoding", () => {
  const failures: string[] = [];
  for (const v of values) {
    if (v.decode_only) continue;
    if (skipReason("values", v.name, "encode")) { count("values encode", true); continue; }
    const opts = v.options ?? {};
    try {
      const value = build(v.value);
      const got = toHex(encode(value, { refs: opts.refs, maxDepth: opts.max_depth }));
      const want = v.hex.replace(/\s+/g, "");
      if (got !== want) failures.push(`${v.name}: wrote ${got}, expected ${want}`);
      else count("values encode", false);
    } catch (e) {
      failures.push(`${v.name}: ${(e as Error).message}`);
    }
  }
  assert.deepEqual(failures, []);
});

test("values.json and canonical.json: the encoder's deep walk (past 256 levels) writes the same bytes", () => {
  // The walk that takes over from the recursive one at depth, run from the root here.
  const failures: string[] = [];
  setDeepWalkFrom(0);
  try {
    for (const v of values) {
      if (v.decode_only || skipReason("values", v.name, "encode")) continue;
      const opts = v.options ?? {};
      try {
        const got = toHex(encode(build(v.value), { refs: opts.refs, maxDepth: opts.max_depth }));
        if (got !== v.hex.replace(/\s+/g, "")) failures.push(`${v.name}: wrote ${got}`);
      } catch (e) {
        failures.push(`${v.name}: ${(e as Error).message}`);
      }
    }
    for (const v of canonical) {
      if (skipReason("canonical", v.name, "encode")) continue;
      const got = toHex(encode(build(v.value), { canonical: true, sortKeys: v.sort_keys }));
      if (got !== v.hex.replace(/\s+/g, "")) failures.push(`${v.name}: wrote ${got}`);
    }
  } finally {
    setDeepWalkFrom();
  }
  assert.deepEqual(failures, []);
});

test("errors.json: every failure with its kind and offset (dicts as Maps and as objects)", () => {
  const failures: string[] = [];
  for (const v of errors) {
    if (skipReason("errors", v.name, "decode")) { count("errors", true); continue; }
    try {
      const again = { ...decodeOptions(v.options, false), dicts: "object" as const };
      try {
        decode(hexBytes(v.hex), again);
        failures.push(`${v.name}: decoded with dicts: "object"`);
      } catch (e) {
        if (!(e instanceof DecodeError) || e.kind !== v.error || e.offset !== v.offset) failures.push(`${v.name}: with dicts: "object": ${(e as Error).message}`);
      }
      decode(hexBytes(v.hex), decodeOptions(v.options, false));
      failures.push(`${v.name}: decoded, expected ${v.error} at ${v.offset}`);
    } catch (e) {
      if (!(e instanceof DecodeError)) { failures.push(`${v.name}: ${(e as Error).stack}`); continue; }
      if (e.kind !== v.error || e.offset !== v.offset) failures.push(`${v.name}: ${e.kind} at ${e.offset}, expected ${v.error} at ${v.offset} (${e.message})`);
      else count("errors", false);
    }
  }
  assert.deepEqual(failures, []);
});

test("canonical.json: byte for byte, and decode + re-encode gives the same bytes", () => {
  const failures: string[] = [];
  for (const v of canonical) {
    if (skipReason("canonical", v.name, "encode")) { count("canonical", true); continue; }
    const want = v.hex.replace(/\s+/g, "");
    const opts = { canonical: true, sortKeys: v.sort_keys };
    const got = toHex(encode(build(v.value), opts));
    if (got !== want) { failures.push(`${v.name}: wrote ${got}, expected ${want}`); continue; }
    const again = toHex(encode(decode(hexBytes(want), { placeholders: true }), opts));
    if (again !== want) { failures.push(`${v.name}: re-encoded ${again}`); continue; }
    count("canonical", false);
  }
  assert.deepEqual(failures, []);
});

test("envelopes.json: opening, info, sealing and every failure", () => {
  const failures: string[] = [];
  for (const v of envelopes) {
    if (skipReason("envelopes", v.name, "decode")) { count("envelopes", true); continue; }
    const o = v.options ?? {};
    const keys = v.keys.map((k: any) => (k.derived_id ? { secret: hexBytes(k.secret) } : { secret: hexBytes(k.secret), id: hexBytes(k.id) }));
    const opts: DecodeOptions = { keys, now: o.now ?? 0, maxAge: o.max_age, maxDecompressed: o.max_decompressed, maxAlloc: o.max_alloc, placeholders: true };
    const data = hexBytes(v.hex);
    try {
      const got = decode(data, opts);
      if (v.error) { failures.push(`${v.name}: opened, expected ${v.error} at ${v.offset}`); continue; }
      const want = decode(hexBytes(v.payload), { placeholders: true });
      const same = toHex(encode(got, { canonical: true })) === toHex(encode(want, { canonical: true }));
      if (!same) { failures.push(`${v.name}: value differs from the payload's`); continue; }
      const info = envelopeInfo(data);
      const wantInfo = v.info;
      const gotInfo = {
        signed: info.signed, key_id: info.keyId ? toHex(info.keyId) : null, timestamp: info.timestamp,
        compression: info.compression, compressed_size: info.compressedSize, size: info.size,
      };
      assert.deepEqual(gotInfo, wantInfo, v.name);
      if (v.seal) {
        const sealed = encode(want, { key: keys[0], timestamp: v.seal.timestamp });
        if (toHex(sealed) !== v.hex.replace(/\s+/g, "")) { failures.push(`${v.name}: sealed ${toHex(sealed)}`); continue; }
      }
      count("envelopes", false);
    } catch (e) {
      if (!(e instanceof DecodeError)) { failures.push(`${v.name}: ${(e as Error).stack}`); continue; }
      if (e.kind !== v.error || e.offset !== v.offset) failures.push(`${v.name}: ${e.kind} at ${e.offset}, expected ${v.error} at ${v.offset} (${e.message})`);
      else count("envelopes", false);
    }
  }
  assert.deepEqual(failures, []);
});

test("streams.json: framing, payloads and every failure", () => {
  const failures: string[] = [];
  for (const v of streams) {
    if (skipReason("streams", v.name, "decode")) { count("streams", true); continue; }
    const o = v.options ?? {};
    const data = hexBytes(v.hex);
    const base = { requireEnd: o.require_end, maxMessage: o.max_message, placeholders: true };
    const check = (decodePayloads: boolean): string | null => {
      const expectError = v.error !== undefined && !(v.payload_error && !decodePayloads);
      try {
        const msgs = readStream(data, { ...base, decodePayloads });
        if (expectError) return `read, expected ${v.error} at ${v.offset}`;
        const got = msgs.map((m) => toHex(m.payload));
        const want = v.payloads.map((p: string) => p.replace(/\s+/g, ""));
        return JSON.stringify(got) === JSON.stringify(want) ? null : `payloads ${JSON.stringify(got)}`;
      } catch (e) {
        if (!(e instanceof DecodeError)) return (e as Error).stack ?? String(e);
        if (!expectError) return `failed: ${e.message}`;
        if (e.kind !== v.error || e.offset !== v.offset || e.messageIndex !== v.message_index) {
          return `${e.kind} at ${e.offset} (message ${e.messageIndex}), expected ${v.error} at ${v.offset} (message ${v.message_index})`;
        }
        return null;
      }
    };
    const framing = check(false);
    const decoding = v.framing_only ? null : check(true);
    if (framing || decoding) failures.push(`${v.name}: ${framing ?? decoding}`);
    else count("streams", false);
    // A valid stream written again by the writer gives the same bytes.
    if (v.error === undefined && o.require_end !== false) {
      const w = new StreamWriter();
      for (const p of v.payloads) w.writePayload(hexBytes(p));
      if (toHex(w.close()) !== v.hex.replace(/\s+/g, "")) failures.push(`${v.name}: the writer wrote other bytes`);
    }
  }
  assert.deepEqual(failures, []);
});

test("the skip list is exact: every entry names a vector, and is used", () => {
  const all: Record<string, any[]> = { values, errors, canonical, envelopes, streams };
  for (const s of SKIPS) {
    assert.ok(all[s.file].some((v) => v.name === s.name), `skip entry names no vector: ${s.file} ${s.name}`);
  }
  assert.deepEqual(SKIPS.filter((s) => !usedSkips.has(s)).map((s) => s.name), []);
  const lines = [...counts].map(([k, c]) => `${k}: ${c.passed} passed, ${c.skipped} skipped`);
  console.log(`vector counts\n  ${lines.join("\n  ")}\n  skip list: ${SKIPS.length} entries`);
});

test("values.json: decoded with dicts as objects and classes as plain records, encoded back to the same bytes", () => {
  const failures: string[] = [];
  let checked = 0;
  for (const v of values) {
    const opts = v.options ?? {};
    if (v.decode_only || opts.buffers || skipReason("values", v.name, "encode")) continue;
    const hex = v.hex.replace(/\s+/g, "");
    for (const mode of [{ dicts: "object" as const, placeholders: "plain" as const }, { placeholders: true }]) {
      try {
        const again = toHex(encode(decode(hexBytes(hex), { ...mode, maxDepth: opts.max_depth }), { refs: opts.refs, maxDepth: opts.max_depth }));
        if (again !== hex) failures.push(`${v.name} (${JSON.stringify(mode)}): wrote ${again}`);
      } catch (e) {
        failures.push(`${v.name} (${JSON.stringify(mode)}): ${(e as Error).message}`);
      }
    }
    checked++;
  }
  assert.ok(checked > 250);
  assert.deepEqual(failures, []);
});
