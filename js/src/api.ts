// The public decode entry points: header and envelope, then the body.

import { DecodeError } from "./errors.js";
import { decodeBody, HARD_MAX_DEPTH, type ValueOptions } from "./decode.js";
import { defaultAllocBudget } from "./limits.js";
import {
  readSealed, openSealed, signatureMatches, resolveKeys, resolveKeysAsync, hmacSync, hmacAsync,
  type EnvelopeOptions, type OpenBody,
} from "./envelope.js";

export interface DecodeOptions extends ValueOptions, EnvelopeOptions {}

function checkOptions(options: DecodeOptions): void {
  const d = options.maxDepth;
  if (d !== undefined && (!Number.isInteger(d) || d < 0 || d > HARD_MAX_DEPTH)) {
    throw new RangeError(`maxDepth must be an integer from 0 to ${HARD_MAX_DEPTH}`);
  }
  if (options.maxAge !== undefined && !options.keys?.length) throw new RangeError("maxAge needs keys");
}

function decodeOpened(body: OpenBody, options: DecodeOptions, inputLength: number): unknown {
  const hashBudget = 16 * Math.max(inputLength, body.end - body.start) + (1 << 20);
  try {
    return decodeBody(body.buf, body.start, body.end, body.errorBase, options, body.spent, body.maxAlloc, hashBudget);
  } catch (e) {
    if (e instanceof DecodeError && body.decompressed) {
      e.inDecompressedBody = true;
      e.message += " (offset in the decompressed body)";
    }
    throw e;
  }
}

/** Decodes one payload (plain, signed or compressed). Signed payloads need node:crypto here;
 * in a browser use decodeAsync. */
/** The input as bytes: a Uint8Array (a Node Buffer included), or an ArrayBuffer. */
export function asBytes(data: Uint8Array | ArrayBuffer): Uint8Array {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  throw new TypeError("amber decodes a Uint8Array or an ArrayBuffer");
}

export function decode(input: Uint8Array | ArrayBuffer, options: DecodeOptions = {}): unknown {
  const data = asBytes(input);
  checkOptions(options);
  if (data.length > 3 && data[0] === 0xab && data[1] === 0x41 && data[2] === 0x01 && !options.keys?.length) {
    // A plain payload (no envelope, no keys): straight to the body, which starts at byte 3.
    // Small payloads (cache entries, queue messages) would otherwise pay the envelope's
    // bookkeeping on every call.
    const maxAlloc = options.maxAlloc ?? defaultAllocBudget(data.length);
    return decodeBody(data, 3, data.length, 3, options, 0, maxAlloc, 16 * data.length + (1 << 20));
  }
  const keys = options.keys?.length ? resolveKeys(options.keys) : null;
  const sealed = readSealed(data, keys);
  if (sealed.signed) {
    const signedPart = data.subarray(0, sealed.contentEnd);
    signatureMatches(sealed, sealed.candidates.map((secret) => hmacSync(secret, signedPart)));
  }
  return decodeOpened(openSealed(sealed, options), options, data.length);
}

/** decode, verifying signatures with WebCrypto (browsers, workers, Node alike). */
export async function decodeAsync(input: Uint8Array | ArrayBuffer, options: DecodeOptions = {}): Promise<unknown> {
  const data = asBytes(input);
  checkOptions(options);
  const keys = options.keys?.length ? await resolveKeysAsync(options.keys) : null;
  const sealed = readSealed(data, keys);
  if (sealed.signed) {
    const signedPart = data.subarray(0, sealed.contentEnd);
    const macs: Uint8Array[] = [];
    for (const secret of sealed.candidates) macs.push(await hmacAsync(secret, signedPart));
    signatureMatches(sealed, macs);
  }
  return decodeOpened(openSealed(sealed, options), options, data.length);
}

/** Checks the signature and timestamp without decompressing or decoding; returns the
 * envelope's fields. */
export function verify(data: Uint8Array, options: EnvelopeOptions & { keys: NonNullable<EnvelopeOptions["keys"]> }) {
  const keys = resolveKeys(options.keys);
  const sealed = readSealed(data, keys);
  signatureMatches(sealed, sealed.candidates.map((secret) => hmacSync(secret, data.subarray(0, sealed.contentEnd))));
  return openSealedInfo(sealed, options);
}

function openSealedInfo(sealed: ReturnType<typeof readSealed>, options: EnvelopeOptions) {
  // The signature and the timestamp are checked; nothing is decompressed or decoded.
  return openSealed(sealed, options, false).info;
}
