// Unsigned LEB128 varints of at most 10 bytes, minimal (spec 2.3), and zigzag (spec 2.4).
// Values below 2^53 are returned as numbers; the rare larger ones as bigints, so that nothing
// on the hot path pays for BigInt arithmetic.

import { decodeError } from "./errors.js";

/** Why a varint could not be read; the caller turns it into its own error kind. */
export const enum VarintFailure { Truncated = 1, Overflow = 2, Overlong = 3 }

/** Result slot of `readVarint`: its value, and the position after it (or a failure). */
export class VarintReader {
  value: number | bigint = 0;
  end = 0;
  failure: VarintFailure | 0 = 0;

  /** Reads the varint at `pos`, stopping at `limit`. Returns false on failure. */
  read(buf: Uint8Array, pos: number, limit: number): boolean {
    const start = pos;
    let lo = 0; // bits 0..27
    let b: number;
    for (let shift = 0; shift < 28; shift += 7) {
      if (pos >= limit) return this.fail(VarintFailure.Truncated);
      b = buf[pos++];
      lo |= (b & 0x7f) << shift;
      if (b < 0x80) {
        if (b === 0 && pos - start > 1) return this.fail(VarintFailure.Overlong);
        this.value = lo >>> 0;
        this.end = pos;
        this.failure = 0;
        return true;
      }
    }
    // Five bytes or more: accumulate the high part as a float while it stays exact (< 2^53),
    // else as a bigint.
    let value = lo >>> 0;
    let scale = 268435456; // 2^28
    for (let i = 5; i <= 10; i++) {
      if (pos >= limit) return this.fail(VarintFailure.Truncated);
      b = buf[pos++];
      if (i === 10 && b > 0x01) return this.fail(VarintFailure.Overflow);
      value += (b & 0x7f) * scale;
      if (b < 0x80) {
        if (b === 0) return this.fail(VarintFailure.Overlong);
        this.end = pos;
        this.failure = 0;
        if (value <= Number.MAX_SAFE_INTEGER) {
          this.value = value;
        } else {
          this.value = exactBig(buf, start, pos);
        }
        return true;
      }
      scale *= 128;
    }
    return this.fail(VarintFailure.Overflow); // unreachable: a 10th byte <= 1 ends the loop
  }

  private fail(f: VarintFailure): false {
    this.failure = f;
    return false;
  }

  /** Throws the spec's error for the last failure, at the varint's first byte. */
  throwAt(offset: number): never {
    switch (this.failure) {
      case VarintFailure.Truncated: throw decodeError("truncated", offset);
      case VarintFailure.Overflow: throw decodeError("varint_overflow", offset);
      case VarintFailure.Overlong: throw decodeError("overlong_varint", offset);
      case 0: throw new Error("no varint failure to report");
    }
  }
}

function exactBig(buf: Uint8Array, start: number, end: number): bigint {
  let v = 0n;
  for (let i = end - 1; i >= start; i--) v = (v << 7n) | BigInt(buf[i] & 0x7f);
  return v;
}

/** Zigzag-decodes a varint value into a signed int (number when safe, else bigint). */
export function unzigzag(z: number | bigint): number | bigint {
  if (typeof z === "number") {
    // z < 2^53: (z >> 1) ^ -(z & 1) without 32-bit truncation.
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }
  const n = (z >> 1n) ^ -(z & 1n);
  return n >= -9007199254740991n && n <= 9007199254740991n ? Number(n) : n;
}

/** Zigzag code of a signed 64-bit int. */
export function zigzag(n: number | bigint): number | bigint {
  if (typeof n === "number") return n >= 0 ? n * 2 : -n * 2 - 1;
  return n >= 0n ? n << 1n : (-n << 1n) - 1n;
}

/** Byte length of the minimal varint of `v`. */
export function varintSize(v: number | bigint): number {
  let n = 1;
  if (typeof v === "number") {
    while (v >= 128) { v = Math.floor(v / 128); n++; }
    return n;
  }
  while (v >= 128n) { v >>= 7n; n++; }
  return n;
}
