// zstd envelopes written by the JS encoder (spec 12.3): the API around the asynchronous WASM
// load, round trips through both compressors (node:zlib where Node has zstd, the WASM build
// always), the frame's recorded size and window, signing, and the decompressed-size cap.
// Python opening them is in differential.test.ts.

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  decode, decodeAsync, encode, encodeAsync, envelopeInfo, verify, initZstd, zstdCompressor,
  DecodeError, DecodeLimitError, SignatureError,
} from "../src/index.js";
import { useZstdBackend } from "../src/compress/zstd_write.js";
import { walkFrame } from "../src/compress/zstd.js";
import { toHex } from "./notation.js";

const SECRET = new TextEncoder().encode("amber envelope test secret one!!");
const NODE_HAS_ZSTD = zstdCompressor() === "node:zlib";

function megabyte(): Uint8Array {
  // 1 MiB that compresses, but not to nothing: a slowly changing pattern with noise.
  const b = new Uint8Array(1 << 20);
  let x = 12345;
  for (let i = 0; i < b.length; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    b[i] = (i >> 10) + ((x >>> 24) & 7);
  }
  return b;
}

const VALUES: [string, unknown][] = [
  ["None", null],
  ["the empty str", ""],
  ["the empty list", []],
  ["a small int", 7],
  ["the body of spec 12.1's example (bytes of 300 zeros)", new Uint8Array(300)],
  ["repeated strs", Array.from({ length: 500 }, (_, i) => `item ${i % 10}`)],
  ["a dict of lists", new Map<string, unknown>([["a", Array.from({ length: 1000 }, (_, i) => i)], ["b", "xyz".repeat(400)]])],
  ["1 MiB of bytes", megabyte()],
  ["incompressible bytes", crypto.getRandomValues(new Uint8Array(4096))],
];

/** The compression section of an unsigned payload: [algorithm, declared size, data]. */
function section(payload: Uint8Array): [number, number, Uint8Array] {
  let pos = 4, size = 0, shift = 1;
  for (;;) {
    const b = payload[pos++];
    size += (b & 0x7f) * shift;
    shift *= 128;
    if (b < 128) break;
  }
  return [payload[3], size, payload.subarray(pos)];
}

const same = (a: unknown, b: unknown) => assert.equal(toHex(encode(a)), toHex(encode(b)));

test("without node:zlib's zstd, a synchronous encode asks for initZstd(); encodeAsync loads it", async () => {
  if (NODE_HAS_ZSTD) {
    assert.equal(zstdCompressor(), "node:zlib");
  } else {
    assert.equal(zstdCompressor(), null);
    for (const v of ["x".repeat(1000), null]) {
      assert.throws(() => encode(v, { compress: "zstd" }), (e: unknown) => e instanceof Error && /await initZstd\(\)/.test(e.message));
    }
  }
  // lz4 and no compression never need it.
  assert.equal(decode(encode("x".repeat(1000), { compress: "lz4" })), "x".repeat(1000));
  assert.equal(decode(encode("x".repeat(1000))), "x".repeat(1000));
  const sealed = await encodeAsync("x".repeat(1000), { compress: "zstd" });
  assert.equal(sealed[2], 0x11);
  assert.equal(decode(sealed), "x".repeat(1000));
  assert.notEqual(zstdCompressor(), null);
  await initZstd();
  assert.equal(toHex(encode("x".repeat(1000), { compress: "zstd" })), toHex(sealed));
});

for (const backend of NODE_HAS_ZSTD ? (["auto", "wasm"] as const) : (["wasm"] as const)) {
  const name = backend === "auto" ? "node:zlib" : "wasm";
  test(`${name}: zstd round trips; one frame recording the body's size, a window fitted to it`, async () => {
    useZstdBackend(backend);
    try {
      await initZstd();
      assert.equal(zstdCompressor(), name);
      for (const [what, value] of VALUES) {
        const plain = encode(value);
        const sealed = encode(value, { compress: "zstd" });
        assert.equal(toHex(await encodeAsync(value, { compress: "zstd" })), toHex(sealed), what);
        same(decode(sealed, { maxAlloc: 1 << 26 }), value);
        if (sealed[2] === 0x01) {
          // Written plain only when the section would not be shorter than the body.
          assert.equal(toHex(sealed), toHex(plain), what);
          assert.ok(plain.length < 40 || what === "incompressible bytes", `${what} was not compressed`);
          continue;
        }
        assert.equal(sealed[2], 0x11, what);
        assert.ok(sealed.length < plain.length, what);
        const [alg, size, data] = section(sealed);
        assert.equal(alg, 1, what);
        assert.equal(size, plain.length - 3, what);
        const { fcs, window } = walkFrame(data);
        assert.equal(fcs, BigInt(size), `${what}: the frame records the content size`);
        let room = 1024n;
        while (room < BigInt(size)) room <<= 1n;
        assert.ok(window <= room, `${what}: window ${window} for ${size} bytes`);
        assert.deepEqual(envelopeInfo(sealed), { signed: false, keyId: null, timestamp: null, compression: "zstd", compressedSize: data.length, size });
      }
      // Every level gives a valid frame; higher levels are not larger here.
      const value = VALUES[6][1];
      const sizes = [1, 3, 9, 19, 22].map((level) => {
        const sealed = encode(value, { compress: "zstd", level });
        same(decode(sealed), value);
        return sealed.length;
      });
      assert.ok(sizes[4] <= sizes[0], `sizes by level ${sizes}`);
      assert.equal(toHex(encode(value, { compress: "zstd", level: 3 })), toHex(encode(value, { compress: "zstd" })));
    } finally {
      useZstdBackend("auto");
    }
  });
}

test("signed and zstd-compressed: the tag covers the compressed data; keys, max age, WebCrypto", async () => {
  await initZstd();
  const value = { rows: Array.from({ length: 300 }, (_, i) => ({ id: i, name: `row ${i % 7}` })) };
  const key = { secret: SECRET };
  const old = { secret: "an older secret of enough bytes", id: "old" };
  const sealed = encode(value, { key, compress: "zstd", timestamp: 1_700_000_000 });
  assert.equal(sealed[2], 0x31, "signed and compressed");
  assert.ok(sealed.length < encode(value).length);
  assert.equal(toHex(await encodeAsync(value, { key, compress: "zstd", timestamp: 1_700_000_000 })), toHex(sealed));
  const opened = decode(sealed, { keys: [old, key], now: 1_700_000_010, maxAge: 60, dicts: "object" });
  assert.deepEqual(opened, value);
  assert.deepEqual(await decodeAsync(sealed, { keys: [key], now: 1_700_000_010, dicts: "object" }), value);
  const info = verify(sealed, { keys: [key] });
  assert.equal(info.compression, "zstd");
  assert.equal(info.timestamp, 1_700_000_000);
  assert.equal(info.size, encode(value).length - 3);
  const tampered = sealed.slice();
  tampered[tampered.length - 40] ^= 1;
  assert.throws(() => decode(tampered, { keys: [key] }), (e: unknown) => e instanceof SignatureError && e.kind === "bad_signature");
  assert.throws(() => decode(sealed), (e: unknown) => e instanceof SignatureError && e.kind === "key_required");
  assert.throws(() => decode(sealed, { keys: [key], now: 1_700_010_000, maxAge: 60 }), (e: unknown) => e instanceof SignatureError && e.kind === "expired");
  // The id of a key given by hand, and a list whose first key signs.
  const byId = encode(value, { key: [{ secret: SECRET, id: "k1" }, old], compress: "zstd", level: 19 });
  assert.deepEqual(decode(byId, { keys: [old, { secret: SECRET, id: "k1" }], dicts: "object" }), value);
});

test("the decompressed-size cap and the allocation budget refuse a large zstd body before decompressing", async () => {
  await initZstd();
  const value = megabyte();
  const sealed = encode(value, { compress: "zstd" });
  const [, size] = section(sealed);
  assert.equal(sealed[2], 0x11, "compressed");
  assert.throws(
    () => decode(sealed, { maxDecompressed: size - 1, maxAlloc: 1 << 26 }),
    (e: unknown) => e instanceof DecodeLimitError && e.kind === "decompressed_too_large" && e.offset === 4,
  );
  same(decode(sealed, { maxDecompressed: size, maxAlloc: 1 << 26 }), value);
  assert.throws(
    () => decode(sealed, { maxAlloc: size - 1 }),
    (e: unknown) => e instanceof DecodeLimitError && e.kind === "decompressed_too_large" && /maxAlloc/.test(e.message),
  );
  // Signed, the cap is checked after the signature and still before decompressing.
  const signed = encode(value, { compress: "zstd", key: { secret: SECRET } });
  assert.throws(
    () => decode(signed, { keys: [{ secret: SECRET }], maxDecompressed: 1000, maxAlloc: 1 << 26 }),
    (e: unknown) => e instanceof DecodeLimitError && e.kind === "decompressed_too_large",
  );
  // A declared size smaller than the frame's recorded one is size_mismatch.
  const small = encode("abc".repeat(100), { compress: "zstd" });
  const [, smallSize] = section(small);
  assert.ok(smallSize < 128 * 128 && smallSize >= 128, "a two-byte size");
  const lied = small.slice();
  lied[4] -= 1;
  assert.throws(() => decode(lied), (e: unknown) => e instanceof DecodeError && e.kind === "size_mismatch" && e.offset === 4);
});

test("zstd options are checked as Python's dumps checks them", async () => {
  await initZstd();
  for (const level of [0, 23, 1.5, -1, NaN]) {
    assert.throws(() => encode("x".repeat(100), { compress: "zstd", level }), RangeError, String(level));
  }
  assert.throws(() => encode("x".repeat(100), { compress: "lz4", level: 3 }), /lz4 has no levels/);
  assert.throws(() => encode("x".repeat(100), { level: 3 }), /without compression there is no level/);
  assert.throws(() => encode("x", { compress: "brotli" as "zstd" }), RangeError);
  await assert.rejects(encodeAsync("x", { compress: "zstd", level: 30 }), RangeError);
  assert.equal(decode(encode("x".repeat(100), { compress: "zstd", level: null })), "x".repeat(100));
});
