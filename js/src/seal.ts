// Writing the envelope (spec 12): compress the body when that makes the payload smaller, then
// sign everything before the tag. zstd is read (fzstd) but not written: no well-kept pure-JS
// zstd compressor exists, so `compress: "zstd"` is refused rather than faked.

import { compressBlock, compressBound } from "lz4js";
import { hmacSync, hmacAsync, resolveKeys, resolveKeysAsync, MAX_KEY_ID, type SigningKey, type ResolvedKey } from "./envelope.js";

export interface SealOptions {
  /** Sign with this key (the first one of a list signs). */
  key?: SigningKey | readonly SigningKey[];
  /** Write the time of signing (true: now; a number: that Unix time in seconds). */
  timestamp?: boolean | number;
  /** Compress the body. */
  compress?: "lz4" | "zstd" | null;
}

function varint(v: number): number[] {
  const out: number[] = [];
  while (v >= 128) { out.push((v % 128) | 0x80); v = Math.floor(v / 128); }
  out.push(v);
  return out;
}

function compressed(payload: Uint8Array, options: SealOptions): Uint8Array {
  if (!options.compress) return payload;
  if (options.compress === "zstd") throw new RangeError("zstd compression is not available in the JS encoder (zstd payloads decode); use compress: \"lz4\"");
  if (options.compress !== "lz4") throw new RangeError(`unknown compression ${String(options.compress)}`);
  const body = payload.subarray(3);
  const dst = new Uint8Array(compressBound(body.length));
  const hashTable = new Uint32Array(1 << 16);
  const n = compressBlock(body, dst, 0, body.length, hashTable);
  if (n === 0) return payload;
  const section = [2, ...varint(body.length)];
  if (section.length + n >= body.length) return payload;
  const out = new Uint8Array(3 + section.length + n);
  out.set([0xab, 0x41, 0x11]);
  out.set(section, 3);
  out.set(dst.subarray(0, n), 3 + section.length);
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
  if (options.timestamp && !options.key) throw new RangeError("a timestamp needs a key: an unsigned timestamp proves nothing");
  const body = compressed(payload, options);
  if (!options.key) return body;
  const [key] = resolveKeys(keyList(options.key));
  const out = signingFields(body, key, options);
  out.set(hmacSync(key.secret, out.subarray(0, out.length - 32)), out.length - 32);
  return out;
}

export async function sealAsync(payload: Uint8Array, options: SealOptions): Promise<Uint8Array> {
  if (options.timestamp && !options.key) throw new RangeError("a timestamp needs a key: an unsigned timestamp proves nothing");
  const body = compressed(payload, options);
  if (!options.key) return body;
  const [key] = await resolveKeysAsync(keyList(options.key));
  const out = signingFields(body, key, options);
  out.set(await hmacAsync(key.secret, out.subarray(0, out.length - 32)), out.length - 32);
  return out;
}
