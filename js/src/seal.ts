// Writing the envelope (spec 12): compress the body when that makes the payload smaller, then
// sign everything before the tag. lz4 is written with lz4js; zstd with node:zlib where Node
// has it, else with the WASM build of libzstd that initZstd (or sealAsync) loads
// (compress/zstd_write.ts).

import { compressBlock, compressBound } from "lz4js";
import { zstdCompress, zstdCompressor, requireZstd, initZstd, checkZstdLevel, DEFAULT_ZSTD_LEVEL } from "./compress/zstd_write.js";
import { hmacSync, hmacAsync, resolveKeys, resolveKeysAsync, MAX_KEY_ID, type SigningKey, type ResolvedKey } from "./envelope.js";

export interface SealOptions {
  /** Sign with this key (the first one of a list signs). */
  key?: SigningKey | readonly SigningKey[];
  /** Write the time of signing (true: now; a number: that Unix time in seconds). */
  timestamp?: boolean | number;
  /** Compress the body (only when that makes the payload smaller). zstd in a synchronous
   * encode needs node:zlib with zstd (Node 22.15+) or `await initZstd()` first. */
  compress?: "lz4" | "zstd" | null;
  /** zstd's level, 1 to 22 (default 3); an error with lz4 or without compression. */
  level?: number | null;
}

function varint(v: number): number[] {
  const out: number[] = [];
  while (v >= 128) { out.push((v % 128) | 0x80); v = Math.floor(v / 128); }
  out.push(v);
  return out;
}

/** The options' checks (as Python's dumps makes them), before anything is written. */
function checkOptions(options: SealOptions): void {
  if (options.timestamp && !options.key) throw new RangeError("a timestamp needs a key: an unsigned timestamp proves nothing");
  const c = options.compress;
  if (c && c !== "lz4" && c !== "zstd") throw new RangeError(`compress must be null, "zstd" or "lz4", not ${JSON.stringify(c)}`);
  if (options.level !== undefined && options.level !== null) {
    if (!c) throw new RangeError('level needs compress: "zstd": without compression there is no level');
    if (c === "lz4") throw new RangeError('level is not supported with compress: "lz4" (lz4 has no levels)');
    checkZstdLevel(options.level);
  }
}

function compressed(payload: Uint8Array, options: SealOptions): Uint8Array {
  if (!options.compress) return payload;
  // Refused alike whether or not this body would be compressed, so that a missing
  // initZstd() shows on the first encode, not on the first large one.
  if (options.compress === "zstd") requireZstd();
  const body = payload.subarray(3);
  const size = varint(body.length);
  // The section (algorithm, size, data) is written only when it is shorter than the body.
  const room = body.length - 1 - size.length;
  if (room <= 0) return payload;
  let data: Uint8Array;
  if (options.compress === "zstd") {
    data = zstdCompress(body, options.level ?? DEFAULT_ZSTD_LEVEL);
  } else {
    const dst = new Uint8Array(compressBound(body.length));
    const hashTable = new Uint32Array(1 << 16);
    const n = compressBlock(body, dst, 0, body.length, hashTable);
    if (n === 0) return payload;
    data = dst.subarray(0, n);
  }
  if (data.length >= room) return payload;
  const out = new Uint8Array(3 + 1 + size.length + data.length);
  out.set([0xab, 0x41, 0x11, options.compress === "zstd" ? 1 : 2, ...size]);
  out.set(data, 4 + size.length);
  return out;
}

function signingFields(payload: Uint8Array, key: ResolvedKey, options: SealOptions): Uint8Array {
  if (key.id.length < 1 || key.id.length > MAX_KEY_ID) throw new RangeError(`a key id has 1 to ${MAX_KEY_ID} bytes`);
  let ts: number | null = null;
  if (options.timestamp === true) ts = Math.floor(Date.now() / 1000);
  else if (typeof options.timestamp === "number") ts = options.timestamp;
  const head = [0xab, 0x41, payload[2] | 0x20, key.id.length, ...key.id, ts === null ? 0 : 1];
  if (ts !== null) {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, BigInt(ts), true);
    head.push(...b);
  }
  const content = payload.subarray(3);
  const out = new Uint8Array(head.length + content.length + 32);
  out.set(head);
  out.set(content, head.length);
  return out;
}

const keyList = (k: SigningKey | readonly SigningKey[]) => (Array.isArray(k) ? (k as readonly SigningKey[]) : [k as SigningKey]);

export function seal(payload: Uint8Array, options: SealOptions): Uint8Array {
  checkOptions(options);
  const body = compressed(payload, options);
  if (!options.key) return body;
  const [key] = resolveKeys(keyList(options.key));
  const out = signingFields(body, key, options);
  out.set(hmacSync(key.secret, out.subarray(0, out.length - 32)), out.length - 32);
  return out;
}

export async function sealAsync(payload: Uint8Array, options: SealOptions): Promise<Uint8Array> {
  checkOptions(options);
  if (options.compress === "zstd" && zstdCompressor() === null) await initZstd();
  const body = compressed(payload, options);
  if (!options.key) return body;
  const [key] = await resolveKeysAsync(keyList(options.key));
  const out = signingFields(body, key, options);
  out.set(await hmacAsync(key.secret, out.subarray(0, out.length - 32)), out.length - 32);
  return out;
}
