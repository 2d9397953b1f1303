// The header (spec 3) and the envelope of signed and compressed payloads (spec 12), checked in
// the order of spec 12.5: nothing is decompressed before the signature checks out, and nothing
// is decoded before the body is there. HMAC runs on node:crypto (synchronous decode) or on
// WebCrypto (decodeAsync, for browsers).

import { decodeError, DecodeError } from "./errors.js";
import { VarintReader } from "./varint.js";
import { defaultAllocBudget } from "./limits.js";
import { zstdDecompress } from "./compress/zstd.js";
import { lz4Decompress } from "./compress/lz4.js";

export const MIN_KEY_LENGTH = 16;
export const MAX_KEY_ID = 64;
export const CLOCK_SKEW = 60;
const KEY_ID_TEXT = new TextEncoder().encode("amber key id");

/** A signing key: the secret and its id (derived from the secret when not given). */
export interface SigningKey {
  secret: Uint8Array | string;
  id?: Uint8Array | string;
}

export interface EnvelopeOptions {
  /** Keys to verify signed payloads with; with keys, unsigned payloads are refused. */
  keys?: readonly SigningKey[];
  /** Refuse payloads signed longer ago than this many seconds (needs keys). */
  maxAge?: number;
  /** The clock, in seconds since 1970 (default: now). */
  now?: number;
  /** Largest accepted decompressed size in bytes. */
  maxDecompressed?: number;
  maxAlloc?: number;
}

export interface EnvelopeInfo {
  signed: boolean;
  keyId: Uint8Array | null;
  timestamp: number | null;
  compression: "zstd" | "lz4" | null;
  compressedSize: number | null;
  size: number;
}

/** Where the body is, once the envelope is open. */
export interface OpenBody {
  buf: Uint8Array;
  start: number;
  end: number;
  /** Absolute offset of the body's first byte in error offsets (0 for a decompressed body). */
  errorBase: number;
  decompressed: boolean;
  spent: number;
  maxAlloc: number;
  info: EnvelopeInfo;
}

/** What the envelope says before its signature is checked. */
export interface Sealed {
  data: Uint8Array;
  signed: boolean;
  compressed: boolean;
  keyId: Uint8Array | null;
  sigFlagsAt: number;
  timestamp: number | null;
  timestampAt: number;
  contentStart: number;
  contentEnd: number;
  candidates: Uint8Array[];
}

const utf8 = (s: Uint8Array | string) => (typeof s === "string" ? new TextEncoder().encode(s) : s);

type NodeCrypto = {
  createHmac(alg: string, key: Uint8Array): { update(d: Uint8Array): { digest(): Uint8Array } };
};
let nodeCrypto: NodeCrypto | null | undefined;
function getNodeCrypto(): NodeCrypto | null {
  if (nodeCrypto === undefined) {
    const proc = (globalThis as { process?: { getBuiltinModule?: (name: string) => unknown } }).process;
    nodeCrypto = (proc?.getBuiltinModule?.("node:crypto") as NodeCrypto | undefined) ?? null;
  }
  return nodeCrypto;
}

/** HMAC-SHA256, synchronously (node:crypto). */
export function hmacSync(secret: Uint8Array, data: Uint8Array): Uint8Array {
  const c = getNodeCrypto();
  if (c === null) throw new Error("synchronous HMAC needs node:crypto; use decodeAsync/encodeAsync in a browser");
  return new Uint8Array(c.createHmac("sha256", secret).update(data).digest());
}

/** HMAC-SHA256 with WebCrypto. */
export async function hmacAsync(secret: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const subtle = globalThis.crypto.subtle;
  const key = await subtle.importKey("raw", secret as Uint8Array<ArrayBuffer>, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await subtle.sign("HMAC", key, data as Uint8Array<ArrayBuffer>));
}

function checkSecret(secret: Uint8Array): void {
  if (secret.length < MIN_KEY_LENGTH) throw new RangeError(`a secret needs at least ${MIN_KEY_LENGTH} bytes`);
}

/** The key id of a secret without one: the first 8 bytes of HMAC(secret, "amber key id"). */
export function deriveKeyId(secret: Uint8Array | string): Uint8Array {
  return hmacSync(utf8(secret), KEY_ID_TEXT).slice(0, 8);
}
export async function deriveKeyIdAsync(secret: Uint8Array | string): Promise<Uint8Array> {
  return (await hmacAsync(utf8(secret), KEY_ID_TEXT)).slice(0, 8);
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

export interface ResolvedKey { secret: Uint8Array; id: Uint8Array }

export function resolveKeys(keys: readonly SigningKey[]): ResolvedKey[] {
  return keys.map((k) => {
    const secret = utf8(k.secret);
    checkSecret(secret);
    return { secret, id: k.id === undefined ? deriveKeyId(secret) : utf8(k.id) };
  });
}
export async function resolveKeysAsync(keys: readonly SigningKey[]): Promise<ResolvedKey[]> {
  const out: ResolvedKey[] = [];
  for (const k of keys) {
    const secret = utf8(k.secret);
    checkSecret(secret);
    out.push({ secret, id: k.id === undefined ? await deriveKeyIdAsync(secret) : utf8(k.id) });
  }
  return out;
}

/** Spec 3 and 12.5 steps 1 to 5. `keys` null: no key given. */
export function readSealed(data: Uint8Array, keys: ResolvedKey[] | null): Sealed {
  const n = data.length;
  if (n < 3) {
    const prefix = (n === 0 || data[0] === 0xab) && (n < 2 || data[1] === 0x41);
    throw decodeError(prefix ? "truncated" : "bad_magic", prefix ? n : 0);
  }
  if (data[0] !== 0xab || data[1] !== 0x41) throw decodeError("bad_magic", 0, "not an amber payload");
  const b2 = data[2];
  if ((b2 & 0x0f) !== 1) throw decodeError("unsupported_version", 2, `version ${b2 & 0x0f}`);
  if (b2 & 0xc0) {
    throw decodeError("unsupported_feature", 2, b2 & 0x40 ? "a string table (flag 0x40) is not in version 1" : "an extended header (flag 0x80) is not in version 1");
  }
  const signed = (b2 & 0x20) !== 0;
  const compressed = (b2 & 0x10) !== 0;
  if (keys !== null && keys.length > 0 && !signed) throw decodeError("signature_required", 2, "the payload is not signed, and keys were given");
  if ((keys === null || keys.length === 0) && signed) throw decodeError("key_required", 2, "the payload is signed: pass keys to verify it");
  const sealed: Sealed = {
    data, signed, compressed, keyId: null, sigFlagsAt: -1, timestamp: null, timestampAt: -1,
    contentStart: 3, contentEnd: n, candidates: [],
  };
  if (!signed) return sealed;
  if (n < 4) throw decodeError("truncated", 3);
  const idLen = data[3];
  if (idLen === 0 || idLen > MAX_KEY_ID) throw decodeError("bad_envelope", 3, `key id length ${idLen} is out of range 1..${MAX_KEY_ID}`);
  if (n < 4 + idLen) throw decodeError("truncated", 3);
  sealed.keyId = data.slice(4, 4 + idLen);
  let pos = 4 + idLen;
  sealed.sigFlagsAt = pos;
  if (pos >= n) throw decodeError("truncated", pos);
  const sigFlags = data[pos++];
  if (sigFlags & 0xfe) throw decodeError("bad_envelope", pos - 1, `sig_flags 0x${sigFlags.toString(16)} sets reserved bits`);
  if (sigFlags & 1) {
    sealed.timestampAt = pos;
    if (n - pos < 8) throw decodeError("truncated", pos);
    const dv = new DataView(data.buffer, data.byteOffset + pos, 8);
    sealed.timestamp = Number(dv.getBigUint64(0, true));
    pos += 8;
  }
  sealed.candidates = keys!.filter((k) => equalBytes(k.id, sealed.keyId!)).map((k) => k.secret);
  if (sealed.candidates.length === 0) {
    const id = sealed.keyId;
    const text = id.every((c) => c >= 0x20 && c < 0x7f) ? JSON.stringify(String.fromCharCode(...id)) : hex(id);
    throw decodeError("unknown_key", 3, `no key has the id ${text} (${keys!.length} keys given)`);
  }
  if (n - pos < 32) throw decodeError("truncated", pos);
  sealed.contentStart = pos;
  sealed.contentEnd = n - 32;
  return sealed;
}

function hex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** Step 6: whether one of the candidate secrets gives the tag. */
export function signatureMatches(sealed: Sealed, macs: Uint8Array[]): void {
  const tag = sealed.data.subarray(sealed.contentEnd);
  let ok = false;
  for (const mac of macs) ok = equalBytes(mac, tag) || ok;
  if (!ok) throw decodeError("bad_signature", sealed.contentEnd, "no key of that id gives the payload's tag");
}

const varints = new VarintReader();

/** Steps 7 to 9: the timestamp, then the compression section; returns the body. */
export function openSealed(sealed: Sealed, options: EnvelopeOptions & { maxAlloc?: number }, decompress = true): OpenBody {
  const data = sealed.data;
  if (sealed.signed && options.maxAge !== undefined) {
    if (sealed.timestamp === null) throw decodeError("timestamp_required", sealed.sigFlagsAt, "max_age needs a timestamped payload");
    const now = options.now ?? Math.floor(Date.now() / 1000);
    if (sealed.timestamp > now + CLOCK_SKEW) throw decodeError("timestamp_in_future", sealed.timestampAt);
    const age = Math.max(0, now - sealed.timestamp);
    if (age > options.maxAge) throw decodeError("expired", sealed.timestampAt, `signed ${age} s ago, max_age is ${options.maxAge} s`);
  }
  const maxAlloc = options.maxAlloc ?? defaultAllocBudget(data.length);
  const info: EnvelopeInfo = {
    signed: sealed.signed, keyId: sealed.keyId, timestamp: sealed.timestamp, compression: null,
    compressedSize: null, size: sealed.contentEnd - sealed.contentStart,
  };
  if (!sealed.compressed) {
    return { buf: data, start: sealed.contentStart, end: sealed.contentEnd, errorBase: sealed.contentStart, decompressed: false, spent: 0, maxAlloc, info };
  }
  let pos = sealed.contentStart;
  const end = sealed.contentEnd;
  if (pos >= end) throw decodeError("truncated", pos);
  const algAt = pos;
  const alg = data[pos++];
  if (alg !== 1 && alg !== 2) throw decodeError("unknown_compression", algAt, `compression algorithm ${alg} is not defined (1 is zstd, 2 is lz4)`);
  const sizeAt = pos;
  if (!varints.read(data, pos, end)) varints.throwAt(sizeAt);
  const declared = varints.exact;
  pos = varints.end;
  if (declared === 0) throw decodeError("bad_envelope", sizeAt, "the decompressed size is 0");
  if (options.maxDecompressed !== undefined && declared > options.maxDecompressed) {
    throw decodeError("decompressed_too_large", sizeAt, `the body declares ${declared} bytes, max_decompressed is ${options.maxDecompressed}`);
  }
  if (typeof declared !== "number" || declared > maxAlloc) {
    throw decodeError("decompressed_too_large", sizeAt, `the body declares ${declared} bytes, more than the allocation budget ${maxAlloc} (raise maxAlloc)`);
  }
  const size = declared;
  if (size > 0x7fffffff) throw decodeError("decompressed_too_large", sizeAt, "more than this decoder can address");
  if (pos >= end) throw decodeError("truncated", pos);
  const compressedData = data.subarray(pos, end);
  const dataAt = pos;
  if (!decompress) {
    info.compression = alg === 1 ? "zstd" : "lz4";
    info.compressedSize = compressedData.length;
    info.size = size;
    return { buf: compressedData, start: 0, end: 0, errorBase: dataAt, decompressed: false, spent: 0, maxAlloc, info };
  }
  let body: Uint8Array;
  try {
    body = alg === 1 ? zstdDecompress(compressedData, size) : lz4Decompress(compressedData, size);
  } catch (e) {
    if (e instanceof SizeMismatch) throw decodeError("size_mismatch", sizeAt, `the body declares ${size} bytes: ${e.message}`);
    if (e instanceof DecodeError) throw e;
    throw decodeError("bad_compression", dataAt, `the ${alg === 1 ? "zstd" : "lz4"} data is not valid: ${(e as Error).message}`);
  }
  info.compression = alg === 1 ? "zstd" : "lz4";
  info.compressedSize = compressedData.length;
  info.size = size;
  return { buf: body, start: 0, end: body.length, errorBase: 0, decompressed: true, spent: size, maxAlloc, info };
}

/** The decompressed size differs from the declared one. */
export class SizeMismatch extends Error {}

/** Reads the envelope's fields without any check of the signature (for tools). */
export function envelopeInfo(data: Uint8Array): EnvelopeInfo {
  const sealed = readSealedUnchecked(data);
  const info: EnvelopeInfo = {
    signed: sealed.signed, keyId: sealed.keyId, timestamp: sealed.timestamp, compression: null,
    compressedSize: null, size: sealed.contentEnd - sealed.contentStart,
  };
  if (sealed.compressed) {
    const pos = sealed.contentStart;
    if (pos >= sealed.contentEnd) throw decodeError("truncated", pos);
    const alg = data[pos];
    if (alg !== 1 && alg !== 2) throw decodeError("unknown_compression", pos);
    if (!varints.read(data, pos + 1, sealed.contentEnd)) varints.throwAt(pos + 1);
    info.compression = alg === 1 ? "zstd" : "lz4";
    info.size = Number(varints.exact);
    info.compressedSize = sealed.contentEnd - varints.end;
  }
  return info;
}

function readSealedUnchecked(data: Uint8Array): Sealed {
  // The same walk as readSealed, accepting any key id.
  const signed = data.length >= 3 && (data[2] & 0x20) !== 0;
  if (!signed) return readSealed(data, null);
  const fake: ResolvedKey[] = [];
  if (data.length >= 4 && data[3] >= 1 && data[3] <= MAX_KEY_ID && data.length >= 4 + data[3]) {
    fake.push({ secret: new Uint8Array(0), id: data.slice(4, 4 + data[3]) });
  } else {
    fake.push({ secret: new Uint8Array(0), id: new Uint8Array(1) });
  }
  return readSealed(data, fake);
}
